"""KafkaClusterAdmin calls whose answers the progress depends on, checked against the real cluster."""

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
