"""The source on plain data and an unreachable cluster: how a poll is planned into parts, and a part that
fails becomes a reported poll error, never an exception out of the source."""

import json

import pyarrow as pa
import pytest

from streaming import codec
from streaming.source import CLUSTER_BUCKET, POLL_TABLE, PollPartition, PollStreamReader, plan

UNREACHABLE = {"bootstrap": "127.0.0.1:1", "timeout": "1"}


def read_rows(partition):
    return pa.Table.from_batches(list(PollStreamReader(UNREACHABLE).read(partition))).to_pylist()


@pytest.mark.parametrize("partition, api", [
    (PollPartition(7, 1000), "DescribeCluster"),
    (PollPartition(7, 1000, described=("c", [{"broker": 1, "alive": True}])), "DescribeCluster"),
    (PollPartition(7, 1000, broker=2), "DescribeLogDirs"),
], ids=["cluster-part", "cluster-part-planned", "log-dirs-part"])
def test_a_part_of_an_unreachable_cluster_yields_one_poll_error_row(partition, api):
    rows = read_rows(partition)
    assert [(r["poll_id"], r["ts_ms"], r["bucket"], r["table"]) for r in rows] == [(7, 1000, CLUSTER_BUCKET, POLL_TABLE)]
    facts = codec.decode(rows[0]["payload"]).iloc[0]
    errors = json.loads(facts["errors"])
    assert facts["cluster_id"] == "" and errors[0]["api"] == api
    assert "unreachable" in errors[0]["message"]


BROKERS = [{"broker": 1, "alive": True}, {"broker": 2, "alive": False}, {"broker": 3, "alive": True}]


@pytest.mark.parametrize("described, parts", [
    (("c", BROKERS), [None, 1, 3]),
    (None, [None]),
], ids=["cluster-part-and-one-per-alive-broker", "cluster-part-alone-when-undescribed"])
def test_plan(described, parts):
    planned = plan(42, 1000, described)
    assert [p.broker for p in planned] == parts
    assert {(p.poll_id, p.ts_ms) for p in planned} == {(42, 1000)}
    assert planned[0].described == described


def test_offsets_advance_one_poll_per_trigger_and_an_unreachable_cluster_plans_the_cluster_part_only():
    reader = PollStreamReader(UNREACHABLE)
    start = reader.initialOffset()
    assert reader.latestOffset(start, None) == {"poll": 1}
    assert reader.latestOffset({"poll": 41}, None) == {"poll": 42}
    assert [(p.poll_id, p.broker) for p in reader.partitions({"poll": 41}, {"poll": 42})] == [(42, None)]
