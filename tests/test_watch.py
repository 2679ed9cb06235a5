"""The driver's watch: its rules as tables of cases, its gate file, and its ticks on the one admin fake with
the real janitor (tests/fake_cluster.py, sinks.throttles.ownership.MemoryStore)."""

import json
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from sinks.metric_names import LAST_POLL, POLL_ERRORS, THROTTLE_ACTIONS
from sinks.prometheus import MonitorMetrics
from sinks.throttles.ownership import DONE, PENDING, STARTED, MemoryStore, Refusal
from streaming.vocabulary.defaults import REQUEST_DEADLINE_S
from streaming.vocabulary.kafka_apis import LIST_REASSIGNMENTS, READ
from streaming.watch import gate, rules
from streaming.watch.rules import WatchView
from streaming.watch.watch import Watch
from tests.fake_cluster import FakeCluster
from tests.test_janitor import janitor, request, throttled

T0 = frozenset({("t", 0)})
IDLE = dict(listed=True, batches_done=1)


@pytest.mark.parametrize("view, reason", [
    (WatchView(**IDLE), None),
    (WatchView(listed=False, batches_done=1), "watch_blind"),
    (WatchView(listed=True, batches_done=0), "first_batch"),
    (WatchView(**IDLE, reassigning=T0), "reassigning"),
    (WatchView(**IDLE, left_unreported=True), "left_unreported"),
    (WatchView(**IDLE, tracks_moves=True), "tracked_in_state"),
    (WatchView(**IDLE, owned=T0), "owned_throttles"),
    (WatchView(**IDLE, owned_unread=True), "ownership_unread"),
    (WatchView(**IDLE, throttles_to_clear=True), "throttles_to_clear"),
    (WatchView(**IDLE, active_plans=1), "plans_active"),
    # order: the first rule that holds names the reason
    (WatchView(listed=False, batches_done=0, reassigning=T0), "watch_blind"),
    (WatchView(**IDLE, reassigning=T0, tracks_moves=True, owned=T0), "reassigning"),
    (WatchView(**IDLE, tracks_moves=True, owned=T0), "tracked_in_state"),
], ids=["idle", "blind", "first-batch", "reassigning", "left-unreported", "tracked", "owned", "unread", "clear-all", "plans", "blind-first",
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


@pytest.mark.parametrize("accepted_before, accepted_now, before, now, unseen", [
    (set(), {("t", 0)}, set(), set(), {("t", 0)}),  # accepted, and neither listed at the last tick nor now
    (set(), {("t", 0)}, set(), {("t", 0)}, set()),  # listed now: it leaves the list later, seen
    (set(), {("t", 0)}, {("t", 0)}, set(), set()),  # listed at the last tick: partitions_left has it
    ({("t", 0)}, {("t", 0)}, set(), set(), set()),  # known since an earlier read: handled then
    ({("t", 0)}, set(), set(), set(), set()),  # settled since
], ids=["came-and-went", "listed-now", "listed-before", "known", "settled"])
def test_ended_unseen(accepted_before, accepted_now, before, now, unseen):
    assert rules.ended_unseen(accepted_before, accepted_now, before, now) == unseen


@pytest.mark.parametrize("listed, wanted, waiting_since, now, late, writing_since, publishes", [
    (True, False, 0.0, 1000.0, 30.0, None, True),  # idle: the watch is the liveness
    (True, True, 990.0, 1000.0, 30.0, None, True),  # a batch wanted, not yet late
    (True, True, 960.0, 1000.0, 30.0, None, False),  # a batch late: liveness stops, MonitorDown can fire
    (False, False, 0.0, 1000.0, 30.0, None, False),  # the watch's poll failed
    (True, True, 980.0, 1000.0, 6.0, 988.0, True),  # late, but held by its durable write (a broker being fenced)
    (True, True, 960.0, 1000.0, 6.0, 975.0, False),  # written for longer than the write may take: late again
    (False, True, 990.0, 1000.0, 6.0, 995.0, False),  # held by its write, but the watch's own poll failed
], ids=["idle", "waiting", "late", "failed", "held-by-write", "write-overdue", "held-but-failed"])
def test_publishes_liveness(listed, wanted, waiting_since, now, late, writing_since, publishes):
    assert rules.publishes_liveness(listed, wanted, waiting_since, now, late, writing_since, 20.0) is publishes


def test_late_after_allows_spark_start_before_the_first_batch():
    lapses_s = rules.LATE_AFTER_LAPSES * REQUEST_DEADLINE_S  # a batch may wait out two lapses (issue 28)
    assert rules.late_after_s(10.0, 1) == 30.0 + lapses_s
    assert rules.late_after_s(10.0, 0) == 30.0 + lapses_s + rules.SPARK_START_ALLOWANCE_S


@pytest.mark.parametrize("content, now_ms, wanted", [
    (None, 1000, True),  # no gate: every trigger is a batch
    ('{"reason": null, "ts_ms": 1000}', 2000, False),
    ('{"reason": "reassigning", "ts_ms": 1000}', 2000, True),
    ('{"reason": null, "ts_ms": 1000}', 1000 + gate.STALE_AFTER_MS + 1, True),  # the watch stopped: fail open
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
    gate.write(path, "left_unreported", 6000, [MOVED])
    assert gate.read(path, 6001) == gate.Decision(wanted=True, unreported=(MOVED,))
    assert gate.read(path, 6000 + gate.STALE_AFTER_MS + 1) == gate.Decision(wanted=True)  # stale: none handed over
    gate.write(path, "reassigning", 7000, listed=[MOVED])  # the controller answers nobody: the watch's last list
    assert gate.read(path, 7001) == gate.Decision(wanted=True, listed=(MOVED,))
    assert gate.read(path, 7000 + gate.STALE_AFTER_MS + 1) == gate.Decision(wanted=True)


class SilentController(FakeCluster):
    """The door's answer while the controller answers nobody: the last list, and that it is the last one."""

    def listed_or_last(self):
        return self.list_reassignments(), True


def test_the_watch_hands_its_last_list_to_the_batches_while_the_controller_is_silent(tmp_path):
    path = str(tmp_path / "gate.json")
    cluster = SilentController(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1}},
                               reassigning={("t", 0): ([2, 1], [2])})
    Watch(cluster, MonitorMetrics(apis=(LIST_REASSIGNMENTS,)), path, 2.0).tick()
    listed = gate.read(path, time.time() * 1000).listed
    assert [(r["topic"], r["partition"], r["adding"]) for r in listed] == [("t", 0, [2])]
    Watch(FakeCluster(), MonitorMetrics(apis=(LIST_REASSIGNMENTS,)), path, 2.0).tick()  # the controller answers: none
    assert gate.read(path, time.time() * 1000).listed is None


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Writer:
    def __init__(self, fail=0):
        self.written, self.fail = [], fail

    def write(self, keyed):
        if self.fail:
            self.fail -= 1
            raise RuntimeError("no leader")
        self.written += keyed


def a_watch(tmp_path, cluster, store=None, writer=None, trigger_s=10.0):
    metrics = MonitorMetrics(apis=(LIST_REASSIGNMENTS, READ))
    j = janitor(cluster, store)[0] if store is not None else None
    clock = Clock()
    watch = Watch(cluster, metrics, str(tmp_path / "gate.json"), trigger_s, j, writer or Writer(),
                  clock=clock, wall=clock, log=lambda line: None)
    return watch, metrics, clock


def sample(metrics, metric, **labels):
    return metrics.registry.get_sample_value(metric.name, labels)


def batch(*states, batch_id=7, partition=("t", 0)):
    """(a batch's output as the watch reads it: one replica row of `partition` per state, its batch id)."""
    snapshot = {"topic_throttles": [], "broker_throttles": []}
    rows = [{"topic": partition[0], "partition": partition[1], "state": s} for s in states]
    return SimpleNamespace(replicas=rows, snapshot=snapshot), batch_id


def test_idle_after_the_first_batch_and_liveness_advances(tmp_path):
    watch, metrics, clock = a_watch(tmp_path, FakeCluster())
    assert watch.tick() == "first_batch"
    assert sample(metrics, LAST_POLL) == 1000.0  # before Spark's first batch, within its start allowance
    watch.batch_done(*batch())
    clock.now += 1
    assert watch.tick() is None
    assert not gate.read(watch.gate_path, clock.now * 1000).wanted
    assert sample(metrics, LAST_POLL) == 1001.0


def test_a_failed_list_counts_as_a_poll_error_and_asks_for_a_batch(tmp_path):
    cluster = FakeCluster(fail={"list_reassignments": RuntimeError("broker gone")})
    watch, metrics, clock = a_watch(tmp_path, cluster)
    watch.batch_done(*batch())
    assert watch.tick() == "watch_blind"
    assert metrics.registry.get_sample_value(POLL_ERRORS.name, {"api": LIST_REASSIGNMENTS}) == 1.0
    assert sample(metrics, LAST_POLL) is None


def test_batches_run_until_the_transition_after_a_move_left_is_reported(tmp_path):
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    watch, _, clock = a_watch(tmp_path, cluster)
    watch.batch_done(*batch("COPYING"))
    assert watch.tick() == "reassigning"
    del cluster.reassigning[("t", 0)]
    assert watch.tick() == "tracked_in_state"  # the batch that reports COMPLETED must still run
    watch.batch_done(*batch("COMPLETED"))
    assert watch.tick() is None


def test_an_idle_watch_reads_the_ownership_records_once_a_trigger(tmp_path):
    """A request whose move started and completed between two ticks was never listed: the idle watch still finds
    its record within a trigger interval, removes its throttles then and hands the move to the next batch."""
    cluster, store = throttled(), MemoryStore()
    watch, _, clock = a_watch(tmp_path, cluster, store, trigger_s=10.0)
    watch.tick()
    watch.batch_done(*batch())
    clock.now += 1
    assert watch.tick() is None
    store.put(request())  # execute wrote it; the move came and went unseen
    clock.now += 1
    assert watch.tick() is None  # read once a trigger while idle: not yet
    clock.now += 10
    assert watch.tick() == "left_unreported"
    assert cluster.topics[("t", "follower")] == ""  # swept by the watch, not left for a batch
    assert [r.state for r in store.records()] == [DONE]
    assert gate.read(watch.gate_path, clock.now * 1000).unreported == (MOVED,)
    watch.batch_done(*batch("COMPLETED"))
    assert watch.tick() is None


@pytest.mark.parametrize("arrivals, handed", [
    # (what the store holds at each read after the first, as (state, refused partitions)); the move of t-0
    ([(STARTED, ())], [MOVED]),
    ([(PENDING, ()), (STARTED, ())], [MOVED]),  # accepted after the watch first read it pending
    ([(STARTED, (("t", 0),))], []),  # Kafka refused it: it never ran
    ([(PENDING, ())], []),  # not accepted (yet): execute may still be setting its throttles
], ids=["accepted-unseen", "pending-then-accepted", "refused", "pending"])
def test_a_move_of_ours_that_came_and_went_unseen_is_handed_over(tmp_path, arrivals, handed):
    cluster, store = throttled(), MemoryStore()
    watch, _, clock = a_watch(tmp_path, cluster, store, trigger_s=1.0)
    watch.tick()
    watch.batch_done(*batch())
    for state, refused in arrivals:
        store.put(replace(request(state=state), refused=tuple(Refusal(t, p, "INVALID_REPLICA_ASSIGNMENT")
                                                              for t, p in refused)))
        clock.now += 1
        watch.tick()
    assert list(gate.read(watch.gate_path, clock.now * 1000).unreported) == handed


def test_requests_active_at_start_are_swept_not_handed_over(tmp_path):
    """At start every active request is new to the watch: the start's sweep removes what came due while the job
    was down, and whether their moves were reported is the checkpoint's business (the run before)."""
    cluster, store = throttled(), MemoryStore.of(request())
    watch, _, clock = a_watch(tmp_path, cluster, store)
    assert watch.tick() == "first_batch"
    assert [r.state for r in store.records()] == [DONE]
    assert gate.read(watch.gate_path, clock.now * 1000).unreported == ()


def test_a_move_that_ended_before_any_batch_polled_it_is_handed_to_the_next_batch(tmp_path):
    """Issue 18: a move shorter than the wait for a batch (an idle job's first batch starts Spark's Python
    workers again) is still reported: the watch hands it over until a batch reported it."""
    cluster = FakeCluster()
    watch, _, clock = a_watch(tmp_path, cluster)
    watch.batch_done(*batch())
    assert watch.tick() is None
    cluster.reassigning[("t", 0)] = ((2, 1), (2,), (1,))
    assert watch.tick() == "reassigning"
    del cluster.reassigning[("t", 0)]
    assert watch.tick() == "left_unreported"
    assert gate.read(watch.gate_path, clock.now * 1000).unreported == (MOVED,)
    watch.batch_done(*batch(partition=("u", 0)))  # a batch that polled before the move: still handed over
    assert watch.tick() == "left_unreported"
    watch.batch_done(*batch("COMPLETED"))
    assert watch.tick() is None
    assert gate.read(watch.gate_path, clock.now * 1000) == gate.Decision(wanted=False)


def test_moves_that_ended_unseen_are_handed_over_a_limited_number_per_batch(tmp_path, monkeypatch):
    monkeypatch.setattr("streaming.watch.watch.HANDOVER_LIMIT", 1)
    cluster = FakeCluster()
    watch, _, clock = a_watch(tmp_path, cluster)
    watch.batch_done(*batch())
    cluster.reassigning.update({("t", 0): ((2, 1), (2,)), ("t", 1): ((2, 1), (2,))})
    watch.tick()
    cluster.reassigning.clear()
    handed = []
    while watch.tick() == "left_unreported":
        [move] = gate.read(watch.gate_path, clock.now * 1000).unreported
        handed.append((move["topic"], move["partition"]))
        watch.batch_done(*batch("COMPLETED", partition=handed[-1]))
    assert handed == [("t", 0), ("t", 1)]


@pytest.mark.parametrize("reassignment", [((2, 1), (2,), (1,)), ((2, 1), (), (1,))],
                         ids=["reported-while-listed", "adds-no-replica"])
def test_a_move_a_batch_reported_or_with_no_replica_to_add_is_not_handed_over(tmp_path, reassignment):
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = reassignment
    watch, _, clock = a_watch(tmp_path, cluster)
    watch.tick()
    watch.batch_done(*batch(*(["COPYING"] if reassignment[1] else [])))  # a move adding none has no replica row
    watch.tick()
    del cluster.reassigning[("t", 0)]
    watch.tick()
    assert gate.read(watch.gate_path, clock.now * 1000).unreported == ()


def test_liveness_stops_when_a_wanted_batch_is_late(tmp_path):
    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    watch, metrics, clock = a_watch(tmp_path, cluster, trigger_s=2.0)
    watch.batch_done(*batch("COPYING"))
    watch.tick()
    clock.now += rules.late_after_s(2.0, 1) + 1  # three triggers and two lapses without a batch, and more
    watch.tick()
    assert sample(metrics, LAST_POLL) == 1000.0


def test_liveness_goes_on_while_a_batch_waits_for_its_durable_write_within_its_bound(tmp_path):
    """Kafka holds acks=all writes until it fenced a SIGKILLed broker (7-13.5 s): the batch is held, the watch's
    polls still succeed and are published - for no longer than the producer's delivery timeout."""
    from streaming.watch.watch import WRITE_BOUND_S

    cluster = FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    watch, metrics, clock = a_watch(tmp_path, cluster, trigger_s=2.0)
    watch.batch_done(*batch("COPYING"))
    watch.tick()
    with watch.batch_writing():
        clock.now += 12  # six triggers without a batch
        watch.tick()
        assert sample(metrics, LAST_POLL) == 1012.0
        clock.now += WRITE_BOUND_S  # the write outlived its delivery timeout: late
        watch.tick()
        assert sample(metrics, LAST_POLL) == 1012.0
    clock.now += 1
    watch.tick()  # the write ended (it failed: the query restarts) and the batch is still late
    assert sample(metrics, LAST_POLL) == 1012.0


def test_a_slow_tick_is_logged_with_its_duration(tmp_path):
    from streaming.watch.watch import SLOW_TICK_LINE

    class Slow(FakeCluster):
        def list_reassignments(self):
            clock.now += 3.5
            return super().list_reassignments()

    lines, clock = [], Clock()

    def log(line):  # the first line comes from the first tick: one round of the thread's loop
        lines.append(line)
        watch._stop.set()
    watch = Watch(Slow(), MonitorMetrics(apis=(LIST_REASSIGNMENTS,)), str(tmp_path / "gate.json"), 2.0,
                  clock=clock, wall=clock, log=log)
    watch._run()
    assert any(line.startswith(f"{SLOW_TICK_LINE}3.5 s (list 3.50") for line in lines), lines


def test_the_watch_removes_owned_throttles_the_moment_their_move_leaves(tmp_path):
    cluster, store = throttled(moving=True), MemoryStore.of(request())
    writer = Writer()
    watch, metrics, _ = a_watch(tmp_path, cluster, store, writer)
    watch.batch_done(*batch("COPYING"))
    assert watch.tick() == "reassigning"
    assert cluster.alters == []  # still moving: nothing due
    del cluster.reassigning[("t", 0)]
    watch.tick()
    assert cluster.topics[("t", "leader")] == "3:3"  # surgical: the foreign entry stays
    assert store.records()[0].state == DONE
    assert sample(metrics, THROTTLE_ACTIONS, scope="topic", action="removed") == 2.0
    assert {key for key, _ in writer.written} >= {"throttle:topic:t", "throttle:broker:1"}
    assert {json.loads(value)["batch_id"] for _, value in writer.written} == {8}  # the batch after batch 7


class UnreadableStore(MemoryStore):
    """The ownership store whose next `fail` reads fail (the ownership topic's leader SIGKILLed)."""

    def __init__(self, *records, fail):
        super().__init__(latest={r.request_id: r for r in records})
        self.fail = fail

    def refresh(self):
        if self.fail:
            self.fail -= 1
            raise RuntimeError("Fetch: broker 3, the leader of the ownership topic, did not answer")


def test_a_request_written_while_the_ownership_records_were_unreadable_is_swept_once_they_read(tmp_path):
    """The move of a request the watch could not read ends while the ownership topic is unreadable: batches
    keep running, the watch reads again every tick, and once it reads, the due removal is done."""
    cluster, store = throttled(moving=True), UnreadableStore(request(), fail=2)
    watch, metrics, _ = a_watch(tmp_path, cluster, store)
    watch.batch_done(*batch("COPYING"))
    assert watch.tick() == "reassigning"  # the first read failed: nothing known as owned
    del cluster.reassigning[("t", 0)]
    watch.batch_done(*batch("COMPLETED"))
    assert watch.tick() == "ownership_unread"  # still failing: not idle
    assert cluster.alters == []
    assert watch.tick() is None  # read at last: the removal due is done at once, and nothing is left to do
    assert cluster.topics[("t", "leader")] == "3:3" and store.records()[0].state == DONE
    assert sample(metrics, POLL_ERRORS, api=READ) == 2.0


def test_between_ticks_the_watch_looks_closer_while_an_owned_partition_moves(tmp_path):
    """The wait after a tick lists the reassignments every quarter second while an owned partition moves, and
    ends at the first look that finds it gone: the next tick (and its sweep) runs then, not a second later."""
    cluster, store = throttled(moving=True), MemoryStore.of(request())
    watch, _, clock = a_watch(tmp_path, cluster, store)
    watch.batch_done(*batch("COPYING"))
    watch.tick()
    looks = []

    def wait(seconds):
        clock.now += seconds
        looks.append(seconds)
        if len(looks) == 2:
            del cluster.reassigning[("t", 0)]
    watch._stop.wait = wait
    watch._wait(clock.now)
    assert looks == [rules.PEEK_INTERVAL_S] * 2  # it ended at the look after the move left, 0.5 s in
    watch.tick()
    assert cluster.topics[("t", "leader")] == "3:3"  # that tick swept


def test_nothing_owned_moving_means_one_wait_of_a_whole_interval(tmp_path):
    cluster = FakeCluster()
    cluster.reassigning[("u", 0)] = ((2, 1), (2,))  # someone else's move
    watch, _, clock = a_watch(tmp_path, cluster, MemoryStore())
    watch.tick()
    waits = []
    watch._stop.wait = waits.append
    watch._wait(clock.now)
    assert waits == [watch.interval_s]


def test_a_removal_due_while_the_job_was_down_is_done_on_the_first_tick(tmp_path):
    cluster, store = throttled(moving=False), MemoryStore.of(request())
    watch, _, _ = a_watch(tmp_path, cluster, store)
    assert watch.tick() == "first_batch"
    assert cluster.topics[("t", "leader")] == "3:3"
    assert store.records()[0].state == DONE


def test_the_start_sweep_waits_for_the_first_list_that_answers(tmp_path):
    cluster, store = throttled(moving=False), MemoryStore.of(request())
    cluster.fail["list_reassignments"] = RuntimeError("no controller yet")
    watch, _, _ = a_watch(tmp_path, cluster, store)
    assert watch.tick() == "watch_blind"
    assert cluster.topics[("t", "leader")] == "0:1,3:3"
    del cluster.fail["list_reassignments"]
    watch.tick()
    assert cluster.topics[("t", "leader")] == "3:3" and store.records()[0].state == DONE


def test_throttle_records_the_watch_could_not_write_are_written_next_tick(tmp_path):
    cluster, store = throttled(moving=False), MemoryStore.of(request())
    writer = Writer(fail=1)
    watch, metrics, _ = a_watch(tmp_path, cluster, store, writer)
    watch.tick()
    assert writer.written == [] and metrics.registry.get_sample_value(POLL_ERRORS.name, {"api": "Produce"}) == 1.0
    watch.tick()
    assert {key for key, _ in writer.written} >= {"throttle:topic:t"}


def test_dry_run_leaves_removals_to_the_batches(tmp_path):
    cluster, store = throttled(moving=False), MemoryStore.of(request())
    metrics = MonitorMetrics()
    watch = Watch(cluster, metrics, str(tmp_path / "gate.json"), 10.0, janitor(cluster, store, dry_run=True)[0],
                  Writer(), log=lambda line: None)
    watch.batch_done(*batch())
    assert watch.tick() == "owned_throttles"
    assert cluster.alters == []


def test_a_move_another_tool_starts_after_an_idle_stretch_is_adopted(tmp_path):
    """While no batch runs, the watch has the janitor observe once a trigger: the first batch after a long idle
    stretch compares against a fresh view, so another tool's throttles that came with its move are adopted
    (without it the batch's last view is older than the observer's gap bound, and nothing could be told)."""
    from sinks.throttles.janitor import Janitor
    from sinks.throttles.ownership import OBSERVED
    from tests.test_throttle_observe import foreign_throttled_move

    cluster, store = FakeCluster(), MemoryStore()
    j = Janitor(cluster, store, readback_timeout_s=0.5, log=lambda line: None, observe_gap_ms=60_000)
    clock = Clock()
    watch = Watch(cluster, MonitorMetrics(apis=(LIST_REASSIGNMENTS,)), str(tmp_path / "gate.json"), 10.0, j,
                  Writer(), clock=clock, wall=clock, log=lambda line: None)
    stale_ms = int(time.time() * 1000) - 120_000
    assert j.on_batch(cluster.snapshot(now_ms=stale_ms), 7) == []  # the last batch, two minutes ago
    watch.batch_done(*batch())
    assert watch.tick() is None  # idle: the janitor observes now
    foreign_throttled_move(cluster)
    clock.now += 1
    assert watch.tick() == "reassigning"
    j.on_batch(cluster.snapshot(), 8)
    assert [r.origin for r in store.records()] == [OBSERVED]


@pytest.mark.parametrize("silent, published", [(True, True), (False, False)],
                         ids=["controller-silent-not-late", "controller-answering-late"])
def test_a_batch_whose_poll_failed_is_late_unless_the_controller_is_silent(tmp_path, silent, published):
    """While the watch's list is the door's last one (the controller answers nobody), a batch whose poll failed
    before the watch handed it that list keeps liveness advancing; with the controller answering it does not (a
    job whose polls fail stops advancing liveness, as before)."""
    cluster = SilentController() if silent else FakeCluster()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    watch, metrics, clock = a_watch(tmp_path, cluster, trigger_s=2.0)
    watch.batch_done(*batch("COPYING"))
    watch.tick()
    for _ in range(3):  # each a batch whose poll failed: seven triggers without a successful one
        clock.now += 4.5
        watch.batch_ran(8)
        watch.tick()
    assert (sample(metrics, LAST_POLL) == clock.now) is published
