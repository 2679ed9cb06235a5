"""The job's controller: its batch and liveness rules as tables of cases, its gate file, and its ticks on the one
admin fake with an in-memory ledger (tests/controller_support.py)."""

import json
import threading
from dataclasses import replace

import pytest

from sinks.metric_names import CLUSTER_UP, LAST_POLL, POLL_ERRORS, THROTTLE_ACTIONS
from streaming.control import batch_rules as rules
from streaming.control import gate
from streaming.control.batch_rules import BatchView
from streaming.control.controller import LOG_PREFIX, SLOW_TICK_LINE, WRITE_BOUND_S
from streaming.control.ownership.records import Move, Refusal
from streaming.control.ownership.store import MemoryLedger
from streaming.control.duties.adoption import QUIET_VIEW_S, Adoption
from streaming.control.duties.looks import SLOW_LOOK_LINE, Looks
from streaming.control.rounds import QUIET_TICK_S, TICK_INTERVAL_S, Round
from streaming.vocabulary.defaults import REQUEST_DEADLINE_S
from streaming.vocabulary.errors import AuthenticationFailed, NotAuthorized, TlsFailed, Unreachable
from streaming.vocabulary.kafka_apis import READ
from streaming.vocabulary.snapshot import Snapshot
from tests.controller_support import CLUSTER_NAME, Clock, Elsewhere, Writer, a_controller, findings, sample
from tests.fake_cluster import FakeCluster
from tests.test_janitor import request, throttled
from tests.test_throttle_observe import foreign_throttled_move
from streaming.control.ownership.records import Origin
from streaming.vocabulary.states import OwnershipState
from streaming.vocabulary.throttle_actions import Policy

T0 = frozenset({("t", 0)})
IDLE = dict(listed=True, batches_done=1)


@pytest.mark.parametrize("view, reason", [
    (BatchView(**IDLE), None),
    (BatchView(listed=False, batches_done=1), "controller_blind"),
    (BatchView(listed=True, batches_done=0), "first_batch"),
    (BatchView(**IDLE, reassigning=T0), "reassigning"),
    (BatchView(**IDLE, unreported=True), "unreported"),
    (BatchView(**IDLE, tracks_moves=True), "tracked_in_state"),
    (BatchView(**IDLE, owned=T0), "owned_throttles"),
    (BatchView(**IDLE, owned_unread=True), "ownership_unread"),
    (BatchView(**IDLE, throttles_to_clear=True), "throttles_to_clear"),
    (BatchView(**IDLE, active_plans=1), "plans_active"),
    # order: the first rule that holds names the reason
    (BatchView(listed=False, batches_done=0, reassigning=T0), "controller_blind"),
    (BatchView(**IDLE, reassigning=T0, tracks_moves=True, owned=T0), "reassigning"),
    (BatchView(**IDLE, tracks_moves=True, owned=T0), "tracked_in_state"),
], ids=["idle", "blind", "first-batch", "reassigning", "unreported", "tracked", "owned", "unread", "clear-all", "plans", "blind-first",
        "reassigning-first", "tracked-before-owned"])
def test_batch_reason(view, reason):
    assert rules.batch_reason(view) == reason


@pytest.mark.parametrize("before, now, owned, left", [
    ({("t", 0), ("t", 1)}, {("t", 1)}, {("t", 0)}, {("t", 0)}),
    ({("t", 0)}, {("t", 0)}, {("t", 0)}, set()),
    ({("u", 0)}, set(), {("t", 0)}, set()),  # a foreign move finishing is the batch's business
    (set(), set(), {("t", 0)}, set()),  # never seen moving: the first tick's sweep covers it
], ids=["owned-left", "still-moving", "foreign-left", "never-seen"])
def test_partitions_left(before, now, owned, left):
    assert rules.partitions_left(before, now, owned) == left


@pytest.mark.parametrize("accepted_before, accepted_now, newly", [
    ({}, {("t", 0): "m"}, {("t", 0): "m"}),  # accepted since the read before
    ({("t", 0): "m"}, {("t", 0): "m"}, {}),  # known since an earlier read: noted then
    ({("t", 0): "m"}, {}, {}),  # settled since
    ({("t", 0): "m"}, {("t", 0): "m", ("t", 1): "n"}, {("t", 1): "n"}),
], ids=["accepted", "known", "settled", "one-more"])
def test_newly_accepted(accepted_before, accepted_now, newly):
    assert rules.newly_accepted(accepted_before, accepted_now) == newly


@pytest.mark.parametrize("accepted, before, now, unseen", [
    ({("t", 0)}, set(), set(), {("t", 0)}),  # accepted, and neither listed at the last tick nor now
    ({("t", 0)}, set(), {("t", 0)}, set()),  # listed now: it leaves the list later, seen
    ({("t", 0)}, {("t", 0)}, set(), set()),  # listed at the last tick: partitions_left has it
    (set(), set(), set(), set()),  # nothing accepted since the last tick looked
], ids=["came-and-went", "listed-now", "listed-before", "none-new"])
def test_ended_unseen(accepted, before, now, unseen):
    assert rules.ended_unseen(accepted, before, now) == unseen


@pytest.mark.parametrize("listed, wanted, waiting_since, now, late, writing_since, publishes", [
    (True, False, 0.0, 1000.0, 30.0, None, True),  # idle: the controller is the liveness
    (True, True, 990.0, 1000.0, 30.0, None, True),  # a batch wanted, not yet late
    (True, True, 960.0, 1000.0, 30.0, None, False),  # a batch late: liveness stops, MonitorDown can fire
    (False, False, 0.0, 1000.0, 30.0, None, False),  # the controller's poll failed
    (True, True, 980.0, 1000.0, 6.0, 988.0, True),  # late, but held by its durable write (a broker being fenced)
    (True, True, 960.0, 1000.0, 6.0, 975.0, False),  # written for longer than the write may take: late again
    (False, True, 990.0, 1000.0, 6.0, 995.0, False),  # held by its write, but the controller's own poll failed
], ids=["idle", "waiting", "late", "failed", "held-by-write", "write-overdue", "held-but-failed"])
def test_publishes_liveness(listed, wanted, waiting_since, now, late, writing_since, publishes):
    assert rules.publishes_liveness(listed, wanted, waiting_since, now, late, writing_since, 20.0) is publishes


def test_late_after_allows_spark_start_before_the_first_batch():
    lapses_s = rules.LATE_AFTER_LAPSES * REQUEST_DEADLINE_S  # a batch may wait out two lapses
    assert rules.late_after_s(10.0, 1) == 30.0 + lapses_s
    assert rules.late_after_s(10.0, 0) == 30.0 + lapses_s + rules.SPARK_START_ALLOWANCE_S


@pytest.mark.parametrize("content, now_ms, wanted", [
    (None, 1000, True),  # no gate: every trigger is a batch
    ('{"reason": null, "ts_ms": 1000}', 2000, False),
    ('{"reason": "reassigning", "ts_ms": 1000}', 2000, True),
    ('{"reason": null, "ts_ms": 1000}', 1000 + gate.STALE_AFTER_MS + 1, True),  # the controller stopped: fail open
    ('{"reason": nul', 2000, True),
    ('[]', 2000, True),
], ids=["missing", "idle", "wanted", "stale", "garbled", "wrong-shape"])
def test_gate_fails_open(tmp_path, content, now_ms, wanted):
    path = tmp_path / "gate.json"
    if content is not None:
        path.write_text(content)
    assert gate.read(str(path), now_ms) == gate.Decision(wanted=wanted)


