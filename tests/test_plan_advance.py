"""`advance_once` on the fake cluster (plain data): what one step of a plan submits, leaves alone, settles
and cancels. The real cluster runs the same function in tests/test_plan_cluster.py."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.control.applier import applier_of
from streaming.control.ownership.plans import Plan
from streaming.control.ownership.records import EntryClaim, Move, Ownership
from streaming.control.ownership.store import MemoryLedger
from streaming.control.plans.scheduler import Limits
from streaming.control.plans.step import advance_once, still_throttled
from streaming.cluster.poller import poll
from streaming.vocabulary.errors import ClusterError, NotAuthorized
from tests.controller_support import Elsewhere
from tests.fake_cluster import FakeCluster
from streaming.vocabulary.states import OwnershipState, PlanState

PLAN_ID = "20261123T180000.000Z-abcd"


def setup(partitions=4, limits=Limits(2), state=PlanState.RUNNING, waves=()):
    fake = FakeCluster(partitions={("t", p): {"replicas": [1], "isr": [1], "leader": 1} for p in range(partitions)},
                       sizes={("t", p, 1): 1000 for p in range(partitions)})
    moves = tuple(Move("t", p, (1,), (2,)) for p in range(partitions))
    ledger = MemoryLedger.of(*waves)
    ledger.put_plan(Plan(PLAN_ID, state, 0, 0, limits, moves, throttle=5000))
    return fake, ledger


def writer(fake, ledger):
    """The one writer over the fake cluster and the in-memory ledger."""
    return applier_of(fake, ledger, readback_timeout_s=0.5)


def step(fake, ledger):
    return advance_once(fake, lambda topics: poll(fake, topics=topics, throttles=True), writer(fake, ledger), PLAN_ID,
                        10_000, 1.0)


def test_first_step_submits_up_to_the_limit_with_throttles_for_exactly_those():
    fake, ledger = setup()
    result = step(fake, ledger)
    assert result.submitted == (("t", 0), ("t", 1)) and fake.starts == [{("t", 0): [2], ("t", 1): [2]}]
    [wave] = ledger.records()
    assert wave.plan_id == PLAN_ID and wave.state == OwnershipState.STARTED and [m.partition for m in wave.moves] == [0, 1]
    assert {(c.partition, c.broker) for c in wave.entries} == {(0, 1), (1, 1), (0, 2), (1, 2)}
    assert fake.topics == {("t", "leader"): "0:1,1:1", ("t", "follower"): "0:2,1:2"}


def test_a_partition_someone_else_reassigns_is_left_alone_reported_and_counted_against_the_limit():
    fake, ledger = setup()
    fake.reassigning[("t", 1)] = ([3, 1], [3], [1])
    result = step(fake, ledger)
    assert result.left_alone == ((("t", 1), "reassigned by someone else (to 3)"),)
    assert fake.starts == [{("t", 0): [2]}]  # one slot of two: the foreign move holds the other


REFUSAL_CASES = [
    # id, error Kafka refuses t-1 with, its state after the step, submitted again at the next step
    ("a target broker not registered: failed", "InvalidReplicationAssignmentError", "failed", False),
    ("unknown to the controller: failed", "UnknownTopicOrPartitionError", "failed", False),
    ("reassigned by someone else meanwhile: pending again", "ReassignmentInProgressError", "pending", True),
]


@pytest.mark.parametrize("error, state, again", [case[1:] for case in REFUSAL_CASES],
                         ids=[case[0] for case in REFUSAL_CASES])
def test_a_refused_partition_is_failed_for_good_or_pending_again(error, state, again):
    fake, ledger = setup(partitions=2, limits=Limits(1))
    fake.refuse_moves[("t", 0)] = error
    result = step(fake, ledger)
    assert result.refused == ((("t", 0), error),) and result.states[("t", 0)] == state
    assert result.counts == ({"pending": 2} if state == "pending" else {"pending": 1, state: 1})
    [wave] = ledger.records()  # the refusal is recorded on the wave, so a restarted advancer decides the same
    assert [(r.topic, r.partition, r.error) for r in wave.refused] == [("t", 0, error)]
    del fake.refuse_moves[("t", 0)]
    result = step(fake, ledger)
    assert (("t", 0) in result.submitted) is again
    if not again:  # a failed partition never holds a slot: the next one goes
        assert result.submitted == (("t", 1),) and result.failed == ((("t", 0), f"refused by Kafka: {error}"),)


def test_failed_partitions_never_hold_the_plan_it_ends_done():
    fake, ledger = setup(partitions=3)
    fake.refuse_moves[("t", 2)] = "InvalidReplicationAssignmentError"
    del fake.partitions[("t", 1)]  # its topic's partition deleted before it was submitted
    fake.sizes.pop(("t", 1, 1))
    step(fake, ledger)
    fake.partitions[("t", 0)] = {"replicas": [2], "isr": [2], "leader": 2}
    result = step(fake, ledger)
    assert result.plan.state == PlanState.DONE and result.finished
    assert result.counts == {"done": 1, "failed": 2}
    assert {key for key, _ in result.failed} == {("t", 1), ("t", 2)}


def test_a_topic_hidden_from_the_principal_is_not_taken_for_deleted_the_step_stops_before_writing():
    fake, ledger = setup()
    fake.hidden.add("t")  # no Describe on it: a Metadata of every topic leaves it out, as Kafka does
    with pytest.raises(NotAuthorized, match="lacks Describe on Topic t"):
        step(fake, ledger)
    assert fake.starts == [] and ledger.records() == [] and ledger.plans()[0].state == PlanState.RUNNING


def test_a_wave_left_pending_by_a_killed_advancer_keeps_only_what_the_cluster_accepted():
    wave = Ownership("20261123T180001.000Z-0001", OwnershipState.PENDING, 1, 1, moves=(Move("t", 0, (1,), (2,)), Move("t", 1, (1,), (2,))),
                     plan_id=PLAN_ID)
    fake, ledger = setup(waves=(wave,))
    fake.reassigning[("t", 0)] = ([2, 1], [2], [1])  # accepted before the kill; t-1 was not
    result = step(fake, ledger)
    settled = next(r for r in ledger.records() if r.request_id == wave.request_id)
    assert settled.state == OwnershipState.STARTED and [m.partition for m in settled.moves] == [0]
    assert result.submitted == (("t", 1),)  # pending again, submitted once; t-0 never again


def test_paused_submits_nothing_and_done_when_nothing_is_left():
    fake, ledger = setup(state=PlanState.PAUSED)
    assert step(fake, ledger).submitted == () and fake.starts == []
    for p in range(4):
        fake.partitions[("t", p)] = {"replicas": [2], "isr": [2], "leader": 2}
    result = step(fake, ledger)
    assert result.plan.state == PlanState.DONE and result.finished and result.counts == {"done": 4}


def test_cancelled_cancels_what_is_in_flight_and_submits_nothing():
    fake, ledger = setup()
    step(fake, ledger)
    fake.reassigning.update({("t", 0): ([2, 1], [2], [1]), ("t", 1): ([2, 1], [2], [1])})
    ledger.put_plan(replace(ledger.plans()[0], state=PlanState.CANCELLED))
    result = step(fake, ledger)
    assert result.cancelled == (("t", 0), ("t", 1)) and fake.cancels == [[("t", 0), ("t", 1)]]
    assert len(fake.starts) == 1 and result.finished
    assert fake.topics == {("t", "leader"): "", ("t", "follower"): ""}  # the janitor took its entries out


def test_a_partition_finishing_after_the_sweep_keeps_its_slot_until_its_entries_go():
    """t-0 finished before the step (the sweep removes its entries), t-1 finishes between the sweep and the
    read the scheduler uses: its entries stay until the next step, so it holds its slot and the lists never
    name more partitions than the limit (docs/plans.md "What the throttled-replicas lists hold")."""
    fake, ledger = setup()
    step(fake, ledger)  # submits t-0 and t-1 (limit 2)
    fake.reassigning[("t", 1)] = ([2, 1], [2], [1])
    fake.partitions[("t", 0)] = {"replicas": [2], "isr": [2], "leader": 2}
    reads = []

    def read(topics):
        reads.append(topics)
        if len(reads) == 2:  # the read after the sweep: t-1 has just finished
            fake.reassigning.pop(("t", 1))
            fake.partitions[("t", 1)] = {"replicas": [2], "isr": [2], "leader": 2}
        return poll(fake, topics=topics, throttles=True)

    result = advance_once(fake, read, writer(fake, ledger), PLAN_ID, 20_000, 1.0)
    assert len(reads) == 2 and result.submitted == (("t", 2),)  # one slot: t-1's entries still hold the other
    assert fake.topics == {("t", "leader"): "1:1,2:1", ("t", "follower"): "1:2,2:2"}
    fake.reassigning[("t", 2)] = ([2, 1], [2], [1])
    result = step(fake, ledger)  # its sweep takes t-1's entries out; its slot is free again
    assert result.submitted == (("t", 3),)
    assert fake.topics == {("t", "leader"): "2:1,3:1", ("t", "follower"): "2:2,3:2"}


def test_a_wave_after_someone_else_swept_the_one_before_takes_no_rate_of_ours_for_a_prior():
    """The job's janitor, between the step's read and its sweep, removes the finished wave's throttles and marks it
    done: the ledger the next wave's claims are judged against is newer than the read. Judged against that read,
    the rates still shown look foreign and the new wave would record them as the prior to restore, leaving them
    set when it ends (seen on Kafka 2.8 in ZooKeeper mode, where broker configs show late). The step reads the
    cluster again when its ledger moved, so the wave records no prior and its end removes the rates."""
    fake, memory = setup(partitions=2, limits=Limits(1))
    ledger = Elsewhere(latest=memory.latest, plan_headers=memory.plan_headers)
    step(fake, ledger)  # wave 1: t-0
    fake.partitions[("t", 0)] = {"replicas": [2], "isr": [2], "leader": 2}
    fake.reassigning.clear()
    [first] = ledger.records()
    reads = []

    def read(topics):
        reads.append(topics)
        snapshot = poll(fake, topics=topics, throttles=True)
        if len(reads) == 1:  # the job's janitor, right after this read: wave 1's throttles gone, wave 1 done
            fake.topics.clear()
            fake.rates.clear()
            ledger.arrives(first.with_state(OwnershipState.DONE, 15_000), at_read=1)
        return snapshot

    result = advance_once(fake, read, writer(fake, ledger), PLAN_ID, 20_000, 1.0)
    assert result.submitted == (("t", 1),)
    [wave] = [r for r in ledger.records() if r.state != OwnershipState.DONE]
    assert wave.rates and all(claim.prior is None for claim in wave.rates), wave.rates
    fake.partitions[("t", 1)] = {"replicas": [2], "isr": [2], "leader": 2}
    fake.reassigning.clear()
    assert step(fake, ledger).plan.state == PlanState.DONE
    assert fake.rates == {} and not any(fake.topics.values())


@pytest.mark.parametrize("wave_state, reassigning, listed, counted", [
    (OwnershipState.STARTED, False, "0:2", True),
    (OwnershipState.STARTED, True, "0:2", False),  # still in flight: counted as reassigning, not twice
    (OwnershipState.STARTED, False, "", False),  # its entries are gone: the slot is free
    ("done", False, "0:2", False),  # the janitor settled the wave: an entry left is someone else's
], ids=["finished-still-listed", "still-reassigning", "entries-gone", "settled-wave"])
def test_still_throttled(wave_state, reassigning, listed, counted):
    wave = Ownership("w", wave_state, 1, 1, moves=(Move("t", 0, (1,), (2,)),), plan_id=PLAN_ID,
                     entries=(EntryClaim("t", "follower", 0, 2),))
    snapshot = {"reassignments": [{"topic": "t", "partition": 0}] if reassigning else [],
                "topic_throttles": [{"topic": "t", "kind": "follower", "value": listed}]}
    assert still_throttled([wave], snapshot) == ({("t", 0)} if counted else set())


# ---- moves between log dirs in a plan ----

MIXED = (Move("t", 0, (1,), (1,), ("/b",)),  # broker 1's replica into its log dir /b
         Move("t", 1, (1,), (2,), ("/b",)),  # to broker 2, created in its log dir /b
         Move("t", 2, (1,), (1,), ("/b",)),
         Move("t", 3, (1,), (2,)))


def setup_mixed(limits=Limits(2), waves=()):
    fake = FakeCluster(partitions={("t", p): {"replicas": [1], "isr": [1], "leader": 1} for p in range(4)},
                       sizes={("t", p, 1): 1000 for p in range(4)}, dirs={("t", p, 1): "/a" for p in range(4)})
    ledger = MemoryLedger.of(*waves)
    ledger.put_plan(Plan(PLAN_ID, PlanState.RUNNING, 0, 0, limits, MIXED, throttle=5000, log_dir_throttle=3000))
    return fake, ledger


def reassigned(fake, p, log_dir):
    """t-p's reassignment to broker 2 completed, its new replica created in `log_dir`."""
    fake.reassigning.pop(("t", p), None)
    fake.partitions[("t", p)] = {"replicas": [2], "isr": [2], "leader": 2}
    fake.sizes.pop(("t", p, 1))
    fake.sizes[("t", p, 2)], fake.dirs[("t", p, 2)] = 1000, log_dir


