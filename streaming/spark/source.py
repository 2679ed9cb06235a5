"""The streaming source: one micro-batch = one poll of the cluster (PySpark 4 Python data source API).

Where things run:
- Driver: `PollDataSource`, `PollStreamReader.initialOffset/latestOffset/partitions/commit`. Offsets are
  poll numbers ({"poll": n}); every trigger asks for one more, so the trigger interval is the poll rate
  and the checkpoint's offset log records how far the job got.
- Executors: `PollStreamReader.read(partition)` makes the whole poll (streaming.cluster.poller.poll: its parts
  concurrently in threads) in one input partition. Splitting the parts into input partitions (the cluster part, one
  DescribeLogDirs part per alive broker) was measured against this
  (bench/RESULTS.md "Streaming micro-batch latency"): no gain worth a Spark task more per broker, and on the 1-core
  executor of docs/operations.md "Sizing" the parts could only run one after the other. The reader is pickled to
  executors, so it holds only its options; the admin client is created on first use and cached per worker process
  (module global), so consecutive batches reuse one connection.
Idle: `latestOffset` asks the job's controller (streaming.control.gate) whether a batch is wanted; while none
is, it returns the offset the last planned batch ended at, so Spark plans no batch, writes nothing to its
offset or commit log and leaves the state as the last batch left it. Offsets stay dense (every planned
batch ends one poll after the one before it), and without the `gate` option every trigger is a batch.
A batch's end offset also carries the moves the controller listed that no batch has reported yet
(`UNREPORTED`, ListPartitionReassignments rows): its poll adds them as the "unreported_reassignments"
table, and the stateful step reports each (finished when the poll no longer lists it). Carried in the offset,
they are in the offset log, so a replayed batch reports them too - after a crash its fresh poll may find a move
ended that the checkpointed state never saw, while the crashed attempt wrote its first record: the replay then
writes how it ended, so no record is left showing it in flight. The next batch never carries them again.
While Kafka's active controller answers nobody (streaming.cluster.door `listed_or_last`), the end offset carries the
job controller's last list (`LISTED`), which the poll takes instead of asking: the executor's own door may hold an
older list (one per worker process, listed once a batch), and no reassignment changes meanwhile. It is in the
offset log too. It also carries the brokers the controller's door holds as unresponsive and since when
(`UNANSWERED`): the executor's door holds them too before it polls, instead of waiting out a request deadline on
each in every worker process first (at a 2 s trigger that lapse alone kept a batch 6.7 s from the one before while a
broker hung). A replay's door holds them as well; one that answers again is released by its first probe's answer.
Replay: after a restart Spark re-plans the last uncommitted batch from the end offset its offset log
recorded, never from `latestOffset`, so the gate cannot skip or reorder a replay; a live poll cannot be
replayed, so the replayed batch polls afresh. The sinks are written for that (records carry the batch id; a later
record for the same key and batch id supersedes an earlier one).

Rows: (poll_id, ts_ms, bucket, table, payload) where payload is an Arrow IPC slice of one snapshot table
(streaming.spark.codec). Partition-keyed tables go to bucket hash(topic, partition) % buckets; broker-keyed
tables go to every bucket (the brokers table visits each bucket's state every poll, so finished moves
are noticed by their absence). Cluster-wide tables (throttles, all reassignments) and the poll facts go
to CLUSTER_BUCKET. A poll that could not describe the cluster, list the reassignments or read the
metadata yields only its poll facts: the batch reports the error and leaves progress and history as
they were; it is retried next trigger, never fatal.
"""

import json
import time
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from streaming.spark import codec
from streaming.spark.job_log import log_line
from streaming.cluster.poller import poll, usable
from streaming.vocabulary.defaults import TIMEOUT_S, poll_request_deadline_s
from streaming.vocabulary.kafka_apis import DESCRIBE_CLUSTER
from streaming.vocabulary.snapshot import BROKER_KEYED, FLOAT64, INT64, STRING, PollError, Snapshot, table
from streaming.control import gate

SOURCE_NAME = "kafka_reassignment_poll"
# `cluster`: the name of the cluster polled (streaming.vocabulary.cluster_name), which a fleet job's stateful step
# keys its state by (streaming.spark.fleet_source); a job of one cluster keys by bucket alone, as its checkpoints
# always did.
SOURCE_SCHEMA = "cluster string, poll_id long, ts_ms long, bucket int, table string, payload binary"
CLUSTER_BUCKET = -1
# Fixed for the life of a checkpoint (buckets key the state). One bucket per state partition: each bucket
# costs a fixed overhead per batch (a call of the stateful function, its state blob, its output frame),
# and a bucket's moves are handled in one call, so more buckets than partitions only add overhead.
STATE_BUCKETS = 4
POLL_TABLE = "poll"  # one row of poll facts: cluster_id, requests, duration, errors
# The poll table's columns; errors and retries are JSON text ([{"api", "message"}] and {api: count}).
POLL_COLUMNS = (("cluster_id", STRING), ("ts_ms", INT64), ("requests", INT64), ("duration_s", FLOAT64),
                ("errors", STRING), ("retries", STRING))