MOVED = {"topic": "t", "partition": 0, "replicas": [2, 1], "adding": [2], "removing": [1]}


def test_gate_round_trip(tmp_path):
    path = str(tmp_path / "gate.json")
    gate.write(path, None, 5000)
    assert gate.read(path, 5001) == gate.Decision(wanted=False)
    gate.write(path, "unreported", 6000, [MOVED])
    assert gate.read(path, 6001) == gate.Decision(wanted=True, unreported=(MOVED,))
    assert gate.read(path, 6000 + gate.STALE_AFTER_MS + 1) == gate.Decision(wanted=True)  # stale: none handed over
    gate.write(path, "reassigning", 7000, listed=[MOVED])  # Kafka's controller answers nobody: the last list
    assert gate.read(path, 7001) == gate.Decision(wanted=True, listed=(MOVED,))
    assert gate.read(path, 7000 + gate.STALE_AFTER_MS + 1) == gate.Decision(wanted=True)
    gate.write(path, "reassigning", 8000, unanswered={3: 7500, 1: 7900})  # the door's unresponsive brokers
    assert gate.read(path, 8001) == gate.Decision(wanted=True, unanswered=((1, 7900), (3, 7500)))
    assert gate.read(path, 8000 + gate.STALE_AFTER_MS + 1) == gate.Decision(wanted=True)


def test_the_brokers_the_door_holds_as_unresponsive_go_to_the_batches(tmp_path):
    path = str(tmp_path / "gate.json")
    cluster = FakeCluster(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1}},
                          reassigning={("t", 0): ([2, 1], [2])})
    cluster.unanswered = {2: 1795665700123}
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.tick()
    assert gate.read(path, clock.now * 1000).unanswered == ((2, 1795665700123),)


class SilentKafkaController(FakeCluster):
    """The door's answer while Kafka's controller answers nobody: the last list, and that it is the last one."""

    def listed_or_last(self):
        return self.list_reassignments(), True


def test_the_last_list_goes_to_the_batches_while_kafkas_controller_is_silent(tmp_path):
    path = str(tmp_path / "gate.json")
    cluster = SilentKafkaController(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1}},
                                    reassigning={("t", 0): ([2, 1], [2])})
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.tick()
    listed = gate.read(path, clock.now * 1000).listed
    assert [(r["topic"], r["partition"], r["adding"]) for r in listed] == [("t", 0, [2])]
    a_controller_on(tmp_path, FakeCluster())[0].tick()  # Kafka's controller answers: no list handed over
    assert gate.read(path, clock.now * 1000).listed is None



def a_controller_on(tmp_path, cluster, ledger=None, writer=None, trigger_s=10.0, **policy):
    return a_controller(cluster, ledger, gate_dir=tmp_path, writer=writer, trigger_s=trigger_s, **policy)


def batch(*states, batch_id=7, partition=("t", 0)):
    """A batch's findings as the controller reads them: one replica of `partition` per state; its poll taken long
    ago (ts 0), so it shows no throttles and changes no view."""
    return findings(Snapshot(ts_ms=0, cluster_id="fake"), batch_id,
                    tracks_moves=any(s not in ("COMPLETED", "CANCELLED") for s in states),
                    reported=[partition] if states else [])


def test_idle_after_the_first_batch_and_liveness_advances(tmp_path):
    controller, metrics, clock = a_controller_on(tmp_path, FakeCluster())
    assert controller.tick() == "first_batch"
    assert sample(metrics, LAST_POLL) == 1000.0  # before Spark's first batch, within its start allowance
    controller.hand_over(batch())
    clock.now += 1
    assert controller.tick() is None
    assert not gate.read(controller.gate_path, clock.now * 1000).wanted
    assert sample(metrics, LAST_POLL) == 1001.0


def test_the_first_published_poll_comes_after_the_first_look():
    """The first tick lists the moves and reads the throttle baseline adoption compares against, before it
    publishes liveness: a job that says it is up has looked."""
    order = []

    class Watched(FakeCluster):
        def describe_throttles(self, topics, brokers):
            order.append("baseline")
            return super().describe_throttles(topics, brokers)

    controller, metrics, _ = a_controller(Watched())
    controller.metrics.snapshot.touch = lambda poll_s: order.append("published")
    controller.tick()
    assert order == ["baseline", "published"]
    assert len(controller.duties.adoption.history.views) == 1


def test_a_failed_list_counts_as_a_poll_error_and_asks_for_a_batch(tmp_path):
    cluster = FakeCluster(fail={"list_reassignments": RuntimeError("broker gone")})
    controller, metrics, clock = a_controller_on(tmp_path, cluster)
    controller.hand_over(batch())
    assert controller.tick() == "controller_blind"
    assert sample(metrics, POLL_ERRORS, api="ListPartitionReassignments") == 1.0
    assert sample(metrics, LAST_POLL) is None


CLUSTER_UP_CASES = [
    # id, what the tick's list raises (None: it answers), the reason, the value of kafka_reassignment_cluster_up
    ("answers", None, "polled", 1.0),
    ("unreachable", Unreachable("no broker answered within 10 s"), "unreachable", 0.0),
    ("credentials-refused", AuthenticationFailed("SASL authentication failed"), "authentication", 0.0),
    ("tls", TlsFailed("certificate verify failed"), "tls", 0.0),
    ("acl", NotAuthorized("ClusterAuthorizationFailedError"), "authorization", 0.0),
    ("bug", KeyError("endpoint_type"), "bug", 0.0),
]


@pytest.mark.parametrize("error, reason, up", [pytest.param(e, r, u, id=i) for i, e, r, u in CLUSTER_UP_CASES])
def test_each_look_says_whether_the_cluster_is_polled_and_why_not(tmp_path, error, reason, up):
    def series():
        return [(s.labels, s.value) for family in metrics.registry.collect() for s in family.samples
                if s.name == CLUSTER_UP.name]

    cluster = FakeCluster(fail={"list_reassignments": error} if error is not None else {})
    controller, metrics, _ = a_controller_on(tmp_path, cluster)
    assert series() == []  # nothing said before the first look
    controller.tick()
    assert series() == [({"cluster": CLUSTER_NAME, "reason": reason}, up)]  # one series: the last look's
    cluster.fail.clear()
    controller.tick()
    assert series() == [({"cluster": CLUSTER_NAME, "reason": "polled"}, 1.0)]


def test_the_door_s_last_list_while_kafka_s_controller_is_silent_is_no_answer(tmp_path):
    class Silent(FakeCluster):
        def listed_or_last(self):
            return self.list_reassignments(), True  # the door's last list: the controller answered nobody

    controller, metrics, _ = a_controller_on(tmp_path, Silent())
    controller.tick()
    assert sample(metrics, CLUSTER_UP, reason="unreachable") == 0.0