def test_a_plan_counts_moves_between_log_dirs_against_its_limit_until_every_replica_is_in_its_dir():
    fake, ledger = setup_mixed()
    result = step(fake, ledger)
    assert result.submitted == (("t", 0), ("t", 1))
    assert fake.dir_moves[0] == {("t", 1, 2): "/b"}  # the new replica's dir, before its reassignment
    assert fake.futures == {("t", 0, 1): "/b"}  # the move between log dirs started by the wave
    [wave] = ledger.records()
    assert {(c.broker, c.kind, c.rate) for c in wave.rates} >= {(1, "alter_log_dirs", 3000), (2, "alter_log_dirs", 3000)}
    assert wave.moves[0].log_dirs == ("/b",)
    fake.reassigning[("t", 1)] = ([2, 1], [2], [1])
    assert step(fake, ledger).submitted == ()  # t-0 copies between dirs, t-1 reassigns: both slots held
    reassigned(fake, 1, "/b")
    result = step(fake, ledger)
    assert result.states[("t", 1)] == "done" and result.submitted == (("t", 2),)  # t-0's future log holds a slot
    fake.finish_dir_moves()
    result = step(fake, ledger)
    assert result.submitted == (("t", 3),) and result.states[("t", 0)] == result.states[("t", 2)] == "done"
    reassigned(fake, 3, "/a")
    result = step(fake, ledger)
    assert result.plan.state == PlanState.DONE and result.counts == {"done": 4}
    assert fake.rates == {} and fake.topics == {("t", "leader"): "", ("t", "follower"): ""}