CLUSTER_TABLES = ("brokers", "log_dirs_answered", "offline_log_dirs", "reassignments", "topic_throttles",
                  "broker_throttles")
UNREPORTED = "unreported"  # the offsets' key for the controller's unreported moves (module docstring)
LISTED = "listed"  # the offsets' key for the controller's list while Kafka's controller answers nobody (docstring)
UNANSWERED = "unanswered"  # the offsets' key for the brokers the controller's door holds as unresponsive (docstring)
ROW_SCHEMA = pa.schema([("cluster", pa.string()), ("poll_id", pa.int64()), ("ts_ms", pa.int64()), ("bucket", pa.int32()),
                        ("table", pa.string()), ("payload", pa.binary())])

_admins = {}  # per worker process: Target -> KafkaClusterAdmin


@dataclass(frozen=True)
class Target:
    """Which cluster a poll asks, and how: what an input partition carries to the executor (picklable). `deadline_s`:
    its polls' request deadline (streaming.vocabulary.defaults.poll_request_deadline_s; None: the door's own, as in
    offsets a fleet job logged before it was carried)."""
    name: str
    bootstrap: str
    command_config: str | None = None
    timeout_s: float = TIMEOUT_S
    deadline_s: float | None = None

    @classmethod
    def of_config(cls, config):
        """The target of a cluster's job configuration (streaming.spark.driver.JobConfig)."""
        return cls(config.cluster_label, config.bootstrap, config.command_config, config.timeout_s,
                   poll_request_deadline_s(config.timeout_s, config.trigger_interval_s))

    @classmethod
    def of(cls, options):
        """The target of a source's options (PollDataSource's; a fleet cluster's, streaming.spark.fleet_source)."""
        deadline = options.get("deadline")
        return cls(options.get("cluster") or "", options["bootstrap"], options.get("command_config") or None,
                   float(options.get("timeout", TIMEOUT_S)), float(deadline) if deadline else None)

    def options(self):
        return {"cluster": self.name, "bootstrap": self.bootstrap, "command_config": self.command_config or "",
                "timeout": str(self.timeout_s), "deadline": "" if self.deadline_s is None else str(self.deadline_s)}


def cached_admin(target):
    from streaming.cluster.admin import KafkaClusterAdmin

    if target not in _admins:  # its lines about held nodes go to the executor's stderr: the job's log (local mode)
        _admins[target] = KafkaClusterAdmin(target.bootstrap, target.command_config, target.timeout_s, log=log_line,
                                            deadline_s=target.deadline_s)
    return _admins[target]


def poll_facts(cluster_id, ts_ms, requests, duration_s, errors, retries=None):
    facts = {"cluster_id": cluster_id, "ts_ms": ts_ms, "requests": requests, "duration_s": duration_s,
             "errors": json.dumps([{"api": e.api, "message": e.message} for e in errors]),
             "retries": json.dumps(retries or {})}
    return codec.encode([facts], POLL_COLUMNS)


def _facts_row(poll_id, snapshot):
    return (poll_id, snapshot.ts_ms, CLUSTER_BUCKET, POLL_TABLE,
            poll_facts(snapshot.cluster_id, snapshot.ts_ms, snapshot.requests, snapshot.duration_s, snapshot.errors,
                       snapshot.retries))


def cluster_tables(snapshot):
    """The tables the driver's sinks need whole: throttles, all reassignments, and for the janitor's
    alter-log-dirs rule the future logs and who answered DescribeLogDirs (so it need not ask again)."""
    tables = {name: snapshot.tables[name] for name in CLUSTER_TABLES if name in snapshot.tables}
    if "partitions" in snapshot.tables:  # the ISR of reassigning partitions, for the reasons (streaming.core.diagnosis)
        reassigning = {(row["topic"], row["partition"]) for row in snapshot.tables.get("reassignments", ())}
        tables["partitions"] = [row for row in snapshot.tables["partitions"]
                                if (row["topic"], row["partition"]) in reassigning]
    if "log_dirs" in snapshot.tables:
        tables["log_dirs"] = [row for row in snapshot.tables["log_dirs"] if row["is_future"]]
    return tables


def snapshot_rows(poll_id, snapshot, buckets):
    """The source rows of a snapshot, or of one part of a poll (pure: the unit the source, the benchmarks
    and the tests share). Only the tables the snapshot holds produce rows."""
    rows = []
    shared = [(name, codec.encode_table(name, snapshot[name])) for name in BROKER_KEYED if snapshot[name]]
    for bucket, payloads in codec.encode_by_bucket(snapshot.tables, buckets).items():
        rows += [(poll_id, snapshot.ts_ms, bucket, name, payload) for name, payload in [*shared, *payloads.items()]]
    rows += [(poll_id, snapshot.ts_ms, CLUSTER_BUCKET, name, codec.encode_table(name, table))
             for name, table in cluster_tables(snapshot).items()]
    rows.append(_facts_row(poll_id, snapshot))
    return rows