def test_batches_run_until_the_transition_after_a_move_left_is_reported(tmp_path):
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.hand_over(batch("COPYING"))
    assert controller.tick() == "reassigning"
    del cluster.reassigning[("t", 0)]
    assert controller.tick() == "tracked_in_state"  # the batch that reports COMPLETED must still run
    controller.hand_over(batch("COMPLETED"))
    assert controller.tick() is None


def test_a_listed_move_is_handed_to_every_batch_until_one_reported_it(tmp_path):
    """A batch that first sees a move may write its record and die before the checkpoint commits it;
    its replay polls afresh, and the move may have ended meanwhile. The move rides in the end offset of every batch
    planned while no batch has reported it, so the replay reports how it ended (never left COPYING)."""
    cluster = FakeCluster()
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.hand_over(batch())
    controller.tick()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,), (1,))
    assert controller.tick() == "reassigning"
    assert gate.read(controller.gate_path, clock.now * 1000).unreported == (MOVED,)  # listed, not reported yet
    controller.hand_over(batch("COPYING"))
    controller.tick()
    assert gate.read(controller.gate_path, clock.now * 1000).unreported == ()


def idle_with_a_move_unseen(tmp_path):
    """(controller, cluster, ledger, clock): an idle controller, then a request `execute` wrote whose move came and went
    between two of its looks."""
    cluster, ledger = throttled(), MemoryLedger()
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger, trigger_s=10.0)
    controller.tick()
    controller.hand_over(batch())
    clock.now += 1
    assert controller.tick() is None
    ledger.put(request())
    return controller, cluster, ledger, clock


def test_an_idle_controller_reads_the_ledger_once_a_trigger(tmp_path):
    """A request whose move started and completed between two ticks was never listed: the idle controller still
    finds its record within a trigger interval, removes its throttles then and hands the move to the next batch."""
    controller, cluster, ledger, clock = idle_with_a_move_unseen(tmp_path)
    clock.now += 1
    assert controller.tick() is None  # read once a trigger while idle: not yet
    clock.now += 10
    assert controller.tick() == "unreported"
    assert cluster.topics[("t", "follower")] == ""  # swept by the controller, not left for a batch
    assert [r.state for r in ledger.records()] == [OwnershipState.DONE]
    assert gate.read(controller.gate_path, clock.now * 1000).unreported == (MOVED,)
    controller.hand_over(batch("COMPLETED"))
    assert controller.tick() is None


@pytest.mark.parametrize("arrivals, handed", [
    # (what the ledger holds at each read after the first, as (state, refused partitions)); the move of t-0
    ([(OwnershipState.STARTED, ())], [MOVED]),
    ([(OwnershipState.PENDING, ()), (OwnershipState.STARTED, ())], [MOVED]),  # accepted after the controller first read it pending
    ([(OwnershipState.STARTED, (("t", 0),))], []),  # Kafka refused it: it never ran
    ([(OwnershipState.PENDING, ())], []),  # not accepted (yet): execute may still be setting its throttles
], ids=["accepted-unseen", "pending-then-accepted", "refused", "pending"])
def test_a_move_of_ours_that_came_and_went_unseen_is_handed_over(tmp_path, arrivals, handed):
    cluster, ledger = throttled(), MemoryLedger()
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger, trigger_s=1.0)
    controller.tick()
    controller.hand_over(batch())
    for state, refused in arrivals:
        ledger.put(replace(request(state=state), refused=tuple(Refusal(t, p, "INVALID_REPLICA_ASSIGNMENT")
                                                               for t, p in refused)))
        clock.now += 1
        controller.tick()
    assert list(gate.read(controller.gate_path, clock.now * 1000).unreported) == handed


def handed(controller, clock):
    return {(m["topic"], m["partition"]) for m in gate.read(controller.gate_path, clock.now * 1000).unreported}


@pytest.mark.parametrize("at_read", [1, 2, 3, 4],
                         ids=["the-ticks-read", "a-batchs-janitor", "the-sweeps-read", "the-read-after-the-sweep"])
def test_a_request_first_read_by_any_duty_is_handed_over_when_its_move_came_and_went(tmp_path, at_read):
    """The tick another owned move (t-1) left the list, a batch's findings are acted on, the janitor sweeps and the
    ledger is read again after it: four reads, in that order. Whichever of them first shows a request whose move
    (t-0) started and ended between two looks, the move is handed over and its throttles removed."""
    cluster, ledger = throttled(), Elsewhere()
    cluster.reassigning[("t", 1)] = ((2, 1), (2,))
    ledger.put(replace(request("R0"), moves=(Move("t", 1, (1,), (2,)),), entries=(), rates=()))
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger, trigger_s=1.0)
    controller.tick()
    controller.hand_over(batch())
    del cluster.reassigning[("t", 1)]
    ledger.arrives(request("R1"), at_read)
    controller.hand_over(batch())
    clock.now += 1
    controller.tick()
    clock.now += 1
    assert controller.tick() == "unreported"
    assert ("t", 0) in handed(controller, clock)
    assert cluster.topics[("t", "follower")] == "" and cluster.topics[("t", "leader")] == "3:3"
    assert {r.request_id: r.state for r in ledger.records()}["R1"] == OwnershipState.DONE


def test_a_request_first_read_by_adoptions_look_is_handed_over_when_its_move_came_and_went(tmp_path):
    """Idle, the controller reads the ledger once a trigger and takes adoption's view of the cluster once a trigger,
    each on its own clock; a batch's poll is a view too, so after a batch the two fall due on different ticks, and
    the look reads the ledger itself (adoption must know every request of ours first). A request that look showed
    first, its move over, is still handed over and its throttles removed (a 50 KB move under `execute` did this in
    tests/test_job_janitor_watch_cluster.py: the decision stayed `owned_throttles`, nothing was swept)."""
    cluster, ledger = throttled(), MemoryLedger()
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger, trigger_s=10.0)
    controller.tick()  # the first look: ledger read, view taken
    clock.now += 5
    controller.hand_over(findings(cluster.snapshot(), 7))  # its poll is adoption's next view
    assert controller.tick() is None
    clock.now += 5
    assert controller.tick() is None  # the ledger read falls due; the view does not
    ledger.put(request())  # execute wrote it; its move came and went
    clock.now += 5
    assert controller.tick() == "unreported"  # the view falls due; the ledger read does not
    assert handed(controller, clock) == {("t", 0)}
    assert cluster.topics[("t", "follower")] == ""
    assert [r.state for r in ledger.records()] == [OwnershipState.DONE]


def test_requests_active_at_start_are_swept_not_handed_over(tmp_path):
    """At start every active request is new to the controller: the start's sweep removes what came due while the
    job was down, and whether their moves were reported is the checkpoint's business (the run before)."""
    cluster, ledger = throttled(), MemoryLedger.of(request())
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger)
    assert controller.tick() == "first_batch"
    assert [r.state for r in ledger.records()] == [OwnershipState.DONE]
    assert gate.read(controller.gate_path, clock.now * 1000).unreported == ()