def test_a_future_log_someone_else_started_holds_a_slot():
    fake, ledger = setup_mixed()
    fake.partitions[("u", 0)] = {"replicas": [3], "isr": [3], "leader": 3}
    fake.sizes[("u", 0, 3)], fake.futures[("u", 0, 3)] = 5000, "/b"
    assert step(fake, ledger).submitted == (("t", 0),)


def test_a_new_replica_created_outside_its_dir_is_moved_into_it():
    fake, ledger = setup_mixed(limits=Limits(1))
    fake.dirs[("t", 0, 1)] = "/b"  # t-0 is in its dir already: done, never submitted
    assert step(fake, ledger).submitted == (("t", 1),)
    reassigned(fake, 1, "/a")  # the broker did not honour the dir it was sent
    result = step(fake, ledger)
    assert result.states[("t", 1)] == "in_flight" and fake.futures == {("t", 1, 2): "/b"}
    assert result.submitted == ()  # its copy between dirs holds the one slot


def test_a_wave_whose_move_between_dirs_never_started_is_started_by_the_next_step():
    """The advancer stopped after the reassignment and before AlterReplicaLogDirs."""
    wave = Ownership("20261123T180001.000Z-0001", OwnershipState.STARTED, 1, 1, moves=MIXED[:1], plan_id=PLAN_ID)
    fake, ledger = setup_mixed(limits=Limits(1), waves=(wave,))
    result = step(fake, ledger)
    assert result.states[("t", 0)] == "in_flight" and result.submitted == ()
    assert fake.futures == {("t", 0, 1): "/b"}


