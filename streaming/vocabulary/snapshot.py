"""One poll of the cluster as plain typed tables (value types only; no logic, no I/O).

Every table is a list of rows, each a dict of plain Python values (str, int, bool, a list of ints, None
for null) with the columns declared here, so the progress core reads it row by row without a dataframe
library (the one-shot CLI does not pay for importing one), the Spark source ships it as Arrow IPC
(streaming.spark.codec maps the types), and tests build it from lists of dicts. Every table except the
broker-keyed ones is keyed by (topic, partition): the streaming job buckets rows by that key and hands
each bucket its own slice plus the whole broker-keyed tables. Each table holds the answer of one admin
API, so the parts of a poll, made concurrently, concatenate (`combine`).
"""

from collections import Counter
from dataclasses import dataclass, field

# The column types a table declares (streaming.spark.codec gives each its Arrow type).
STRING, INT32, INT64, FLOAT64, BOOL, INT_LIST = "string", "int32", "int64", "float64", "bool", "int32 list"

# table name -> ((column, type), ...). The names are the table's identity everywhere (source rows, buckets, tests).
SCHEMAS = {
    # ListPartitionReassignments: one row per reassigning partition (KIP-455).
    "reassignments": (("topic", STRING), ("partition", INT32), ("replicas", INT_LIST), ("adding", INT_LIST),
                      ("removing", INT_LIST)),
    # Metadata: leader (-1 when none), replica set and ISR of each partition the poll asked about.
    "partitions": (("topic", STRING), ("partition", INT32), ("leader", INT32), ("replicas", INT_LIST),
                   ("isr", INT_LIST)),
    # DescribeLogDirs: one row per (broker, log dir, partition); is_future marks an intra-broker move's target.
    "log_dirs": (("broker", INT32), ("log_dir", STRING), ("topic", STRING), ("partition", INT32), ("size", INT64),
                 ("offset_lag", INT64), ("is_future", BOOL)),
    # ListOffsets on the leader: earliest (remote storage included), latest, and the leader's local log start
    # (KIP-405: null where the cluster cannot tell it; equal to log_start without tiered storage).
    "offsets": (("topic", STRING), ("partition", INT32), ("log_start", INT64), ("log_end", INT64),
                ("local_log_start", INT64)),
    # DescribeCluster: registered brokers; `alive` = registered, not fenced and not held by the door;
    # `unanswered_since_ms`: since when a broker the door holds as unresponsive has not answered (else null);
    # `kafka_alive`: Kafka's own view, registered and not fenced, whatever the door holds (null: not known).
    "brokers": (("broker", INT32), ("alive", BOOL), ("unanswered_since_ms", INT64), ("kafka_alive", BOOL)),
    # DescribeLogDirs: the log dirs a broker answered with an error (Kafka took them offline: full or failed).
    "offline_log_dirs": (("broker", INT32), ("log_dir", STRING)),
    # DescribeLogDirs: the brokers that answered in this poll (the log dirs of a broker missing here are
    # unknown, not empty).
    "log_dirs_answered": (("broker", INT32),),
    # DescribeConfigs on topics: kind is leader|follower, value the raw "p:b,p:b" or "*".
    "topic_throttles": (("topic", STRING), ("kind", STRING), ("value", STRING)),
    # DescribeConfigs on brokers: kind is leader|follower|alter_log_dirs; broker -1 is the cluster default.
    "broker_throttles": (("broker", INT32), ("kind", STRING), ("rate", INT64)),
}
# Not a poll's: moves the job's controller saw in ListPartitionReassignments that left the list before the
# batch's poll and that no batch reported yet (streaming.control.gate), handed to that batch with its offsets.
SCHEMAS["unreported_reassignments"] = SCHEMAS["reassignments"]

PARTITION_KEYED = ("reassignments", "partitions", "log_dirs", "offsets", "unreported_reassignments")
BROKER_KEYED = ("brokers", "log_dirs_answered")


def columns(name):
    return [column for column, _ in SCHEMAS[name]]