def test_a_move_that_ended_before_any_batch_polled_it_is_handed_to_the_next_batch(tmp_path):
    """A move shorter than the wait for a batch (an idle job's first batch starts Spark's Python
    workers again) is still reported: the controller hands it over until a batch reported it."""
    cluster = FakeCluster()
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.hand_over(batch())
    assert controller.tick() is None
    cluster.reassigning[("t", 0)] = ((2, 1), (2,), (1,))
    assert controller.tick() == "reassigning"
    del cluster.reassigning[("t", 0)]
    assert controller.tick() == "unreported"
    assert gate.read(controller.gate_path, clock.now * 1000).unreported == (MOVED,)
    controller.hand_over(batch(partition=("u", 0)))  # a batch that polled before the move: still handed over
    assert controller.tick() == "unreported"
    controller.hand_over(batch("COMPLETED"))
    assert controller.tick() is None
    assert gate.read(controller.gate_path, clock.now * 1000) == gate.Decision(wanted=False)


def test_moves_no_batch_reported_are_handed_over_a_limited_number_per_batch(tmp_path, monkeypatch):
    monkeypatch.setattr("streaming.control.duties.liveness.HANDOVER_LIMIT", 1)
    cluster = FakeCluster()
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.hand_over(batch())
    cluster.reassigning.update({("t", 0): ((2, 1), (2,)), ("t", 1): ((2, 1), (2,))})
    controller.tick()
    cluster.reassigning.clear()
    handed = []
    while controller.tick() == "unreported":
        [move] = gate.read(controller.gate_path, clock.now * 1000).unreported
        handed.append((move["topic"], move["partition"]))
        controller.hand_over(batch("COMPLETED", partition=handed[-1]))
    assert handed == [("t", 0), ("t", 1)]


@pytest.mark.parametrize("reassignment", [((2, 1), (2,), (1,)), ((2, 1), (), (1,))],
                         ids=["reported-while-listed", "adds-no-replica"])
def test_a_move_a_batch_reported_or_with_no_replica_to_add_is_not_handed_over(tmp_path, reassignment):
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = reassignment
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.tick()
    controller.hand_over(batch(*(["COPYING"] if reassignment[1] else [])))  # a move adding none has no replica row
    controller.tick()
    del cluster.reassigning[("t", 0)]
    controller.tick()
    assert gate.read(controller.gate_path, clock.now * 1000).unreported == ()


def test_liveness_stops_when_a_wanted_batch_is_late(tmp_path):
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    controller, metrics, clock = a_controller_on(tmp_path, cluster, trigger_s=2.0)
    controller.hand_over(batch("COPYING"))
    controller.tick()
    clock.now += rules.late_after_s(2.0, 1) + 1  # three triggers and two lapses without a batch, and more
    controller.tick()
    assert sample(metrics, LAST_POLL) == 1000.0


@pytest.mark.parametrize("list_s, deferred_last_tick, defers", [
    (0.01, False, False),  # a list answered in time: the tick does everything
    (2.49, False, False),
    (2.5, False, True),    # it waited out the request deadline: the rest goes to the next tick
    (2.6, True, False),    # ... but never twice in a row
])
def test_one_wait_per_tick(list_s, deferred_last_tick, defers):
    assert rules.defers_the_rest(list_s, 2.5, deferred_last_tick) is defers


class LedgerReads(MemoryLedger):
    def __init__(self):
        super().__init__()
        self.reads = 0

    def refresh(self):
        self.reads += 1
        return super().refresh()


def test_a_tick_whose_list_waited_out_a_deadline_leaves_the_rest_to_the_next_tick(tmp_path):
    """Kafka's active controller stopped, and it leads the ownership topic too. The list lapses; reading
    the ledger in the same tick would lapse again (two deadlines in one tick: published polls 6.1 s apart at a 2 s
    trigger). The ledger read and the batch's findings wait for the next tick, which runs them."""
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    ledger = LedgerReads()
    controller, metrics, clock = a_controller_on(tmp_path, cluster, ledger, trigger_s=2.0)
    controller.tick()
    reads = ledger.reads
    original = cluster.list_reassignments

    def lapsing_list():
        clock.now += 2.6
        return original()
    cluster.list_reassignments = lapsing_list
    controller.hand_over(batch("COPYING"))
    controller.tick()
    assert ledger.reads == reads and sample(metrics, LAST_POLL) == clock.now - 2.6  # published, nothing else
    controller.tick()  # the list lapses again: this tick does everything, the batch's findings first
    assert ledger.reads > reads


@pytest.mark.parametrize("silent, published", [(True, True), (False, False)],
                         ids=["kafka-controller-silent-not-late", "kafka-controller-answering-late"])
def test_a_batch_whose_poll_failed_is_late_unless_kafkas_controller_is_silent(tmp_path, silent, published):
    """While the list is the door's last one (Kafka's controller answers nobody), a batch whose poll failed before
    the gate handed it that list keeps liveness advancing; with Kafka's controller answering it does not (a job whose
    polls fail stops advancing liveness)."""
    cluster = SilentKafkaController() if silent else FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    controller, metrics, clock = a_controller_on(tmp_path, cluster, trigger_s=2.0)
    controller.hand_over(batch("COPYING"))
    controller.tick()
    for _ in range(3):  # each a batch whose poll failed: seven triggers without a successful one
        clock.now += 4.5
        controller.batch_ran()
        controller.tick()
    assert (sample(metrics, LAST_POLL) == clock.now) is published


def test_a_ticks_look_is_published_before_its_duties_that_wait_on_kafka(tmp_path):
    """Kafka's active controller killed as a move of ours completed: the sweep's acks=all write of `done` was
    held until Kafka fenced that broker (4.4 s), and the look of that tick was published only after it - 5.6 s between
    published polls at a 2 s trigger. The look is published right after the list, before the sweep."""
    published_at_write = []

    class HeldWrites(MemoryLedger):
        def put(self, record, writer=None):
            published_at_write.append(sample(metrics, LAST_POLL))
            clock.now += 4.4
            super().put(record, writer)

    cluster = throttled(moving=True)
    controller, metrics, clock = a_controller_on(tmp_path, cluster, HeldWrites.of(request()), trigger_s=2.0)
    controller.hand_over(batch("COPYING"))
    controller.tick()
    del cluster.reassigning[("t", 0)]  # completed: the next tick sweeps and marks the record done
    clock.now += 1.0
    looked = clock.now
    controller.tick()
    assert published_at_write and published_at_write[0] == looked


@pytest.mark.parametrize("busy_s, published", [(0.5, False), (1.0, True), (4.0, True)])
def test_a_tick_busy_for_an_interval_does_not_hold_liveness_back(tmp_path, busy_s, published):
    """A sweep's done-write held 5.2 s until Kafka fenced the killed controller; the tick's look was published
    before it, and nothing until the next tick: 5.3 s between published polls at a 2 s trigger. While a tick has been
    busy for a tick interval, another thread lists and publishes that look."""
    cluster = throttled(moving=True)
    controller, metrics, clock = a_controller_on(tmp_path, cluster, MemoryLedger.of(request()), trigger_s=2.0)
    controller.hand_over(batch("COPYING"))
    controller.tick()
    before = sample(metrics, LAST_POLL)
    controller.round.ticking_since_s = clock.now
    clock.now += busy_s
    controller.look_while_busy()
    assert (sample(metrics, LAST_POLL) == clock.now) is published and sample(metrics, LAST_POLL) >= before


