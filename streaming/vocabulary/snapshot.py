"""One poll of the cluster as plain typed tables (value types only; no logic, no I/O).

Every table is a pandas DataFrame with the columns and dtypes declared here, so the progress core
runs on it vectorized, the Spark source ships it as Arrow IPC, and tests build it from lists of dicts.
Every table except the broker-keyed ones is keyed by (topic, partition): the streaming job buckets rows
by that key and hands each bucket its own slice plus the whole broker-keyed tables. Each table holds
the answer of one admin API, so the parts of a poll, made concurrently, concatenate (`combine`).
"""

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa

INT_LIST = pa.list_(pa.int32())

# table name -> Arrow schema. The names are the table's identity everywhere (source rows, buckets, tests).
SCHEMAS = {
    # ListPartitionReassignments: one row per reassigning partition (KIP-455).
    "reassignments": pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("replicas", INT_LIST),
                                ("adding", INT_LIST), ("removing", INT_LIST)]),
    # Metadata: leader (-1 when none), replica set and ISR of each partition the poll asked about.
    "partitions": pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("leader", pa.int32()),
                             ("replicas", INT_LIST), ("isr", INT_LIST)]),
    # DescribeLogDirs: one row per (broker, log dir, partition); is_future marks an intra-broker move's target.
    "log_dirs": pa.schema([("broker", pa.int32()), ("log_dir", pa.string()), ("topic", pa.string()),
                           ("partition", pa.int32()), ("size", pa.int64()), ("offset_lag", pa.int64()),
                           ("is_future", pa.bool_())]),
    # ListOffsets on the leader: earliest and latest offsets.
    "offsets": pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("log_start", pa.int64()),
                          ("log_end", pa.int64())]),
    # DescribeCluster: registered brokers; `alive` = registered and not fenced.
    "brokers": pa.schema([("broker", pa.int32()), ("alive", pa.bool_())]),
    # DescribeLogDirs: the brokers that answered in this poll (the log dirs of a broker missing here are
    # unknown, not empty).
    "log_dirs_answered": pa.schema([("broker", pa.int32())]),
    # DescribeConfigs on topics: kind is leader|follower, value the raw "p:b,p:b" or "*".
    "topic_throttles": pa.schema([("topic", pa.string()), ("kind", pa.string()), ("value", pa.string())]),
    # DescribeConfigs on brokers: kind is leader|follower|alter_log_dirs; broker -1 is the cluster default.
    "broker_throttles": pa.schema([("broker", pa.int32()), ("kind", pa.string()), ("rate", pa.int64())]),
}

PARTITION_KEYED = ("reassignments", "partitions", "log_dirs", "offsets")
BROKER_KEYED = ("brokers", "log_dirs_answered")


def empty(name):
    return SCHEMAS[name].empty_table().to_pandas()


def table(name, rows):
    """A snapshot table from a list of dicts (or an empty one), with the declared dtypes."""
    if not rows:
        return empty(name)
    return pa.Table.from_pylist(list(rows), schema=SCHEMAS[name]).to_pandas()


def alive_brokers(brokers):
    """The ids of DescribeCluster's brokers (rows {"broker", "alive"}) that are alive, sorted."""
    return sorted(b["broker"] for b in brokers if b["alive"])


@dataclass(frozen=True)
class PollError:
    api: str
    message: str

    @classmethod
    def of(cls, api, error):
        """Our exceptions already say what failed and how (streaming.vocabulary.errors); a library's are named."""
        from streaming.vocabulary.errors import MonitorError

        return cls(api, str(error) if isinstance(error, MonitorError) else f"{type(error).__name__}: {error}")


@dataclass(frozen=True)
class Snapshot:
    ts_ms: int
    cluster_id: str
    tables: dict = field(default_factory=dict)
    requests: int = 0  # admin requests this poll issued
    errors: tuple = ()  # PollError per failed request; the affected rows are missing, not wrong
    duration_s: float = 0.0
    retries: dict = field(default_factory=dict)  # api -> errors retried successfully within the poll

    def __getitem__(self, name):
        return self.tables.get(name) if name in self.tables else empty(name)

    def alive_brokers(self):
        brokers = self["brokers"]
        return frozenset(int(b) for b in brokers.loc[brokers["alive"], "broker"])

    def answered_brokers(self):
        return frozenset(int(b) for b in self["log_dirs_answered"]["broker"])


def combine(parts, ts_ms, duration_s):
    """One Snapshot from the parts of a poll made separately (each table from one part or concatenated
    over several): requests summed, errors in order, the cluster id of the part that described it."""
    names = {name for part in parts for name in part.tables}
    tables = {name: pd.concat([p.tables[name] for p in parts if name in p.tables], ignore_index=True)
              for name in names}
    retries = sum((Counter(part.retries) for part in parts), Counter())
    return Snapshot(ts_ms=ts_ms, cluster_id=next((p.cluster_id for p in parts if p.cluster_id), ""), tables=tables,
                    requests=sum(p.requests for p in parts), errors=tuple(e for p in parts for e in p.errors),
                    duration_s=duration_s, retries=dict(retries))


def from_rows(ts_ms, cluster_id, **rows):
    """A Snapshot from lists of dicts per table name: the way tests and fakes build one."""
    return Snapshot(ts_ms=ts_ms, cluster_id=cluster_id, tables={name: table(name, r) for name, r in rows.items()})
