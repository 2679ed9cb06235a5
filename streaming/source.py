"""The streaming source: one micro-batch = one poll of the cluster (PySpark 4 Python data source API).

Where things run:
- Driver: `PollDataSource`, `PollStreamReader.initialOffset/latestOffset/partitions/commit`. Offsets are
  poll numbers ({"poll": n}); every trigger asks for one more, so the trigger interval is the poll rate
  and the checkpoint's offset log records how far the job got.
- Executors: `PollStreamReader.read(partition)` runs the poll. The reader is pickled to them, so it holds
  only its options; the admin client is created on first use and cached per worker process (module
  global), so consecutive batches reuse one connection.
Replay: after a restart Spark re-plans the last uncommitted batch; a live poll cannot be replayed, so
the replayed batch polls afresh. The sinks are written for that (records carry the batch id; a later
record for the same key and batch id supersedes an earlier one).

Rows: (poll_id, ts_ms, bucket, table, payload) where payload is an Arrow IPC slice of one snapshot table
(streaming.codec). Partition-keyed tables go to bucket hash(topic, partition) % buckets; every bucket
also gets the brokers table, so each bucket's state is visited every poll (finished moves are noticed
by their absence). Cluster-wide tables (throttles, all reassignments, poll facts) go to CLUSTER_BUCKET.
A failed poll yields only the poll-facts row with the error: reported, retried next trigger, never fatal.
"""

import json
import time

import pandas as pd
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from streaming import codec

SOURCE_NAME = "kafka_reassignment_poll"
SOURCE_SCHEMA = "poll_id long, ts_ms long, bucket int, table string, payload binary"
CLUSTER_BUCKET = -1
POLL_TABLE = "poll"  # one row of poll facts: cluster_id, requests, duration, errors
CLUSTER_TABLES = ("brokers", "reassignments", "topic_throttles", "broker_throttles")

_admins = {}  # per worker process: (bootstrap, command_config, timeout) -> KafkaClusterAdmin


def _admin_key(options):
    return options["bootstrap"], options.get("command_config") or None, float(options.get("timeout", "10"))


def _admin(options):
    from streaming.admin import KafkaClusterAdmin

    key = _admin_key(options)
    if key not in _admins:
        _admins[key] = KafkaClusterAdmin(key[0], key[1], key[2])
    return _admins[key]


def _drop_admin(options):
    admin = _admins.pop(_admin_key(options), None)
    if admin is not None:
        try:
            admin.close()
        except Exception:  # closing a broken client must not hide the poll error being reported
            pass


def poll_facts(cluster_id, ts_ms, requests, duration_s, errors):
    facts = {"cluster_id": cluster_id, "ts_ms": ts_ms, "requests": requests, "duration_s": duration_s,
             "errors": json.dumps([{"api": e.api, "message": e.message} for e in errors])}
    return codec.encode(pd.DataFrame([facts]))


def snapshot_rows(poll_id, snapshot, buckets):
    """The source rows of one snapshot (pure: the unit the source and its tests share)."""
    rows = []
    brokers = codec.encode_table("brokers", snapshot["brokers"])
    for bucket, tables in codec.split_by_bucket(snapshot, buckets).items():
        rows.append((poll_id, snapshot.ts_ms, bucket, "brokers", brokers))
        rows += [(poll_id, snapshot.ts_ms, bucket, name, codec.encode_table(name, frame))
                 for name, frame in tables.items()]
    rows += [(poll_id, snapshot.ts_ms, CLUSTER_BUCKET, name, codec.encode_table(name, snapshot[name]))
             for name in CLUSTER_TABLES]
    rows.append((poll_id, snapshot.ts_ms, CLUSTER_BUCKET, POLL_TABLE,
                 poll_facts(snapshot.cluster_id, snapshot.ts_ms, snapshot.requests, snapshot.duration_s,
                            snapshot.errors)))
    return rows


def failed_poll_rows(poll_id, ts_ms, api, error, duration_s):
    from streaming.snapshot import PollError

    facts = poll_facts("", ts_ms, 0, duration_s, [PollError(api, f"{type(error).__name__}: {error}")])
    return [(poll_id, ts_ms, CLUSTER_BUCKET, POLL_TABLE, facts)]


class PollPartition(InputPartition):
    def __init__(self, poll_id):
        super().__init__(poll_id)
        self.poll_id = poll_id


class PollStreamReader(DataSourceStreamReader):
    def __init__(self, options):
        self.options = dict(options)
        self.buckets = int(self.options.get("buckets", "16"))

    def initialOffset(self):
        return {"poll": 0}

    def latestOffset(self, start, limit):
        return {"poll": int(start["poll"]) + 1}  # one new poll per trigger

    def partitions(self, start, end):
        return [PollPartition(int(end["poll"]))]

    def read(self, partition):
        from streaming.poller import poll

        started = time.monotonic()
        ts_ms = int(time.time() * 1000)
        try:
            snapshot = poll(_admin(self.options), now_ms=ts_ms, all_partitions=True)
            rows = snapshot_rows(partition.poll_id, snapshot, self.buckets)
        except Exception as error:  # any failure becomes a reported poll error; the query lives on
            _drop_admin(self.options)
            rows = failed_poll_rows(partition.poll_id, ts_ms, "DescribeCluster", error, time.monotonic() - started)
        schema = pa.schema([("poll_id", pa.int64()), ("ts_ms", pa.int64()), ("bucket", pa.int32()),
                            ("table", pa.string()), ("payload", pa.binary())])
        return iter([pa.RecordBatch.from_pylist(
            [dict(zip(schema.names, row)) for row in rows], schema=schema)])

    def commit(self, end):
        pass


class PollDataSource(DataSource):
    """Options: bootstrap (required), command_config, timeout (s), buckets (state buckets, fixed for
    the life of a checkpoint)."""

    @classmethod
    def name(cls):
        return SOURCE_NAME

    def schema(self):
        return SOURCE_SCHEMA

    def streamReader(self, schema):
        return PollStreamReader(self.options)