def test_a_cancelled_plan_lets_a_copy_between_dirs_finish_and_counts_one_never_started_cancelled():
    fake, ledger = setup_mixed()
    step(fake, ledger)  # t-0 copies between dirs, t-1 submitted
    fake.futures.clear()  # t-0's copy was stopped (its dir went offline)
    fake.partitions[("t", 1)] = {"replicas": [2], "isr": [2], "leader": 2}
    fake.sizes[("t", 1, 2)], fake.dirs[("t", 1, 2)], fake.futures[("t", 1, 2)] = 1000, "/a", "/b"
    ledger.put_plan(replace(ledger.plans()[0], state=PlanState.CANCELLED))
    result = step(fake, ledger)
    assert result.cancelled == (("t", 0),) and result.counts["in_flight"] == 1 and not result.finished
    fake.finish_dir_moves()
    result = step(fake, ledger)
    assert result.finished and result.states[("t", 1)] == "done"
    assert len(fake.starts) == 1 and fake.futures == {}


def test_a_plan_naming_log_dirs_is_not_stepped_without_every_brokers_log_dirs():
    fake, ledger = setup_mixed()
    fake.fail["describe_log_dirs"] = RuntimeError("broker 2 did not answer")
    with pytest.raises(ClusterError, match="DescribeLogDirs of broker 1 missing"):
        step(fake, ledger)
    assert fake.starts == [] and ledger.records() == []


