"""The pure progress core (streaming.core.measure, the partition rollup of streaming.core.rollups) on plain data:
a table of cases, then properties. Snapshots are built from row dicts and read as the core reads them, in
columns (streaming.core.snapshot_columns)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.core.measure import (KEY_KINDS, REPLICA_COLUMNS, finished_replicas, remote_bytes, replica_progress,
                                    unreported_moves, with_states)
from streaming.core.rollups import partition_rollup
from streaming.core.snapshot_columns import from_snapshot
from streaming.vocabulary.columns import from_rows as columns_of
from streaming.vocabulary.snapshot import from_rows
from streaming.vocabulary.states import ReplicaState


def progress(snapshot):
    """replica_progress of a row snapshot, as columns."""
    return replica_progress(from_snapshot(snapshot))

TOPIC = "t"
LEADER_BYTES = 1000


def move(*, leader_bytes=LEADER_BYTES, copied=None, isr=(1,), alive=(1, 2, 3), answered=None, offsets=None,
         extra_log_dirs=(), reassigning=True):
    """One partition t-0 moving from broker 1 (leader) to broker 2; `copied=None` means broker 2 holds no
    log yet. Brokers not alive do not answer DescribeLogDirs (the poller does not ask them)."""
    answered = set(alive) if answered is None else set(answered)
    log_dirs = [{"broker": 1, "log_dir": "/d1", "topic": TOPIC, "partition": 0, "size": leader_bytes,
                 "offset_lag": 0, "is_future": False}]
    if copied is not None:
        log_dirs.append({"broker": 2, "log_dir": "/d2", "topic": TOPIC, "partition": 0, "size": copied,
                         "offset_lag": 0, "is_future": False})
    log_dirs = [r for r in log_dirs if r["broker"] in answered] + list(extra_log_dirs)
    return from_rows(
        1_000, "cluster",
        reassignments=[{"topic": TOPIC, "partition": 0, "replicas": [2, 1], "adding": [2], "removing": [1]}]
        if reassigning else [],
        partitions=[{"topic": TOPIC, "partition": 0, "leader": 1 if 1 in alive else -1, "replicas": [2, 1],
                     "isr": list(isr)}],
        log_dirs=log_dirs,
        offsets=[offsets] if offsets else [],
        brokers=[{"broker": b, "alive": b in alive} for b in (1, 2, 3)],
        log_dirs_answered=[{"broker": b} for b in answered])


def only_row(snapshot):
    rows = with_states(progress(snapshot)).rows()
    assert len(rows) == 1, rows
    return rows[0]


NULL = None
CASES = [
    # id, snapshot, expected (numerator, denominator, progress, in_isr, state)
    pytest.param(move(copied=None), (0, 1000, 0.0, False, "PENDING"), id="pending-no-log-yet"),
    pytest.param(move(copied=0), (0, 1000, 0.0, False, "PENDING"), id="pending-empty-log"),
    pytest.param(move(copied=400), (400, 1000, 0.4, False, "COPYING"), id="copying"),
    pytest.param(move(copied=1200), (1200, 1000, 1.0, False, "COPYING"), id="copying-beyond-leader-capped"),
    pytest.param(move(copied=900, isr=(1, 2)), (900, 1000, 1.0, True, "IN_SYNC"), id="in-isr-is-complete"),
    pytest.param(move(copied=400, alive=(2, 3)), (400, NULL, NULL, False, "BROKER_OFFLINE"), id="leader-offline"),
    pytest.param(move(copied=400, alive=(1, 3)), (NULL, 1000, NULL, False, "BROKER_OFFLINE"),
                 id="destination-offline"),
    # Registered and unfenced but its DescribeLogDirs failed: a broker killed a moment ago, before the
    # controller fenced it. Its bytes are unknown, not zero, and it is offline for this poll, never PENDING.
    pytest.param(move(copied=400, answered=(1, 3)), (NULL, 1000, NULL, False, "BROKER_OFFLINE"),
                 id="destination-did-not-answer"),
    pytest.param(move(copied=400, answered=(2, 3)), (400, NULL, NULL, False, "BROKER_OFFLINE"),
                 id="leader-did-not-answer"),
    pytest.param(move(leader_bytes=0, copied=0), (0, 1, 1.0, False, "PENDING"), id="empty-leader-log"),
    pytest.param(move(leader_bytes=0, copied=0, isr=(1, 2)), (0, 1, 1.0, True, "IN_SYNC"),
                 id="empty-leader-log-in-isr"),
]


@pytest.mark.parametrize("snapshot, expected", CASES)
def test_replica_progress(snapshot, expected):
    row = only_row(snapshot)
    numerator, denominator, progress, in_isr, state = expected
    assert row["numerator"] == numerator
    assert row["denominator"] == denominator
    assert row["progress"] == pytest.approx(progress)
    assert row["in_isr"] == in_isr
    assert row["state"] == state
    assert (row["topic"], row["partition"], row["broker"], row["intra_broker"]) == (TOPIC, 0, 2, False)


def test_messages_behind_estimate_is_the_missing_share_of_the_offset_span():
    row = only_row(move(copied=400, offsets={"topic": TOPIC, "partition": 0, "log_start": 100, "log_end": 1100}))
    assert row["messages_behind_estimate"] == pytest.approx(0.6 * 1000)


def test_messages_behind_estimate_is_null_without_offsets():
    assert only_row(move(copied=400))["messages_behind_estimate"] is None


def offsets(log_start, log_end, local_log_start):
    return {"topic": TOPIC, "partition": 0, "log_start": log_start, "log_end": log_end,
            "local_log_start": local_log_start}


# Tiered storage (KIP-405): the leader's DescribeLogDirs size is its local log (LEADER_BYTES = 1000 over the local
# offsets), a new replica copies only that, and the offsets below the local log start are in remote storage.
TIERED_CASES = [
    # id, offsets, copied, expected (progress, messages_behind_estimate, remote_bytes)
    pytest.param(offsets(0, 1000, 0), 400, (0.4, 600.0, 0), id="no-tiered-storage"),
    pytest.param(offsets(0, 1000, None), 400, (0.4, 600.0, None), id="local-start-unknown-old-broker"),
    pytest.param(offsets(0, 4000, 3000), 400, (0.4, 600.0, 3000), id="older-segments-remote"),
    pytest.param(offsets(3762, 4000, 3762), 0, (0.0, 238.0, 0), id="remote-expired-too"),
    pytest.param(offsets(0, 4000, 3000), 1000, (1.0, 0.0, 3000), id="copied-the-local-log"),
    pytest.param(offsets(0, 4000, 4000), 0, (0.0, 0.0, None), id="local-log-empty-cannot-measure"),
    pytest.param(offsets(100, 4100, 1100), 250, (0.25, 2250.0, 333), id="a-third-of-a-byte-per-offset"),
]


@pytest.mark.parametrize("offsets_row, copied, expected", TIERED_CASES)
def test_tiered_storage_counts_only_the_local_log(offsets_row, copied, expected):
    row = only_row(move(copied=copied, offsets=offsets_row))
    share, behind, remote = expected
    assert row["denominator"] == LEADER_BYTES  # the target is the local log: remote bytes are never copied
    assert row["progress"] == pytest.approx(share)
    assert row["messages_behind_estimate"] == pytest.approx(behind)
    assert row["remote_bytes"] == (None if remote is None else pytest.approx(remote, abs=1))


@pytest.mark.parametrize("leader_size, log_start, local_log_start, log_end, expected", [
    (2_382_871, 0, 3762, 4000, 2_382_871 / 238 * 3762),  # measured on Kafka 4.1.1: 40 MB, ~2.4 MB local
    (1000, 5, 5, 10, 0.0),
    (1000, 0, 10, 10, None),  # nothing local to measure bytes per offset by
    (None, 0, 10, 20, None),
    (1000, None, 10, 20, None),
    (1000, 0, None, 20, None),
    (1000, 10, 5, 20, None),  # a local start below the log start: offsets of two different answers
], ids=["measured-4.1.1", "all-local", "empty-local-log", "leader-size-unknown", "log-start-unknown",
        "local-start-unknown", "inconsistent"])
def test_remote_bytes_estimate(leader_size, log_start, local_log_start, log_end, expected):
    value = float(remote_bytes(*(np.array([np.nan if v is None else v], float)
                                 for v in (leader_size, log_start, local_log_start, log_end)))[0])
    assert (value != value) if expected is None else value == pytest.approx(expected)


def test_intra_broker_future_log_reports_offset_lag():
    future = [{"broker": 3, "log_dir": "/a", "topic": "u", "partition": 5, "size": 2000, "offset_lag": 0,
               "is_future": False},
              {"broker": 3, "log_dir": "/b", "topic": "u", "partition": 5, "size": 500, "offset_lag": 42,
               "is_future": True}]
    rows = with_states(progress(move(copied=400, extra_log_dirs=future))).rows()
    intra = next(row for row in rows if row["intra_broker"])
    assert (intra["topic"], intra["partition"], intra["broker"], intra["leader"]) == ("u", 5, 3, 3)
    assert (intra["numerator"], intra["denominator"], intra["progress"]) == (500, 2000, 0.25)
    assert intra["offset_lag"] == 42
    assert intra["state"] == "COPYING"
    assert len(rows) == 2  # and the inter-broker move is still there


def test_the_poll_keeps_the_current_log_an_intra_broker_move_copies():
    """A move between log dirs alone is not in ListPartitionReassignments: the poll's filter kept only its future
    log, so its target (the current log) was unknown on real brokers and it never had progress."""
    from streaming.cluster.poller import relevant_log_dirs

    logs = [{"broker": 1, "log_dir": "/a", "topic": "u", "partition": 0, "size": 2000, "offset_lag": 0,
             "is_future": False},
            {"broker": 1, "log_dir": "/b", "topic": "u", "partition": 0, "size": 500, "offset_lag": 42,
             "is_future": True},
            {"broker": 1, "log_dir": "/a", "topic": "idle", "partition": 0, "size": 9, "offset_lag": 0,
             "is_future": False}]
    polled = relevant_log_dirs(from_rows(0, "c", reassignments=[], log_dirs=logs, log_dirs_answered=[{"broker": 1}]))
    assert [(r["topic"], r["is_future"]) for r in polled["log_dirs"]] == [("u", False), ("u", True)]
    [intra] = progress(polled).rows()
    assert (intra["numerator"], intra["denominator"], intra["progress"]) == (500, 2000, 0.25)


FINISHED_CASES = [
    # id, replica set after the move left ListPartitionReassignments (None: topic deleted), expected state
    pytest.param([2], "COMPLETED", id="completed"),
    pytest.param([2, 1], "COMPLETED", id="completed-wider-set"),
    pytest.param([1], "CANCELLED", id="cancelled-reverted"),
    pytest.param(None, "CANCELLED", id="topic-deleted"),
]


@pytest.mark.parametrize("replicas_after, state", FINISHED_CASES)
def test_finished_moves(replicas_after, state):
    tracked = progress(move(copied=400))
    after = from_rows(2_000, "cluster", partitions=[] if replicas_after is None else [
        {"topic": TOPIC, "partition": 0, "leader": replicas_after[0], "replicas": replicas_after, "isr": replicas_after}],
        brokers=[{"broker": b, "alive": True} for b in (1, 2, 3)],
        log_dirs_answered=[{"broker": b} for b in (1, 2, 3)])
    after = from_snapshot(after)
    gone = with_states(finished_replicas(tracked, after, replica_progress(after))).rows()
    assert len(gone) == 1
    assert gone[0]["state"] == state
    assert gone[0]["finished"] is True


@pytest.mark.parametrize("adding, tracked_brokers, keys", [
    ([2, 3], [], [2, 3]),
    ([2, 3], [3], [2]),  # the state tracks broker 3's move already: finished_replicas reports it from there
    ([], [], []),  # a move that only drops replicas has no replica move to report
    ([None, 2], [], [2]),
], ids=["new", "tracked-already", "adds-none", "null-broker"])
def test_unreported_moves_are_the_replicas_being_added_the_state_does_not_track(adding, tracked_brokers, keys):
    snapshot = from_rows(1_000, "cluster", unreported_reassignments=[
        {"topic": TOPIC, "partition": 0, "replicas": [1, 2, 3], "adding": adding, "removing": [1]}])
    tracked = columns_of([{"topic": TOPIC, "partition": 0, "broker": b, "intra_broker": False} for b in tracked_brokers],
                         KEY_KINDS)
    assert unreported_moves(from_snapshot(snapshot), tracked).rows() == [
        {"topic": TOPIC, "partition": 0, "broker": b, "intra_broker": False} for b in keys]


def test_a_move_still_under_way_is_not_finished():
    tracked = progress(move(copied=400))
    after = from_snapshot(move(copied=600))
    assert len(finished_replicas(tracked, after, replica_progress(after))) == 0


# Properties over random partitions: leader bytes, copied bytes, ISR membership, liveness, answers.
partition_case = st.fixed_dictionaries({
    "leader_bytes": st.integers(0, 10**12),
    "copied": st.one_of(st.none(), st.integers(0, 10**12)),
    "destinations": st.sets(st.sampled_from([2, 3, 4]), min_size=1, max_size=3),
    "in_isr": st.sets(st.sampled_from([2, 3, 4])),
})
cluster_case = st.fixed_dictionaries({
    "partitions": st.lists(partition_case, min_size=1, max_size=6),
    "alive": st.sets(st.sampled_from([1, 2, 3, 4]), min_size=1),
    "silent": st.sets(st.sampled_from([1, 2, 3, 4])),
})


def random_snapshot(case):
    reassignments, partitions, log_dirs = [], [], []
    alive, answered = case["alive"], case["alive"] - case["silent"]
    for index, p in enumerate(case["partitions"]):
        destinations = sorted(p["destinations"])
        reassignments.append({"topic": "r", "partition": index, "replicas": destinations + [1], "adding": destinations,
                              "removing": [1]})
        partitions.append({"topic": "r", "partition": index, "leader": 1 if 1 in alive else -1,
                           "replicas": destinations + [1], "isr": [1] + sorted(p["in_isr"] & p["destinations"])})
        sizes = {1: p["leader_bytes"], **({d: p["copied"] for d in destinations} if p["copied"] is not None else {})}
        log_dirs += [{"broker": b, "log_dir": "/d", "topic": "r", "partition": index, "size": s, "offset_lag": 0,
                      "is_future": False} for b, s in sizes.items() if b in answered]
    brokers = [{"broker": b, "alive": b in alive} for b in (1, 2, 3, 4)]
    log_dirs_answered = [{"broker": b} for b in answered]
    return from_rows(0, "c", reassignments=reassignments, partitions=partitions, log_dirs=log_dirs, brokers=brokers,
                     log_dirs_answered=log_dirs_answered)


@settings(max_examples=60, deadline=None)
@given(cluster_case)
def test_progress_properties(case):
    rows = progress(random_snapshot(case)).rows()
    assert all(list(row) == REPLICA_COLUMNS for row in rows)
    assert all(0 <= row["progress"] <= 1 for row in rows if row["progress"] is not None)
    assert all(row["progress"] == 1.0 for row in rows if row["in_isr"])
    assert all(row["denominator"] >= 1 for row in rows if row["denominator"] is not None)
    # A null denominator means progress cannot be known, unless ISR membership settles it.
    assert all(row["progress"] is None for row in rows if row["denominator"] is None and not row["in_isr"])


@settings(max_examples=60, deadline=None)
@given(cluster_case)
def test_partition_rollup_properties(case):
    columns = with_states(progress(random_snapshot(case)))
    replicas, partitions = columns.rows(), partition_rollup(columns).rows()
    assert len(partitions) == len(case["partitions"])
    for p in partitions:
        mine = [r for r in replicas if (r["topic"], r["partition"]) == (p["topic"], p["partition"])]
        totals = [r["denominator"] for r in mine]
        done = [total if r["in_isr"] else None if None in (r["numerator"], total) else min(r["numerator"], total)
                for r, total in zip(mine, totals)]
        assert p["bytes_total"] == pytest.approx(sum(t for t in totals if t is not None))
        assert p["bytes_done"] == pytest.approx(sum(d for d in done if d is not None))
        assert p["bytes_done"] <= p["bytes_total"]
        assert p["replicas"] == len(mine)
        assert p["state"] == max(ReplicaState[r["state"]] for r in mine).name


def test_remote_bytes_roll_up_as_the_partitions_and_add_up_per_topic():
    """A partition's replicas share its remote bytes (not added per replica); a topic's partitions add theirs up;
    the remote bytes are in neither the target nor the bytes done."""
    from streaming.core.rollups import topic_rollup

    offsets_rows = [{"topic": TOPIC, "partition": p, "log_start": 0, "log_end": 4000, "local_log_start": 3000}
                    for p in (0, 1)]
    log_dirs = [{"broker": b, "log_dir": "/d", "topic": TOPIC, "partition": p, "size": size, "offset_lag": 0,
                 "is_future": False} for p in (0, 1) for b, size in ((1, 1000), (2, 400), (3, 100))]
    snapshot = from_rows(
        1_000, "cluster",
        reassignments=[{"topic": TOPIC, "partition": p, "replicas": [1, 2, 3], "adding": [2, 3], "removing": []}
                       for p in (0, 1)],
        partitions=[{"topic": TOPIC, "partition": p, "leader": 1, "replicas": [1, 2, 3], "isr": [1]} for p in (0, 1)],
        log_dirs=log_dirs, offsets=offsets_rows, brokers=[{"broker": b, "alive": True} for b in (1, 2, 3)],
        log_dirs_answered=[{"broker": b} for b in (1, 2, 3)])
    partitions = partition_rollup(with_states(progress(snapshot)))
    assert [(p["remote_bytes"], p["bytes_total"], p["bytes_done"]) for p in partitions.rows()] == [
        (3000, 2000, 500), (3000, 2000, 500)]
    [topic] = topic_rollup(partitions).rows()
    assert (topic["remote_bytes"], topic["bytes_total"]) == (6000, 4000)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 10**6), st.integers(0, 10**9), st.integers(0, 10**9), st.integers(1, 10**9))
def test_remote_bytes_are_exact_for_records_of_one_size(record_bytes, log_start, remote_offsets, local_offsets):
    """Records of one size: the estimate is the bytes of the offsets below the local log start, exactly."""
    local_log_start = log_start + remote_offsets
    log_end = local_log_start + local_offsets
    [value] = remote_bytes(*(np.array([v], float) for v in (record_bytes * local_offsets, log_start, local_log_start,
                                                              log_end)))
    assert value == pytest.approx(record_bytes * remote_offsets, rel=1e-9)
