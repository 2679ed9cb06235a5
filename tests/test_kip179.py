"""streaming.core.kip179: the status of every listed replica, on one plain-data cluster with every situation."""

import pytest

from streaming.core.kip179 import (BEHIND_UNKNOWN, IN_SYNC, NOT_HOSTED, UNKNOWN_BROKER, UNKNOWN_PARTITION,
                              UNKNOWN_TOPIC, behind, listed, listed_replicas, ongoing_replicas, statuses)
from streaming.core.kip179 import FACT_KINDS
from streaming.vocabulary.columns import from_rows as columns_of
from streaming.vocabulary.reassignment_file import PartitionMove
from streaming.vocabulary.snapshot import from_rows


def log(broker, partition, size, future=False, lag=0):
    return {"broker": broker, "log_dir": "/f" if future else "/d", "topic": "t", "partition": partition,
            "size": size, "offset_lag": lag, "is_future": future}


def part(partition, leader, replicas, isr):
    return {"topic": "t", "partition": partition, "leader": leader, "replicas": replicas, "isr": isr}


# Brokers 1-3 alive; 4 registered but fenced (offline); 5 in a replica set but not registered (decommissioned).
SNAPSHOT = from_rows(
    5_000, "cluster",
    reassignments=[{"topic": "t", "partition": 0, "replicas": [2, 1], "adding": [2], "removing": [1]}],
    partitions=[
        part(0, 1, [2, 1], [1]),  # moving 1 -> 2, 40% copied
        part(1, 1, [1, 3], [1, 3]),  # steady, both in sync
        part(2, 3, [3, 1], [3]),  # steady, broker 1 fell out of the ISR
        part(3, -1, [4], [4]),  # its only broker is offline
        part(4, 3, [3], [3]),  # broker 3 moves its log to another dir (intra-broker)
        part(5, 1, [1, 5], [1]),  # one replica on a broker that no longer exists
        part(6, 1, [1, 2], [1]),  # empty leader log, follower caught up but not yet in the ISR
    ],
    log_dirs=[log(1, 0, 1000), log(2, 0, 400), log(1, 1, 1000), log(3, 1, 1000), log(3, 2, 2000), log(1, 2, 500),
              log(3, 4, 1000), log(3, 4, 250, future=True, lag=7), log(1, 5, 300), log(1, 6, 0), log(2, 6, 0)],
    brokers=[{"broker": b, "alive": b <= 3} for b in (1, 2, 3, 4)],
    log_dirs_answered=[{"broker": b} for b in (1, 2, 3)],
)

CASES = [
    # id, (topic, partition, broker) listed, status, state, moving
    ("adding-replica-behind", ("t", 0, 2), "Behind: 600 bytes (60.0%)", "COPYING", True),
    ("kept-replica-of-reassigning-partition", ("t", 0, 1), IN_SYNC, "IN_SYNC", False),
    ("completed-in-sync", ("t", 1, 3), IN_SYNC, "COMPLETED", False),
    ("completed-but-out-of-isr", ("t", 2, 1), "Behind: 1500 bytes (75.0%)", "COMPLETED", False),
    ("registered-broker-not-in-replicas", ("t", 1, 2), NOT_HOSTED, None, False),
    ("offline-broker-not-in-replicas", ("t", 1, 4), NOT_HOSTED, None, False),
    ("offline-broker-hosting-in-isr", ("t", 3, 4), BEHIND_UNKNOWN, "COMPLETED", False),
    ("unregistered-broker-hosting", ("t", 5, 5), BEHIND_UNKNOWN, "COMPLETED", False),
    ("unknown-broker", ("t", 1, 9), UNKNOWN_BROKER, None, False),
    ("unknown-partition", ("t", 9, 1), UNKNOWN_PARTITION, None, False),
    ("unknown-topic", ("nope", 0, 1), UNKNOWN_TOPIC, None, False),
    ("unknown-topic-beats-unknown-broker", ("nope", 0, 9), UNKNOWN_TOPIC, None, False),
    ("unknown-partition-beats-unknown-broker", ("t", 9, 9), UNKNOWN_PARTITION, None, False),
    ("log-dir-move", ("t", 4, 3), "Behind: 750 bytes (75.0%)", "COPYING", True),
    ("empty-leader-log-caught-up", ("t", 6, 2), "Behind: 0 bytes (0.0%)", "COMPLETED", False),
]


def moves_for(replicas):
    """The reassignment file listing these replicas: one entry per partition, in order of first mention."""
    return [PartitionMove(t, p, tuple(b for tt, pp, b in replicas if (tt, pp) == (t, p)))
            for t, p in dict.fromkeys((t, p) for t, p, _ in replicas)]


def report_for(*replicas):
    return listed_replicas(moves_for(replicas), SNAPSHOT).rows()