@settings(max_examples=25, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=6), st.integers(1, 3), st.randoms(use_true_random=False))
def test_a_plan_mixing_moves_between_log_dirs_and_brokers_never_exceeds_its_limit_and_ends_where_asked(
        between_dirs, limit, rng):
    """Each partition of topic t sits on broker 1 in /a and moves either into /b of broker 1 or to broker 2; after
    every step Kafka ends some of what moves. What the cluster shows moving never passes the limit, and the plan
    ends done with every partition on its brokers, in its dirs, within a step per partition and one more."""
    n = len(between_dirs)
    moves = tuple(Move("t", p, (1,), (1,), ("/b",)) if d else Move("t", p, (1,), (2,)) for p, d in enumerate(between_dirs))
    fake = FakeCluster(partitions={("t", p): {"replicas": [1], "isr": [1], "leader": 1} for p in range(n)},
                       sizes={("t", p, 1): 1000 for p in range(n)}, dirs={("t", p, 1): "/a" for p in range(n)})
    ledger = MemoryLedger.of()
    ledger.put_plan(Plan(PLAN_ID, PlanState.RUNNING, 0, 0, Limits(limit), moves, throttle=5000, log_dir_throttle=3000))
    for _ in range(n + 2):
        started = len(fake.starts)
        result = step(fake, ledger)
        for targets in fake.starts[started:]:
            for key, target in targets.items():
                if target == [2]:
                    fake.reassigning[key] = ([2, 1], [2], [1])
        assert len(set(fake.reassigning) | {(t, p) for t, p, _ in fake.futures}) <= limit
        if result.finished:
            break
        moving = sorted(fake.reassigning) + (["future logs"] if fake.futures else [])
        for ending in rng.sample(moving, rng.randint(1, len(moving))) if moving else ():  # at least one ends
            if ending == "future logs":
                fake.finish_dir_moves()
            else:
                reassigned(fake, ending[1], "/a")
    assert result.plan.state == PlanState.DONE and result.counts == {"done": n}
    assert all(fake.dirs[("t", m.partition, 1)] == "/b" if m.log_dirs else ("t", m.partition, 2) in fake.sizes
               for m in moves)
    assert fake.rates == {}


