"""The plan scheduler and the plan's partition states (streaming.control.plans), pure: tables of cases, then
properties over generated plans: limits never exceeded, progress whenever something can move, and no
partition starved while moves keep completing."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.control.plans.scheduler import FILE, LARGEST, SMALLEST, Candidate, Limits, Load, load_of, ordered, schedule
from streaming.control.plans.partition_states import classify, not_moved, settled
from streaming.control.ownership.records import Move
from streaming.control.placement import between_dirs, copies, logs_of, misplaced, to_place
from streaming.control.plans.step import candidate
from streaming.vocabulary.states import PlanPartitionState


def c(key, brokers, size=0):
    return Candidate(key, frozenset(brokers), size)


def load(partitions=0, per_broker=None, size=0):
    return Load(partitions, Counter(per_broker or {}), size)


SCHEDULE_CASES = [
    # id, pending, load, limits, expected keys
    ("idle cluster fills every slot", [c(1, {1, 2}), c(2, {3, 4}), c(3, {5, 6})], load(), Limits(2), [1, 2]),
    ("pipelined: one slot free, one submitted", [c(4, {1, 2}), c(5, {3, 4})], load(4, {7: 4}), Limits(5), [4]),
    ("cluster full: nothing", [c(1, {1, 2})], load(5), Limits(5), []),
    ("over the limit (foreign moves): nothing", [c(1, {1, 2})], load(7), Limits(5), []),
    ("busy broker skipped, later one on other brokers goes", [c(1, {1, 2}), c(2, {3, 4})], load(1, {1: 1}), Limits(5, 1), [2]),
    ("a busy broker's waiter reserves its other brokers", [c(1, {1, 2}), c(2, {2, 3})], load(1, {1: 1}), Limits(5, 1), []),
    ("per-broker limit counts sources and destinations", [c(1, {1, 2}), c(2, {2, 3}), c(3, {4, 5})], load(), Limits(5, 1), [1, 3]),
    ("a later one never takes a broker an earlier waiter needs", [c(1, {1, 2}), c(2, {2, 3}), c(3, {3, 4})], load(), Limits(5, 1), [1]),
    ("bytes: fits", [c(1, {1, 2}, 40), c(2, {3, 4}, 50)], load(1, {}, 10), Limits(5, None, 100), [1, 2]),
    ("bytes: the head waits and nothing passes it", [c(1, {1, 2}, 95), c(2, {3, 4}, 1)], load(1, {}, 10), Limits(5, None, 100), []),
    ("bytes: larger than the limit goes alone", [c(1, {1, 2}, 500), c(2, {3, 4}, 1)], load(), Limits(5, None, 100), [1]),
    ("bytes: an empty partition in flight keeps a larger one from going", [c(1, {1, 2}, 0), c(2, {3, 4}, 2)], load(),
     Limits(2, None, 1), [1]),
    ("nothing pending", [], load(), Limits(3, 1, 10), []),
]


@pytest.mark.parametrize("pending, current, limits, expected", [case[1:] for case in SCHEDULE_CASES],
                         ids=[case[0] for case in SCHEDULE_CASES])
def test_schedule(pending, current, limits, expected):
    assert schedule(pending, current, limits) == expected


def test_load_counts_every_replica_of_a_reassigning_partition_and_bytes_per_new_replica():
    ongoing = {("t", 0): {"replicas": [3, 1, 2], "adding": [3], "removing": [2]},
               ("t", 1): {"replicas": [4, 5, 1], "adding": [4, 5], "removing": [1]}}
    result = load_of(ongoing, {("t", 0): 10, ("t", 1): 7})
    assert (result.partitions, result.bytes) == (2, 10 + 14)
    assert result.per_broker == Counter({1: 2, 2: 1, 3: 1, 4: 1, 5: 1})


@pytest.mark.parametrize("order, expected", [(FILE, [1, 2, 3]), (SMALLEST, [2, 3, 1]), (LARGEST, [1, 3, 2])],
                         ids=["file", "smallest", "largest"])
def test_order(order, expected):
    candidates = [c(1, {1}, 30), c(2, {1}, 10), c(3, {1}, 10 if order != LARGEST else 20)]
    assert [x.key for x in ordered(candidates, order)] == expected


M = Move("t", 0, (1, 2), (3, 2))
ONGOING_OURS = {"replicas": [3, 2, 1], "adding": [3], "removing": [1]}
ONGOING_OTHER = {"replicas": [4, 2, 1], "adding": [4], "removing": [1]}
STATE_CASES = [
    # id, submitted, current replicas, ongoing row, refusal of its latest refused submission, expected state
    ("never submitted, at the sources", False, [1, 2], None, None, PlanPartitionState.PENDING),
    ("submitted, reassigning to our target", True, [3, 2, 1], ONGOING_OURS, None, PlanPartitionState.IN_FLIGHT),
    ("submitted, completed", True, [3, 2], None, None, PlanPartitionState.DONE),
    ("already at the target, never submitted", False, [3, 2], None, None, PlanPartitionState.DONE),
    ("someone else reassigns it", False, [4, 2, 1], ONGOING_OTHER, None, PlanPartitionState.LEFT_ALONE),
    ("someone else reassigns it after we did (--additional)", True, [4, 2, 1], ONGOING_OTHER, None, PlanPartitionState.LEFT_ALONE),
    ("someone else reassigns it to our target", False, [3, 2, 1], ONGOING_OURS, None, PlanPartitionState.LEFT_ALONE),
    ("submitted, then cancelled: back on the sources", True, [1, 2], None, None, PlanPartitionState.CANCELLED),
    ("submitted, finished, the metadata still shows the reassignment's replicas", True, [3, 2, 1], None, None, PlanPartitionState.IN_FLIGHT),
    ("submitted, cancelled to a subset of its replicas: not finishing", True, [2], None, None, PlanPartitionState.CANCELLED),
    ("someone else moved it before we submitted", False, [4, 2], None, None, PlanPartitionState.LEFT_ALONE),
    ("the topic was deleted before we submitted", False, None, None, None, PlanPartitionState.FAILED),
    ("the topic was deleted while it moved", True, None, None, None, PlanPartitionState.FAILED),
    ("refused for good: a target broker not registered", False, [1, 2], None, "InvalidReplicationAssignmentError", PlanPartitionState.FAILED),
    ("refused for good: unknown to the controller", False, [1, 2], None, "UnknownTopicOrPartitionError", PlanPartitionState.FAILED),
    ("refused for a while (someone reassigned it meanwhile): pending again", False, [1, 2], None,
     "ReassignmentInProgressError", PlanPartitionState.PENDING),
    ("refused without an answer: pending again", False, [1, 2], None, "no answer", PlanPartitionState.PENDING),
    ("refused for good earlier, accepted by a later wave", True, [3, 2, 1], ONGOING_OURS, "UnknownTopicOrPartitionError",
     PlanPartitionState.IN_FLIGHT),
    ("refused for good, then at its target anyway", False, [3, 2], None, "InvalidReplicationAssignmentError", PlanPartitionState.DONE),
    ("refused for good, then someone else reassigns it", False, [4, 2, 1], ONGOING_OTHER,
     "InvalidReplicationAssignmentError", PlanPartitionState.LEFT_ALONE),
]


@pytest.mark.parametrize("submitted, current, ongoing, refusal, expected", [case[1:] for case in STATE_CASES],
                         ids=[case[0] for case in STATE_CASES])
def test_partition_state(submitted, current, ongoing, refusal, expected):
    state, reason = classify(M, submitted, current, ongoing, refusal)
    assert state == expected and reason


D = Move("t", 0, (1, 2), (1, 2), ("/b", "any"))  # broker 1's replica into its log dir /b, on the same brokers
DB = Move("t", 0, (1, 2), (3, 2), ("/b", "any"))  # 1,2 -> 3,2, the new replica on broker 3 in /b
DIR_STATE_CASES = [
    # id, move, submitted, current replicas, ongoing row, brokers not yet in their named dir, expected state
    ("between dirs, never submitted", D, False, [1, 2], None, {1}, PlanPartitionState.PENDING),
    ("between dirs, submitted: its future log copies", D, True, [1, 2], None, {1}, PlanPartitionState.IN_FLIGHT),
    ("between dirs, submitted, in its dir", D, True, [1, 2], None, set(), PlanPartitionState.DONE),
    ("between dirs, already in its dir, never submitted", D, False, [1, 2], None, set(), PlanPartitionState.DONE),
    ("between dirs, submitted, then someone moved the replicas", D, True, [4, 2], None, {1}, PlanPartitionState.CANCELLED),
    ("between brokers with a dir: reassigning", DB, True, [3, 2, 1], ONGOING_OURS, {3}, PlanPartitionState.IN_FLIGHT),
    ("between brokers with a dir: at the target, copying between dirs", DB, True, [3, 2], None, {3}, PlanPartitionState.IN_FLIGHT),
    ("between brokers with a dir: at the target, in its dir", DB, True, [3, 2], None, set(), PlanPartitionState.DONE),
    ("between brokers with a dir: someone else moved it, not into the dir", DB, False, [3, 2], None, {3},
     PlanPartitionState.LEFT_ALONE),
]


@pytest.mark.parametrize("move, submitted, current, ongoing, misplaced, expected", [case[1:] for case in DIR_STATE_CASES],
                         ids=[case[0] for case in DIR_STATE_CASES])
def test_partition_state_with_log_dirs(move, submitted, current, ongoing, misplaced, expected):
    state, reason = classify(move, submitted, current, ongoing, None, frozenset(misplaced))
    assert state == expected and reason


DIR_LOAD_CASES = [
    # id, ongoing, between dirs {(t, p): {broker: bytes}}, still throttled, expected (partitions, per broker, bytes)
    ("a move between log dirs holds a slot, its broker and the log it copies", {}, {("t", 0): {1: 30}}, set(),
     (1, {1: 1}, 30)),
    ("two brokers copying one partition between dirs", {}, {("t", 0): {1: 30, 2: 30}}, set(), (1, {1: 1, 2: 1}, 60)),
    ("reassigning and copying between dirs: one partition, each broker once",
     {("t", 0): {"replicas": [3, 1, 2], "adding": [3], "removing": [2]}}, {("t", 0): {1: 5, 3: 0}}, set(),
     (1, {1: 1, 2: 1, 3: 1}, 10 + 5)),
    ("a reassignment beside a move between dirs of another partition",
     {("t", 0): {"replicas": [3, 1], "adding": [3], "removing": [1]}}, {("u", 0): {1: 7}}, set(), (2, {1: 2, 3: 1}, 17)),
    ("finished but still throttled, beside a move between dirs", {}, {("u", 0): {1: 7}}, {("t", 1)}, (2, {1: 1}, 7)),
]


@pytest.mark.parametrize("ongoing, between, still, expected", [case[1:] for case in DIR_LOAD_CASES],
                         ids=[case[0] for case in DIR_LOAD_CASES])
def test_load_counts_moves_between_log_dirs(ongoing, between, still, expected):
    result = load_of(ongoing, {("t", 0): 10}, frozenset(still), between)
    assert (result.partitions, dict(+result.per_broker), result.bytes) == expected


def log(broker, log_dir, size=100, future=False, partition=0):
    return {"broker": broker, "log_dir": log_dir, "topic": "t", "partition": partition, "size": size,
            "is_future": future}


PLACEMENT_CASES = [
    # id, move, DescribeLogDirs rows, (misplaced, copies, to place, candidate brokers, candidate bytes) - the leader's
    # log is 10 bytes
    ("between dirs, not started: only its broker, its own log", D, [log(1, "/a"), log(2, "/a")],
     ({1}, {1: 100}, {("t", 0, 1): "/b"}, {1}, 100)),
    ("between dirs, copying: nothing to start", D, [log(1, "/a"), log(1, "/b", 40, True), log(2, "/a")],
     ({1}, {1: 100}, {}, {1}, 100)),
    ("between dirs, copying into another dir: started again into the named one", D,
     [log(1, "/a"), log(1, "/c", 40, True)], ({1}, {1: 100}, {("t", 0, 1): "/b"}, {1}, 100)),
    ("between dirs, done", D, [log(1, "/b"), log(2, "/a")], (set(), {}, {}, set(), 0)),
    ("broker 1 did not answer: not placed, nothing started there", D, [log(2, "/a")], ({1}, {}, {}, set(), 0)),
    ("between brokers, the new replica not created yet: copies nothing between dirs", DB, [log(1, "/a"), log(2, "/a")],
     ({3}, {}, {}, {1, 2, 3}, 10)),
    ("between brokers, the new replica created in another dir", DB, [log(1, "/a"), log(2, "/a"), log(3, "/a", 0)],
     ({3}, {3: 0}, {("t", 0, 3): "/b"}, {1, 2, 3}, 10)),
    ("between brokers, a staying replica changes dir too", Move("t", 0, (1, 2), (3, 2), ("any", "/b")),
     [log(1, "/a"), log(2, "/a")], ({2}, {2: 100}, {("t", 0, 2): "/b"}, {1, 2, 3}, 110)),
]


@pytest.mark.parametrize("move, rows, expected", [case[1:] for case in PLACEMENT_CASES],
                         ids=[case[0] for case in PLACEMENT_CASES])
def test_what_a_move_between_log_dirs_still_has_to_do(move, rows, expected):
    logs = logs_of(rows)
    away, copying, start, brokers, size = expected
    assert misplaced(move, logs) == frozenset(away)
    assert copies(move, logs) == copying
    assert to_place(move, logs) == start
    assert candidate(move, {("t", 0): 10}, logs) == Candidate(("t", 0), frozenset(brokers), size)


def test_every_future_log_counts_whoever_started_it():
    rows = [log(1, "/a"), log(1, "/b", 40, True), log(2, "/a", 7, partition=1), log(2, "/b", 1, True, partition=1),
            log(3, "/a", partition=2)]
    assert between_dirs(rows) == {("t", 0): {1: 100}, ("t", 1): {2: 7}}


SETTLED_CASES = [
    # id, partition counts, settled (the plan is done), not moved
    ("every partition done", {PlanPartitionState.DONE: 3}, True, {}),
    ("failed ones never hold the plan", {PlanPartitionState.DONE: 2, PlanPartitionState.FAILED: 1}, True, {PlanPartitionState.FAILED: 1}),
    ("failed, cancelled and left alone", {PlanPartitionState.FAILED: 1, PlanPartitionState.CANCELLED: 1, PlanPartitionState.LEFT_ALONE: 1}, True,
     {PlanPartitionState.FAILED: 1, PlanPartitionState.CANCELLED: 1, PlanPartitionState.LEFT_ALONE: 1}),
    ("one pending holds it", {PlanPartitionState.DONE: 2, PlanPartitionState.FAILED: 1, PlanPartitionState.PENDING: 1}, False, {PlanPartitionState.FAILED: 1, PlanPartitionState.PENDING: 1}),
    ("one in flight holds it", {PlanPartitionState.IN_FLIGHT: 1}, False, {PlanPartitionState.IN_FLIGHT: 1}),
    ("zero counts are nothing", {PlanPartitionState.PENDING: 0, PlanPartitionState.IN_FLIGHT: 0, PlanPartitionState.DONE: 1, PlanPartitionState.FAILED: 0}, True, {}),
]


@pytest.mark.parametrize("counts, expected_settled, expected_not_moved", [case[1:] for case in SETTLED_CASES],
                         ids=[case[0] for case in SETTLED_CASES])
def test_plan_settles_with_failed_partitions(counts, expected_settled, expected_not_moved):
    assert settled(counts) is expected_settled
    assert not_moved(counts) == expected_not_moved


# ---- properties over generated plans ----

BROKERS = st.integers(1, 6)
candidates = st.lists(st.tuples(st.frozensets(BROKERS, min_size=2, max_size=4), st.integers(0, 50)), max_size=25).map(
    lambda rows: [Candidate(i, brokers, size) for i, (brokers, size) in enumerate(rows)])
limits = st.builds(Limits, st.integers(1, 8), st.none() | st.integers(1, 4), st.none() | st.integers(1, 120))
loads = st.builds(lambda n, brokers, size: Load(n, Counter(brokers), size), st.integers(0, 6),
                  st.lists(BROKERS, max_size=8), st.integers(0, 80))


def after(current, chosen):
    for candidate in chosen:
        current = current.plus(candidate)
    return current


@settings(max_examples=100, deadline=None)
@given(candidates, loads, limits)
def test_limits_never_exceeded_by_what_it_submits(pending, current, limit):
    chosen = [x for x in pending if x.key in set(schedule(pending, current, limit))]
    result = after(current, chosen)
    if chosen:
        assert result.partitions <= limit.partitions_in_flight
    if limit.moves_per_broker is not None:
        for broker in {b for x in chosen for b in x.brokers}:
            assert result.per_broker[broker] <= limit.moves_per_broker
    if limit.bytes_in_flight is not None and chosen:
        alone = current.partitions == 0 and current.bytes == 0 and len(chosen) == 1
        assert result.bytes <= limit.bytes_in_flight or alone


@settings(max_examples=100, deadline=None)
@given(candidates, limits)
def test_progress_whenever_something_can_move(pending, limit):
    chosen = schedule(pending, Load(), limit)
    assert bool(chosen) == bool(pending)
    if pending:
        assert chosen[0] == pending[0].key  # the head goes first on an idle cluster


@settings(max_examples=60, deadline=None)
@given(candidates, limits, st.randoms(use_true_random=False))
def test_every_partition_is_submitted_while_moves_keep_completing(pending, limit, rng):
    """Simulated plan: each step some in-flight moves complete (at least one); every partition is
    submitted within as many steps as there are partitions, plus one."""
    in_flight, waiting, steps = [], list(pending), 0
    while waiting:
        steps += 1
        assert steps <= len(pending) + 1, f"starved: {[x.key for x in waiting]}"
        if in_flight:
            finished = set(rng.sample(range(len(in_flight)), rng.randint(1, len(in_flight))))
            in_flight = [x for i, x in enumerate(in_flight) if i not in finished]
        current = after(Load(), in_flight)
        chosen = set(schedule(waiting, current, limit))
        in_flight += [x for x in waiting if x.key in chosen]
        waiting = [x for x in waiting if x.key not in chosen]


@pytest.mark.parametrize("ongoing, still_throttled, expected", [
    ({}, set(), 0),
    ({("t", 0): {"replicas": [1, 2], "adding": [2]}}, set(), 1),
    ({("t", 0): {"replicas": [1, 2], "adding": [2]}}, {("t", 1)}, 2),
    ({("t", 0): {"replicas": [1, 2], "adding": [2]}}, {("t", 0)}, 1),  # still reassigning: counted once
], ids=["nothing", "one-moving", "one-moving-one-finished-still-throttled", "no-double-count"])
def test_partitions_still_throttled_hold_a_slot(ongoing, still_throttled, expected):
    assert load_of(ongoing, {}, frozenset(still_throttled)).partitions == expected
