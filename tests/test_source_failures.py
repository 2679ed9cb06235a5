"""A poll that fails becomes a reported poll error, never an exception out of the source."""

import json

import pyarrow as pa

from streaming.spark import codec
from streaming.spark.source import CLUSTER_BUCKET, POLL_TABLE, PollPartition, PollStreamReader


def test_unreachable_cluster_yields_one_poll_error_row():
    reader = PollStreamReader({"bootstrap": "127.0.0.1:1", "timeout": "1"})
    rows = pa.Table.from_batches(list(reader.read(PollPartition(7)))).to_pylist()
    assert [(r["poll_id"], r["bucket"], r["table"]) for r in rows] == [(7, CLUSTER_BUCKET, POLL_TABLE)]
    [facts] = codec.decode(rows[0]["payload"])
    errors = json.loads(facts["errors"])
    assert facts["cluster_id"] == "" and errors[0]["api"] == "DescribeCluster"
    assert "unreachable" in errors[0]["message"].lower()


def test_offsets_advance_one_poll_per_trigger():
    reader = PollStreamReader({"bootstrap": "127.0.0.1:1"})
    start = reader.initialOffset()
    assert reader.latestOffset(start, None) == {"poll": 1}
    assert reader.latestOffset({"poll": 41}, None) == {"poll": 42}
    assert [p.poll_id for p in reader.partitions({"poll": 41}, {"poll": 42})] == [42]