@pytest.mark.parametrize("busy_looks_s, logged_gaps", [
    ((), [4.4]),  # nothing listed while the tick was busy: the gap is the tick's
    ((1.0, 2.0, 3.0, 4.0), []),  # the busy look listed every interval: no gap to log
    ((2.0,), [2.4]),
])
def test_a_gap_between_two_lists_by_any_look_is_logged(tmp_path, busy_looks_s, logged_gaps):
    """The fault tests bound the gap between two of the controller's lists (tests/fault_support.watch_ticks); a tick
    held 7.6 s in CI while the busy look listed, so the tick's length is not that gap. Read as the fault tests read
    the job's log."""
    from tests.fault_support import watch_ticks

    lines = []
    controller, _, clock = a_controller(throttled(moving=True), MemoryLedger.of(request()), gate_dir=tmp_path,
                                        trigger_s=2.0, logged=lines)
    controller.tick()
    started = controller.round.ticking_since_s = clock.now
    for at_s in busy_looks_s:
        clock.now = started + at_s
        controller.look_while_busy()
    clock.now = started + 4.4
    controller.round.ticking_since_s = None
    controller.tick()
    gaps, _, _, _ = watch_ticks("\n".join(lines))
    assert gaps == logged_gaps


def test_liveness_goes_on_while_a_batch_waits_for_its_durable_write_within_its_bound(tmp_path):
    """Kafka holds acks=all writes until it fenced a SIGKILLed broker (7-13.5 s): the batch is held, the
    controller's polls still succeed and are published - for no longer than the producer's delivery timeout."""
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    controller, metrics, clock = a_controller_on(tmp_path, cluster, trigger_s=2.0)
    controller.hand_over(batch("COPYING"))
    controller.tick()
    with controller.batch_writing():
        clock.now += 12  # six triggers without a batch
        controller.tick()
        assert sample(metrics, LAST_POLL) == 1012.0
        clock.now += WRITE_BOUND_S  # the write outlived its delivery timeout: late
        controller.tick()
        assert sample(metrics, LAST_POLL) == 1012.0
    clock.now += 1
    controller.tick()  # the write ended (it failed: the query restarts) and the batch is still late
    assert sample(metrics, LAST_POLL) == 1012.0


def test_a_slow_tick_is_logged_with_its_steps(tmp_path):
    class Slow(FakeCluster):
        def list_reassignments(self):
            clock.now += 3.5
            return super().list_reassignments()

    lines, clock = [], Clock()

    def log(line):  # the first tick is one round of the thread's loop
        lines.append(line)
        controller._stop.set()
    controller = a_controller(Slow(), gate_dir=tmp_path, clock=clock, trigger_s=2.0, logged=lines)[0]
    controller.log = log
    controller._run()
    slow = [line for line in lines if line.startswith(LOG_PREFIX + SLOW_TICK_LINE)]
    assert slow and "list 3.50" in slow[0], lines


def test_the_controller_removes_owned_throttles_the_moment_their_move_leaves(tmp_path):
    cluster, ledger = throttled(moving=True), MemoryLedger.of(request())
    writer = Writer()
    controller, metrics, _ = a_controller_on(tmp_path, cluster, ledger, writer)
    controller.hand_over(batch("COPYING"))
    assert controller.tick() == "reassigning"
    assert cluster.alters == []  # still moving: nothing due
    del cluster.reassigning[("t", 0)]
    controller.tick()
    assert cluster.topics[("t", "leader")] == "3:3"  # surgical: the foreign entry stays
    assert ledger.records()[0].state == OwnershipState.DONE
    assert sample(metrics, THROTTLE_ACTIONS, scope="topic", action="removed") == 2.0
    assert {key for key, _ in writer.written} >= {"throttle:topic:t", "throttle:broker:1"}
    assert {json.loads(value)["batch_id"] for _, value in writer.written} == {8}  # the batch after batch 7


class UnreadableLedger(MemoryLedger):
    """The ledger whose next `fail` reads fail (the ownership topic's leader SIGKILLed)."""

    def __init__(self, *records, fail):
        super().__init__(latest={r.request_id: r for r in records})
        self.fail = fail

    def refresh(self):
        if self.fail:
            self.fail -= 1
            raise RuntimeError("Fetch: broker 3, the leader of the ownership topic, did not answer")


def test_a_request_written_while_the_ledger_was_unreadable_is_swept_once_it_reads(tmp_path):
    """The move of a request the controller could not read ends while the ownership topic is unreadable: batches
    keep running, the controller reads again every tick, and once it reads, the due removal is done."""
    cluster, ledger = throttled(moving=True), UnreadableLedger(request(), fail=2)
    controller, metrics, _ = a_controller_on(tmp_path, cluster, ledger)
    assert controller.tick() == "first_batch"  # the first read failed: nothing known as owned
    del cluster.reassigning[("t", 0)]
    controller.hand_over(batch("COMPLETED"))
    assert controller.tick() == "ownership_unread"  # still failing: not idle
    assert cluster.alters == []
    assert controller.tick() is None  # read at last: the removal due is done at once, and nothing is left to do
    assert cluster.topics[("t", "leader")] == "3:3" and ledger.records()[0].state == OwnershipState.DONE
    assert sample(metrics, POLL_ERRORS, api=READ) == 2.0


def test_between_ticks_the_controller_looks_closer_while_an_owned_partition_moves(tmp_path):
    """The wait after a tick lists the reassignments every quarter second while an owned partition moves, and
    ends at the first look that finds it gone: the next tick (and its sweep) runs then, not a second later."""
    cluster, ledger = throttled(moving=True), MemoryLedger.of(request())
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger)
    controller.hand_over(batch("COPYING"))
    controller.tick()
    looks = []

    def wait(seconds):
        clock.now += seconds
        looks.append(seconds)
        if len(looks) == 2:
            del cluster.reassigning[("t", 0)]
    controller._wake.wait = wait
    controller._wait(clock.now, controller.interval_s)
    assert looks == [rules.PEEK_INTERVAL_S] * 2  # it ended at the look after the move left, 0.5 s in
    controller.tick()
    assert cluster.topics[("t", "leader")] == "3:3"  # that tick swept


def test_a_look_between_ticks_that_waited_out_a_deadline_is_the_next_ticks_one_wait(tmp_path):
    """Kafka's active controller stopped while a partition of ours moves. A look between ticks lapses
    (2.5 s); the tick it ends would then read the stopped node's configs for adoption and lapse again (measured:
    6.0 s between published polls at a 2 s trigger). That tick only lists and publishes; the next one does the rest."""
    cluster, ledger = throttled(moving=True), LedgerReads()
    ledger.put(request())
    controller, metrics, clock = a_controller_on(tmp_path, cluster, ledger, trigger_s=2.0)
    controller.hand_over(batch("COPYING"))
    controller.tick()
    reads = ledger.reads
    original = cluster.listed_or_last

    def lapsing_look():
        clock.now += 2.6
        cluster.listed_or_last = original
        return original()
    cluster.listed_or_last = lapsing_look
    controller._wake.wait = lambda seconds: None
    controller._wait(clock.now, controller.interval_s)
    started = clock.now
    controller.tick()
    assert ledger.reads == reads and sample(metrics, LAST_POLL) == started  # published, nothing else
    controller.tick()
    assert ledger.reads > reads