# ---- property: failed partitions never hold a plan ----

FATES = ("moves", "deleted_before", "deleted_in_flight", "refused_for_good", "refused_once")
FAILS = {"deleted_before", "deleted_in_flight", "refused_for_good"}


def _delete_topic(fake, topic):
    for table in (fake.partitions, fake.reassigning):
        for key in [k for k in table if k[0] == topic]:
            del table[key]
    for key in [k for k in fake.sizes if k[0] == topic]:
        del fake.sizes[key]
    for key in [k for k in fake.topics if k[0] == topic]:
        del fake.topics[key]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(FATES), min_size=1, max_size=6), st.integers(1, 3))
def test_a_plan_ends_done_whatever_fails_and_never_submits_a_failed_partition_again(fates, in_flight):
    """One topic per partition (a deleted topic is unknown by name); each partition's fate applied as the
    steps go; every submitted one that is not deleted completes before the next step."""
    fake = FakeCluster(partitions={(f"t{p}", 0): {"replicas": [1], "isr": [1], "leader": 1} for p in range(len(fates))},
                       sizes={(f"t{p}", 0, 1): 1000 for p in range(len(fates))})
    ledger = MemoryLedger()
    ledger.put_plan(Plan(PLAN_ID, PlanState.RUNNING, 0, 0, Limits(in_flight),
                         tuple(Move(f"t{p}", 0, (1,), (2,)) for p in range(len(fates))), throttle=5000))
    fate_of = {(f"t{p}", 0): fate for p, fate in enumerate(fates)}
    for key, fate in fate_of.items():
        if fate == "deleted_before":
            _delete_topic(fake, key[0])
        elif fate == "refused_for_good":
            fake.refuse_moves[key] = "InvalidReplicationAssignmentError"
        elif fate == "refused_once":
            fake.refuse_moves[key] = "ReassignmentInProgressError"
    failed_at = {}
    for number in range(2 * len(fates) + 3):
        result = advance_once(fake, lambda topics: poll(fake, topics=topics, throttles=True), writer(fake, ledger),
                              PLAN_ID, 10_000 + number, 1.0)
        assert not set(result.submitted) & set(failed_at), "a failed partition was submitted again"
        failed_at.update({key: number for key, _ in result.failed})
        for key, _ in result.refused:
            if fate_of[key] == "refused_once":
                del fake.refuse_moves[key]
        for key in result.submitted:
            if fate_of[key] == "deleted_in_flight":
                _delete_topic(fake, key[0])
            else:
                fake.partitions[key] = {"replicas": [2], "isr": [2], "leader": 2}
        if result.finished:
            break
    assert result.plan.state == PlanState.DONE and result.finished, result.counts
    assert {key for key, state in result.states.items() if state == "failed"} == \
        {key for key, fate in fate_of.items() if fate in FAILS}
    assert result.counts == {state: n for state, n in
                             (("done", sum(f not in FAILS for f in fates)), ("failed", sum(f in FAILS for f in fates)))
                             if n}