def poll_rows(poll_id, snapshot, buckets):
    """A poll that cannot tell moving from finished moves yields only its poll facts."""
    if usable(snapshot.cluster_id, snapshot.errors):
        return snapshot_rows(poll_id, snapshot, buckets)
    return [_facts_row(poll_id, snapshot)]


def failed_poll(ts_ms, error, duration_s):
    return Snapshot(ts_ms=ts_ms, cluster_id="", duration_s=duration_s,
                    errors=(PollError.of(DESCRIBE_CLUSTER, error),))


def to_batch(rows, cluster=""):
    """The Arrow batch of source rows, each of them the cluster's `cluster` (its name)."""
    return pa.RecordBatch.from_pylist([dict(zip(ROW_SCHEMA.names, (cluster, *row))) for row in rows], schema=ROW_SCHEMA)


def with_unreported(snapshot, unreported):
    """The poll with the controller's unreported moves as a table of its own (none: the poll as it is)."""
    if not unreported:
        return snapshot
    return replace(snapshot, tables={**snapshot.tables,
                                     "unreported_reassignments": table("unreported_reassignments", unreported)})


def _row_key(row):
    """A handed-over row as a set member: up to streaming.control.duties.liveness.HANDOVER_LIMIT rows on each side, too many
    to compare pairwise."""
    return json.dumps(row, sort_keys=True)


class PollPartition(InputPartition):
    """One poll of one cluster: `target` None for the reader's own cluster (a job of one cluster)."""

    def __init__(self, poll_id, unreported=(), listed=None, unanswered=(), target=None):
        super().__init__(poll_id)
        self.poll_id = poll_id
        self.unreported = tuple(unreported)
        self.listed = None if listed is None else tuple(listed)
        self.unanswered = {int(broker): int(ms) for broker, ms in unanswered}
        self.target = target


def advanced(start, decision):
    """The end offset after `start` for the gate's `decision` (streaming.control.gate): `start` itself, unchanged
    with all it carries, while no batch is wanted (Spark plans none); else one more poll, with what the controller
    hands over (module docstring)."""
    if not decision.wanted:
        return start
    end = {"poll": int(start["poll"]) + 1}
    # The batch that ended at `start` reported what it carried; the controller learns that only after it
    # (Controller.hand_over), so its gate may still hand those moves over: not a second time.
    carried = {_row_key(row) for row in start.get(UNREPORTED, ())}
    handed = [row for row in decision.unreported if _row_key(row) not in carried]
    if handed:
        end[UNREPORTED] = handed
    if decision.listed is not None:
        end[LISTED] = list(decision.listed)
    if decision.unanswered:
        end[UNANSWERED] = [list(held) for held in decision.unanswered]
    return end


def decision_of(gate_path, now_ms):
    """The controller's gate (a batch every trigger without one)."""
    return gate.read(gate_path, now_ms) if gate_path else gate.Decision(wanted=True)


def partition_of(end, target=None):
    """The input partition of one cluster's poll ending at `end`."""
    return PollPartition(int(end["poll"]), end.get(UNREPORTED, ()), end.get(LISTED), end.get(UNANSWERED, ()), target)


def polled_rows(target, partition, buckets):
    """The source rows of one poll of `target` (on an executor). Any failure becomes a reported poll error; the
    query lives on (the admin door has dropped whatever client went stale, so the cached door is reused next poll)."""
    started = time.monotonic()
    ts_ms = int(time.time() * 1000)
    try:
        admin = cached_admin(target)
        admin.hold_unanswered(partition.unanswered)
        snapshot = with_unreported(poll(admin, now_ms=ts_ms, all_partitions=True, listed=partition.listed),
                                   partition.unreported)
    except Exception as error:
        snapshot = failed_poll(ts_ms, error, time.monotonic() - started)
    return poll_rows(partition.poll_id, snapshot, buckets)


class PollStreamReader(DataSourceStreamReader):
    def __init__(self, options):
        self.options = dict(options)
        self.buckets = int(self.options.get("buckets", STATE_BUCKETS))

    def initialOffset(self):
        return {"poll": 0}

    def latestOffset(self, start, limit):
        """One new poll per trigger while the controller wants a batch; the same offset (no batch) while it does not."""
        return advanced(start, decision_of(self.options.get("gate"), time.time() * 1000))

    def partitions(self, start, end):
        return [partition_of(end)]

    def read(self, partition):
        target = Target.of(self.options)
        return iter([to_batch(polled_rows(target, partition, self.buckets), target.name)])

    def commit(self, end):
        pass


class PollDataSource(DataSource):
    """Options: bootstrap (required), cluster (its name), command_config, timeout (s), buckets (state buckets, fixed
    for the life of a checkpoint), gate (the controller's gate file; absent: a batch every trigger)."""

    @classmethod
    def name(cls):
        return SOURCE_NAME

    def schema(self):
        return SOURCE_SCHEMA

    def streamReader(self, schema):
        return PollStreamReader(self.options)