def test_nothing_owned_moving_means_one_wait_of_a_whole_interval(tmp_path):
    cluster = FakeCluster()
    cluster.reassigning[("u", 0)] = ((2, 1), (2,))  # someone else's move
    controller, _, clock = a_controller_on(tmp_path, cluster, MemoryLedger())
    controller.tick()
    waits = []
    controller._wake.wait = waits.append
    controller._wait(clock.now, controller.interval_s)
    assert waits == [controller.interval_s]


def test_a_batch_handed_over_ends_the_wait_at_once(tmp_path):
    controller, _, clock = a_controller_on(tmp_path, FakeCluster())
    controller.tick()
    controller.hand_over(batch())
    waits = []
    controller._wake.wait = waits.append
    controller._wait(clock.now, controller.interval_s)
    assert waits == []


def test_a_removal_due_while_the_job_was_down_is_done_on_the_first_tick(tmp_path):
    cluster, ledger = throttled(moving=False), MemoryLedger.of(request())
    controller, _, _ = a_controller_on(tmp_path, cluster, ledger)
    assert controller.tick() == "first_batch"
    assert cluster.topics[("t", "leader")] == "3:3"
    assert ledger.records()[0].state == OwnershipState.DONE


def test_the_start_sweep_waits_for_the_first_list_that_answers(tmp_path):
    cluster, ledger = throttled(moving=False), MemoryLedger.of(request())
    cluster.fail["list_reassignments"] = RuntimeError("no controller yet")
    controller, _, _ = a_controller_on(tmp_path, cluster, ledger)
    assert controller.tick() == "controller_blind"
    assert cluster.topics[("t", "leader")] == "0:1,3:3"
    del cluster.fail["list_reassignments"]
    controller.tick()
    assert cluster.topics[("t", "leader")] == "3:3" and ledger.records()[0].state == OwnershipState.DONE


def test_throttle_records_the_controller_could_not_write_are_written_next_tick(tmp_path):
    cluster, ledger = throttled(moving=False), MemoryLedger.of(request())
    writer = Writer(fail=1)
    controller, metrics, _ = a_controller_on(tmp_path, cluster, ledger, writer)
    controller.tick()
    assert writer.written == [] and sample(metrics, POLL_ERRORS, api="Produce") == 1.0
    controller.tick()
    assert {key for key, _ in writer.written} >= {"throttle:topic:t"}


def test_dry_run_reports_and_never_sweeps(tmp_path):
    cluster, ledger = throttled(moving=False), MemoryLedger.of(request())
    controller, _, _ = a_controller_on(tmp_path, cluster, ledger, dry_run=True)
    controller.hand_over(batch())
    assert controller.tick() == "owned_throttles"
    assert cluster.alters == []


def test_a_move_another_tool_starts_is_adopted_at_once_whenever_the_next_batch_comes(tmp_path):
    """The controller's first look took the throttle baseline; the moment the list shows a move that is not ours
    it reads the throttles again, so the ones another tool set with its move are adopted at once - before Spark's
    first batch, or after any idle stretch (Kafka's own --execute --throttle right after `run`)."""
    cluster, ledger = FakeCluster(), MemoryLedger()
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger)
    assert controller.tick() == "first_batch"  # Spark is still starting: no batch yet
    foreign_throttled_move(cluster)
    clock.now += 1
    assert controller.tick() == "first_batch"
    assert [r.origin for r in ledger.records()] == [Origin.OBSERVED]


def test_an_idle_stretch_is_bridged_by_a_view_once_a_trigger(tmp_path):
    """While no batch runs, the throttles are read once a trigger interval, so the views adoption compares are
    never further apart than that - a throttle set during a long idle stretch is not one set with the next move."""
    cluster = FakeCluster()
    controller, _, clock = a_controller_on(tmp_path, cluster, MemoryLedger())
    controller.tick()
    controller.hand_over(batch())
    reads = cluster.requests
    clock.now += 5
    controller.tick()
    cheap = cluster.requests - reads
    clock.now += 5
    controller.tick()
    assert cluster.requests - reads - cheap > cheap  # the tick a trigger after the last view read the throttles


def test_the_first_look_shows_the_moves_in_flight_before_any_batch(tmp_path):
    """Until Spark's first batch, the controller's look at the cluster is a whole poll and /metrics shows
    the moves in it, measured and classified by the batch's own rules (streaming.spark.outputs.first_look)."""
    from sinks.metric_names import REPLICA_COPIED_BYTES, REPLICA_TARGET_BYTES
    from streaming.spark.outputs import first_look

    cluster = FakeCluster(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1}},
                          sizes={("t", 0, 1): 1000, ("t", 0, 2): 400})
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    controller, metrics, clock = a_controller_on(tmp_path, cluster)
    controller.duties.pictures.picture_of = first_look
    labels = dict(topic="t", partition="0", broker="2")
    assert controller.tick() == "first_batch"
    assert (sample(metrics, REPLICA_COPIED_BYTES, **labels), sample(metrics, REPLICA_TARGET_BYTES, **labels)) == (
        400.0, 1000.0)
    cluster.sizes[("t", 0, 2)] = 700
    clock.now += controller.trigger_interval_s
    controller.tick()  # Spark still starting: the look is taken again a trigger later, in a thread of its own
    controller.duties.pictures.poll.join(10)
    assert sample(metrics, REPLICA_COPIED_BYTES, **labels) == 700.0
    controller.hand_over(batch("COPYING"))
    cluster.sizes[("t", 0, 2)] = 900
    clock.now += controller.trigger_interval_s
    controller.tick()  # a batch ran: the batches show the moves from now on
    assert sample(metrics, REPLICA_COPIED_BYTES, **labels) == 700.0


# (what reaches /metrics in order: (path, bytes remaining, poll time)), the bytes remaining shown after
SHOWN_PICTURES = [
    ([("update", 100, 20.0), ("offer", 500, 10.0)], 100.0),  # a first look of an earlier poll than the batch's
    ([("update", 100, 20.0), ("offer", 500, 20.0)], 100.0),  # ... of the same poll: the batch's rows stay
    ([("update", 100, 20.0), ("offer", 50, 30.0)], 50.0),  # a later look, taken while a batch's write was held
    ([("offer", 50, 30.0), ("update", 100, 20.0)], 50.0),  # that held batch's own picture, of an earlier poll
    ([("offer", 50, 30.0), ("update", 40, 30.0)], 40.0),  # a batch of the same poll
    ([("offer", 50, 30.0), ("update", 40, 31.0)], 40.0),  # the next batch
]


