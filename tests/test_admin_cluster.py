"""KafkaClusterAdmin calls whose answers the progress depends on, checked against the real cluster."""

import threading
import time

import pytest
from kafka import TopicPartition

from streaming.cluster.admin import KafkaClusterAdmin

pytestmark = pytest.mark.cluster

RECORD_BYTES = 1_000


@pytest.fixture
def offsets_topic(cluster, clean):
    """Partition 0 led by broker 1 with 5 records, the first 2 deleted; partition 1 led by broker 2 with 3."""
    topic = cluster.create_topic(cluster.unique_topic("offsets"), {0: [1], 1: [2]})
    clean.append(topic)
    cluster.produce(topic, [0], 5 * RECORD_BYTES / 1_000_000, RECORD_BYTES)
    cluster.produce(topic, [1], 3 * RECORD_BYTES / 1_000_000, RECORD_BYTES)
    admin = cluster.admin()
    try:
        admin.delete_records({TopicPartition(topic, 0): 2})
    finally:
        admin.close()
    return topic


OFFSETS_CASES = [
    # id, leaders given for partitions 0 and 1 (None: not asked), expected {partition: (log_start, log_end,
    # local_log_start)}: without tiered storage the local log starts at the log start, records deleted or not
    ("both-partitions", {0: 1, 1: 2}, {0: (2, 5, 2), 1: (0, 3, 0)}),
    ("one-partition", {1: 2}, {1: (0, 3, 0)}),
    ("wrong-leader-left-out", {0: 3, 1: 2}, {1: (0, 3, 0)}),
    ("nothing-asked", {}, {}),
]


@pytest.mark.parametrize("leaders, expected", [pytest.param(l, e, id=i) for i, l, e in OFFSETS_CASES])
def test_list_offsets_reads_log_start_and_end_from_the_given_leaders(cluster, offsets_topic, leaders, expected):
    admin = KafkaClusterAdmin(cluster.bootstrap)
    try:
        rows = admin.list_offsets({(offsets_topic, p): leader for p, leader in leaders.items()})
    finally:
        admin.close()
    assert {r["partition"]: (r["log_start"], r["log_end"], r["local_log_start"]) for r in rows} == expected
    assert all(r["topic"] == offsets_topic for r in rows)


def test_records_came_waits_for_a_record_and_says_when_one_came(cluster, clean):
    """The ownership watch's call (the quiet controller's wake-up): False after waiting when nothing was written, True
    as soon as a record is, long before its wait is over, and False again once it was told."""
    topic = cluster.create_topic(cluster.unique_topic("watched"), {0: [1]})
    clean.append(topic)
    admin = KafkaClusterAdmin(cluster.bootstrap)
    try:
        assert admin.records_came(topic, 0, 1.0) is False  # starts at the end: nothing written since
        answers = []
        watch = threading.Thread(target=lambda: answers.append((admin.records_came(topic, 0, 20.0), time.monotonic())))
        watch.start()
        time.sleep(1.0)
        written = time.monotonic()
        cluster.produce(topic, [0], RECORD_BYTES / 1_000_000, RECORD_BYTES)
        watch.join(30)
        came, at = answers[0]
        assert came and at - written < 10.0, (came, at - written)
        started = time.monotonic()
        assert admin.records_came(topic, 0, 1.0) is False
        assert time.monotonic() - started >= 0.9  # it waited for one
    finally:
        admin.close()