@pytest.mark.parametrize("replica, status, state, moving", [pytest.param(r, s, st, m, id=i) for i, r, s, st, m in CASES])
def test_status_of_a_listed_replica(replica, status, state, moving):
    rows = report_for(replica)
    assert len(rows) == 1
    row = rows[0]
    assert (row["topic"], row["partition"], row["broker"]) == replica
    assert row["status"] == status
    assert row["state"] == state
    assert row["moving"] == moving


def test_the_whole_table_in_one_file_keeps_file_order():
    moves = moves_for([r for _, r, _, _, _ in CASES])
    rows = listed_replicas(moves, SNAPSHOT).rows()
    in_file_order = [(m.topic, m.partition, b) for m in moves for b in m.replicas]
    assert [(r["topic"], r["partition"], r["broker"]) for r in rows] == in_file_order
    expected = {r: s for _, r, s, _, _ in CASES}
    assert [r["status"] for r in rows] == [expected[r] for r in in_file_order]


def test_listed_replica_carries_the_core_numbers():
    row = report_for(("t", 0, 2))[0]
    assert (row["numerator"], row["denominator"], row["progress"], row["in_isr"]) == (400, 1000, 0.4, False)
    assert row["reassigning"]
    intra = report_for(("t", 4, 3))[0]
    assert intra["intra_broker"] and intra["offset_lag"] == 7


def test_unknown_rows_have_no_numbers():
    row = report_for(("nope", 0, 1))[0]
    assert row["numerator"] is None and row["denominator"] is None and row["progress"] is None


def test_ongoing_moves_without_a_file():
    rows = ongoing_replicas(SNAPSHOT).rows()
    assert sorted((r["topic"], r["partition"], r["broker"], r["intra_broker"]) for r in rows) == [
        ("t", 0, 2, False), ("t", 4, 3, True)]
    assert {r["status"] for r in rows} == {"Behind: 600 bytes (60.0%)", "Behind: 750 bytes (75.0%)"}
    assert all(r["moving"] for r in rows)


def test_nothing_moving_nothing_listed():
    quiet = from_rows(0, "c", brokers=[{"broker": 1, "alive": True}], log_dirs_answered=[{"broker": 1}])
    assert ongoing_replicas(quiet).rows() == []
    assert listed_replicas([], quiet).rows() == []
    assert listed([]) == []


BEHIND = [
    # id, numerator, denominator, progress, text
    ("half", 500, 1000, 0.5, "Behind: 500 bytes (50.0%)"),
    ("none-copied", 0, 3, 0.0, "Behind: 3 bytes (100.0%)"),
    ("empty-leader-log", 0, 1, 1.0, "Behind: 0 bytes (0.0%)"),
    ("terabytes", 10**12, 4 * 10**12, 0.25, "Behind: 3000000000000 bytes (75.0%)"),
    ("unknown-leader", 500, None, None, BEHIND_UNKNOWN),
    ("unknown-replica", None, 1000, None, BEHIND_UNKNOWN),
    ("silent-isr-member", None, 1000, 1.0, BEHIND_UNKNOWN),
]


@pytest.mark.parametrize("numerator, denominator, progress, text",
                         [pytest.param(n, d, p, t, id=i) for i, n, d, p, t in BEHIND])
def test_behind_text(numerator, denominator, progress, text):
    assert behind(numerator, denominator, progress) == text


PRECEDENCE = [
    # id, facts, status: every fact false-y except the ones named, in_isr true
    ("all-known-in-isr", {}, IN_SYNC),
    ("offline-isr-member", {"destination_alive": False}, "Behind: 100 bytes (10.0%)"),
    ("topic", {"topic_known": False, "partition_known": False, "broker_known": False, "hosted": False}, UNKNOWN_TOPIC),
    ("partition", {"partition_known": False, "broker_known": False, "hosted": False}, UNKNOWN_PARTITION),
    ("broker", {"broker_known": False, "hosted": False}, UNKNOWN_BROKER),
    ("unregistered-but-hosting", {"broker_known": False}, IN_SYNC),
    ("not-hosted", {"hosted": False}, NOT_HOSTED),
    ("log-dir-move-is-not-in-sync", {"intra_broker": True}, "Behind: 100 bytes (10.0%)"),
    ("out-of-isr", {"in_isr": False}, "Behind: 100 bytes (10.0%)"),
]


@pytest.mark.parametrize("facts, status", [pytest.param(f, s, id=i) for i, f, s in PRECEDENCE])
def test_status_precedence(facts, status):
    row = {"topic_known": True, "partition_known": True, "broker_known": True, "hosted": True, "in_isr": True,
           "destination_alive": True, "intra_broker": False, "numerator": 900, "denominator": 1000, "progress": 0.9,
           **facts}
    assert statuses(columns_of([row], FACT_KINDS)).tolist() == [status]