@pytest.mark.parametrize("shown, remaining_after", SHOWN_PICTURES)
def test_metrics_show_the_newest_look_at_the_cluster_whichever_took_it(shown, remaining_after):
    """/metrics never goes back to an older poll; liveness is the newest poll; only batches compute plan rows."""
    from sinks.metric_names import PLAN_REMAINING_BYTES, REMAINING_BYTES
    from sinks.prometheus import Picture, SnapshotCollector

    def values(collector, metric):
        return [s.value for family in collector.collect() if family.name == metric.name for s in family.samples]

    def picture(remaining_bytes, poll_s, plans):
        return Picture(summary={"bytes_remaining": remaining_bytes, "rate_bytes_per_sec": None, "eta_seconds": None},
                       last_poll_s=poll_s, plans=plans)

    plan = {"request_id": "r1", "state": "running", "partitions": {}, "bytes_remaining": 7, "eta_seconds": None}
    collector = SnapshotCollector("c")
    for path, remaining_bytes, poll_s in shown:
        getattr(collector, path)(picture(remaining_bytes, poll_s, (plan,) if path == "update" else ()))
    assert values(collector, REMAINING_BYTES) == [remaining_after]
    assert values(collector, LAST_POLL) == [max(poll_s for _, _, poll_s in shown)]
    assert values(collector, PLAN_REMAINING_BYTES) == [7.0]


def test_a_late_batch_makes_the_controller_show_polls_of_its_own(tmp_path):
    """A batch held by a broker that stopped answering (its poll waits out lapses, or Kafka holds its acks=all
    write until it fenced that broker: 9 s and more). Once it is more than a trigger and a request deadline in coming,
    and again a trigger later while it still is, /metrics shows the controller's own poll, by the batches' rules."""
    from sinks.metric_names import REPLICA_COPIED_BYTES
    from streaming.spark.outputs import first_look

    cluster = FakeCluster(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1}},
                          sizes={("t", 0, 1): 1000, ("t", 0, 2): 400})
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    controller, metrics, clock = a_controller_on(tmp_path, cluster, trigger_s=2.0)
    controller.duties.pictures.picture_of = first_look
    labels = dict(topic="t", partition="0", broker="2")

    def copied_after_tick(seconds):
        clock.now += seconds
        controller.tick()
        if controller.duties.pictures.poll.ident is not None:
            controller.duties.pictures.poll.join(10)
        return sample(metrics, REPLICA_COPIED_BYTES, **labels)

    controller.hand_over(batch("COPYING"))
    assert copied_after_tick(0) is None  # the batch just ran
    assert copied_after_tick(controller.trigger_interval_s + controller.duties.liveness.request_deadline_s - 0.1) is None
    assert copied_after_tick(0.2) == 400.0  # the next batch is a trigger and a deadline late
    cluster.sizes[("t", 0, 2)] = 700
    assert copied_after_tick(1.0) == 400.0  # within a trigger of the last
    assert copied_after_tick(1.0) == 700.0
    controller.hand_over(batch("COPYING"))
    cluster.sizes[("t", 0, 2)] = 900
    assert copied_after_tick(1.0) == 700.0  # a batch came


def test_a_destination_dropped_before_any_batch_reported_the_move_is_still_handed_over(tmp_path):
    """A move's target changed before Spark's first batch: /metrics showed its first destination (the controller's
    look), so the batches must report it too (its CANCELLED), not only the destination listed now."""
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,), (1,))
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.tick()
    cluster.reassigning[("t", 0)] = ((3, 1), (3,), (1,))  # the target changed: 2 is no destination any more
    assert controller.tick() == "first_batch"
    [handed_row] = gate.read(controller.gate_path, clock.now * 1000).unreported
    assert handed_row["adding"] == [3, 2]
    controller.hand_over(batch("COPYING"))
    controller.tick()
    assert gate.read(controller.gate_path, clock.now * 1000).unreported == ()


def test_the_moves_a_first_look_showed_are_handed_to_the_batches(tmp_path):
    """Every move the first look's picture showed on /metrics reaches the batches, even one the tick's list did not
    show (it started between the list and the poll, and may end or change before the next tick)."""
    from streaming.spark.outputs import first_look

    class ListedBeforeTheMove(FakeCluster):
        def listed_or_last(self):
            return [], False

    cluster = ListedBeforeTheMove(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1}},
                                  sizes={("t", 0, 1): 1000, ("t", 0, 2): 400})
    cluster.reassigning[("t", 0)] = ((2, 1), (2,), (1,))
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.duties.pictures.picture_of = first_look
    controller.tick()
    assert [(r["topic"], r["partition"], r["adding"])
            for r in gate.read(controller.gate_path, clock.now * 1000).unreported] == [("t", 0, [2])]


@pytest.mark.parametrize("batches_done, shown_s, now_s, shows", [
    (0, None, 1000.0, False),  # the first look is the tick's own (the baseline), not this rule's
    (0, 1000.0, 1005.0, False),  # within a trigger of the last picture
    (0, 1000.0, 1010.0, True),  # Spark still starting, a trigger later: again
    (1, 1000.0, 1010.0, False),  # a batch ran: the batches show the moves
], ids=["first-look-is-the-ticks", "within-a-trigger", "a-trigger-later", "after-a-batch"])
def test_shows_first_look(batches_done, shown_s, now_s, shows):
    assert rules.shows_first_look(batches_done, shown_s, now_s, 10.0) is shows


def test_until_the_first_batch_a_whole_poll_never_holds_a_tick(tmp_path):
    """While Spark starts, the machine is busy and a whole poll takes seconds: the pictures after the first look are
    polled in a thread of their own, and the ticks go on listing meanwhile (a tick waiting for one missed a 3 s move
    of ours, whose throttles then stayed until the next read of the ledger)."""
    import threading

    from streaming.spark.outputs import first_look

    release = threading.Event()

    class SlowLogDirs(FakeCluster):
        held = False

        def describe_log_dirs(self, broker):
            if self.held:
                release.wait(10)
            return super().describe_log_dirs(broker)

    cluster = SlowLogDirs(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1}},
                          sizes={("t", 0, 1): 1000, ("t", 0, 2): 400})
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    controller, _, clock = a_controller_on(tmp_path, cluster)
    controller.duties.pictures.picture_of = first_look
    controller.tick()  # the first look: its whole poll in the tick (the baseline)
    cluster.held = True
    clock.now += controller.trigger_interval_s
    assert controller.tick() == "first_batch"  # the picture's poll is held: the tick is not
    assert controller.duties.pictures.busy()
    clock.now += 1
    del cluster.reassigning[("t", 0)]
    controller.tick()
    assert controller.duties.looks.reassigning == frozenset()  # this tick listed, the poll still held
    release.set()
    controller.duties.pictures.poll.join(10)


def test_a_move_of_ours_a_look_saw_between_two_ticks_is_swept_as_it_left(tmp_path):
    """A tick held (Spark starting on a busy machine): the busy look listed a move of ours that the ticks never did,
    and it ended before the next tick's list. That tick reads the ledger (a look saw something move) and sweeps at once,
    the move having left the list - not a trigger later, on the idle read of the ledger, as one that came and went
    unseen (5.6 s after completion at the default trigger)."""
    cluster, ledger, lines = throttled(), MemoryLedger(), []
    controller, _, clock = a_controller(cluster, ledger, gate_dir=tmp_path, trigger_s=10.0, logged=lines)
    controller.tick()
    controller.hand_over(batch())
    clock.now += 1
    assert controller.tick() is None
    ledger.put(request())  # execute wrote it and started its move
    cluster.reassigning[("t", 0)] = ((2, 1), (2,), (1,))
    controller.round.ticking_since_s = clock.now
    clock.now += 1.5
    controller.look_while_busy()  # a tick busy for a tick interval: this look lists the move
    controller.round.ticking_since_s = None
    del cluster.reassigning[("t", 0)]  # it ended before the next tick's list
    clock.now += 0.5
    controller.tick()
    assert cluster.topics[("t", "follower")] == ""  # swept now: 2 s since the last read of the ledger, not 10
    assert [r.state for r in ledger.records()] == [OwnershipState.DONE]
    assert any("1 owned partition(s) left the reassignment list" in line for line in lines), lines