def table(name, rows):
    """A snapshot table from dicts: every declared column, in order, a missing one null."""
    names = columns(name)
    return [{column: row.get(column) for column in names} for row in rows]


def alive_brokers(brokers):
    """The ids of DescribeCluster's brokers (rows {"broker", "alive"}) that are alive, sorted."""
    return sorted(b["broker"] for b in brokers if b["alive"])


def without_gone(brokers, gone, unanswered_since_ms=None):
    """DescribeCluster's rows with the brokers of `gone` (held by the door: their connection closed or
    refused, or a request to them lapsed: streaming.cluster.held) not alive, and since when those of
    `unanswered_since_ms` ({broker: Unix ms}) have not answered. Kafka fences a SIGKILLed or SIGSTOPped broker
    only when its session times out; until then it is registered and unfenced but answers nothing, like a
    fenced one."""
    since = unanswered_since_ms or {}
    return [{**b, "alive": b["alive"] and b["broker"] not in gone,
             "unanswered_since_ms": since.get(b["broker"], b.get("unanswered_since_ms")),
             "kafka_alive": b["alive"] if b.get("kafka_alive") is None else b["kafka_alive"]} for b in brokers]


def unobserved_brokers(brokers):
    """The ids of the brokers (DescribeCluster rows) that do not answer the job (held as unresponsive) while Kafka
    lists them alive: what they hold is not seen, and Kafka does not call them down."""
    return sorted(b["broker"] for b in brokers if b.get("unanswered_since_ms") is not None and b.get("kafka_alive"))


@dataclass(frozen=True)
class PollError:
    api: str
    message: str
    bug: bool = False  # an internal error (streaming.vocabulary.errors.BUG), not the cluster's answer

    @classmethod
    def of(cls, api, error):
        """Our exceptions already say what failed and how (streaming.vocabulary.errors); a library's are named;
        a bug is said as one (exit 4 where a command needs that answer: streaming.cluster.poller.strict_poll)."""
        from streaming.vocabulary.errors import BUG, MonitorError, bug_line, kind_of

        bug = kind_of(error) == BUG
        if isinstance(error, MonitorError):
            return cls(api, str(error), bug)
        return cls(api, bug_line(error) if bug else f"{type(error).__name__}: {error}", bug)


@dataclass(frozen=True)
class Snapshot:
    ts_ms: int
    cluster_id: str
    tables: dict = field(default_factory=dict)  # name -> list of row dicts
    requests: int = 0  # admin requests this poll issued
    errors: tuple = ()  # PollError per failed request; the affected rows are missing, not wrong
    duration_s: float = 0.0
    retries: dict = field(default_factory=dict)  # api -> errors retried successfully within the poll

    def __getitem__(self, name):
        """The table's rows; an empty list for a table this snapshot does not hold."""
        return self.tables.get(name, [])

    def alive_brokers(self):
        return frozenset(alive_brokers(self["brokers"]))

    def unobserved_brokers(self):
        return frozenset(unobserved_brokers(self["brokers"]))

    def answered_brokers(self):
        return frozenset(row["broker"] for row in self["log_dirs_answered"])


def combine(parts, ts_ms, duration_s):
    """One Snapshot from the parts of a poll made separately (each table from one part or concatenated
    over several): requests summed, errors in order, the cluster id of the part that described it."""
    names = {name for part in parts for name in part.tables}
    tables = {name: [row for part in parts for row in part.tables.get(name, ())] for name in names}
    retries = sum((Counter(part.retries) for part in parts), Counter())
    return Snapshot(ts_ms=ts_ms, cluster_id=next((p.cluster_id for p in parts if p.cluster_id), ""), tables=tables,
                    requests=sum(p.requests for p in parts), errors=tuple(e for p in parts for e in p.errors),
                    duration_s=duration_s, retries=dict(retries))


def from_rows(ts_ms, cluster_id, **rows):
    """A Snapshot from lists of dicts per table name: the way tests and fakes build one."""
    return Snapshot(ts_ms=ts_ms, cluster_id=cluster_id, tables={name: table(name, r) for name, r in rows.items()})