SHOWN_THROTTLES = [
    ([("update", 10.0, 100), ("offer_throttles", 20.0, 200)], 200.0),  # a read while no batch runs, after the batch
    ([("offer_throttles", 20.0, 200), ("update", 10.0, 100)], 200.0),  # ... a batch of an earlier poll after it
    ([("offer_throttles", 20.0, 200), ("update", 30.0, 300)], 300.0),  # the next batch's poll
    ([("offer_throttles", 20.0, 200), ("offer_throttles", 15.0, 150)], 200.0),  # reads never go back either
    ([("offer_throttles", 20.0, 200), ("offer", 25.0, 250)], 250.0),  # a picture of the controller's own poll
]


@pytest.mark.parametrize("shown, rate_after", SHOWN_THROTTLES)
def test_metrics_show_the_throttles_of_the_newest_read(shown, rate_after):
    """While no batch runs, the controller's read of the throttles (once a trigger) is what /metrics shows of them:
    a throttle set while nothing moves reaches the leaked-throttle alert. No read goes back to an older poll."""
    from sinks.metric_names import BROKER_THROTTLE_RATE
    from sinks.prometheus import Picture, SnapshotCollector

    collector = SnapshotCollector("c")
    for path, poll_s, rate in shown:
        rows = ({"broker": 1, "kind": "leader", "rate": rate},)
        if path == "offer_throttles":
            collector.offer_throttles((), rows, poll_s)
        else:
            getattr(collector, path)(Picture(broker_throttles=rows, last_poll_s=poll_s))
    assert [s.value for family in collector.collect() if family.name == BROKER_THROTTLE_RATE.name
            for s in family.samples] == [rate_after]


@pytest.mark.parametrize("cleanup", ["owned", "all"])
def test_a_throttle_set_while_nothing_moves_is_shown_and_under_all_asks_for_a_batch(tmp_path, cleanup):
    from sinks.metric_names import BROKER_THROTTLE_RATE

    cluster = FakeCluster()
    controller, metrics, clock = a_controller_on(tmp_path, cluster, trigger_s=2.0, cleanup=cleanup)
    controller.tick()
    if controller.duties.pictures.poll.ident is not None:  # a whole poll for /metrics, in a thread of its own
        controller.duties.pictures.poll.join(10)
    controller.hand_over(batch())
    clock.now += 1
    assert controller.tick() is None  # idle
    cluster.rates[(2, "follower")] = 5000  # set by hand while nothing moves
    clock.now += 2.5  # a trigger without a batch: the controller reads the throttles itself
    decision = controller.tick()
    assert sample(metrics, BROKER_THROTTLE_RATE, broker="2", kind="follower") == 5000.0
    assert (decision == "throttles_to_clear") is (cleanup == "all"), decision

def test_until_the_first_batch_a_move_of_ours_that_came_and_went_is_swept_at_the_next_tick(tmp_path):
    """While Spark starts the machine is busy and the looks are slower: a move of ours may start and end between two
    of them. Until Spark's first batch the ledger is read every tick, so its throttles go at the next tick, not at the
    idle read of the ledger a trigger later (5.6 s after completion at the default trigger)."""
    cluster, ledger = throttled(), MemoryLedger()
    controller, _, clock = a_controller_on(tmp_path, cluster, ledger, trigger_s=10.0)
    assert controller.tick() == "first_batch"
    ledger.put(request())  # execute wrote it; its move came and went between two looks
    clock.now += 1
    controller.tick()
    assert cluster.topics[("t", "follower")] == ""
    assert [r.state for r in ledger.records()] == [OwnershipState.DONE]


def test_a_quiet_controller_reads_a_record_the_watch_saw_at_once(tmp_path):
    """While quiet the controller looks once a trigger (rounds.Round.interval_s) and reads the ledger as often; an
    `execute`'s record seen by the ownership watch is read by the next tick, which the watch starts at once, so a move
    that came and went between two looks has its throttles removed then."""
    controller, cluster, ledger, clock = idle_with_a_move_unseen(tmp_path)
    controller.ownership_written()
    clock.now += 0.1
    assert controller.tick() == "unreported"
    assert cluster.topics[("t", "follower")] == ""
    assert [r.state for r in ledger.records()] == [OwnershipState.DONE]


def test_the_ownership_watch_wakes_the_controller_on_a_record(tmp_path):
    controller, _, _ = a_controller_on(tmp_path, throttled(), MemoryLedger())
    watch = threading.Thread(target=controller._watching_ownership, daemon=True)
    watch.start()
    try:
        assert not controller._wake.wait(0.7)  # nothing written: no wake-up
        controller.ledger.put(request())
        assert controller._wake.wait(2.0)
    finally:
        controller._stop.set()
        watch.join(QUIET_TICK_S + 5)
    assert not watch.is_alive()


@pytest.mark.parametrize("quiet, trigger_s, expected_s", [
    (False, 10.0, TICK_INTERVAL_S),  # a batch is wanted: every second
    (True, 10.0, 10.0),  # quiet: once a trigger
    (True, 2.0, 2.0),
    (True, 60.0, QUIET_TICK_S),  # at most QUIET_TICK_S apart
    (True, 0.5, TICK_INTERVAL_S),  # never more often than a tick
])
def test_a_quiet_controller_looks_once_a_trigger(quiet, trigger_s, expected_s):
    assert Round(quiet=quiet).interval_s(TICK_INTERVAL_S, trigger_s) == expected_s


@pytest.mark.parametrize("expected_s, gap_s, slow", [
    (TICK_INTERVAL_S, 1.9, False),
    (TICK_INTERVAL_S, 2.5, True),  # twice the tick interval and more
    (QUIET_TICK_S, QUIET_TICK_S, False),  # quiet: the interval itself is not slow
    (QUIET_TICK_S, QUIET_TICK_S + 1.5, True),
])
def test_a_look_is_slow_beyond_the_interval_the_controller_expects(expected_s, gap_s, slow):
    clock, said = Clock(), []
    looks = Looks(FakeCluster(), clock, said.append)
    looks.listed_or_last()
    looks.expect(expected_s)
    clock.now += gap_s
    looks.listed_or_last()
    assert bool([line for line in said if line.startswith(SLOW_LOOK_LINE)]) == slow


@pytest.mark.parametrize("quiet, since_view_s, due", [
    (False, 9.9, False),
    (False, 10.0, True),  # once a trigger
    (True, 10.0, False),  # quiet: once QUIET_VIEW_S
    (True, QUIET_VIEW_S, True),
])
def test_adoptions_own_view_is_due_once_a_trigger_and_less_often_while_quiet(quiet, since_view_s, due):
    clock = Clock()
    adoption = Adoption(Policy(), 10.0, clock)
    adoption.looking()
    assert adoption.due(clock() + since_view_s, quiet) == due
