"""The stateful operator: per state bucket, the progress core plus history, checkpointed by Spark.

Runs on executors inside `applyInPandasWithState` (grouped by the source's `bucket`). One call per bucket
per batch handles all of that bucket's replica moves at once: the bucket's tables are read from their Arrow
slices straight into columns (streaming.spark.codec), the core runs on them (streaming.core.measure, .history),
and the report goes back to Spark as one Arrow IPC blob in a one-row frame. The bucket's memory (one row per
tracked move, streaming.core.history) is one Arrow IPC blob in the group state, in its stored schema.
Why per bucket: per-replica keys in Spark's state store cost a Python call and a state access each
(docs/architecture.md "The batch and the checkpoint").

The cluster bucket passes its tables through untouched (kind "cluster", with table and payload) for the
driver's sinks.
Everything here must be picklable: `make_tracker` closes over plain settings only.
"""

import gc
import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd

from streaming.core.history import MEMORY_KINDS, MEMORY_SCHEMA, REPORT_KINDS, Settings, empty_memory, step
from streaming.core.measure import KEY_KINDS, REPLICA_KINDS, finished_replicas, replica_progress, unreported_moves
from streaming.spark import codec
from streaming.spark.source import CLUSTER_BUCKET
from streaming.vocabulary.columns import concat
from streaming.vocabulary.replica_row import INT, KEY

STATE_SCHEMA = "memory binary"
# One frame carries both kinds of rows, each a blob: the cluster bucket's tables passed through as (table,
# payload), and a bucket's replica rows (streaming.vocabulary.replica_row) as one Arrow IPC stream in
# `payload`. As 25,000 rows of 19 columns a bucket, Spark converted the replica rows from Arrow to its own rows
# and back to Arrow for the driver's toArrow: the largest part of Spark's own time at 100,000 moving replicas
# (bench/RESULTS.md, "Where a synthetic batch's wall time goes in Spark"). name -> (Spark SQL type, nullable).
OUTPUT_FIELDS = {"cluster": ("string", False), "kind": ("string", False), "poll_id": ("long", False), "ts_ms": ("long", False),
                 "table": ("string", True), "payload": ("binary", True)}
OUTPUT_SCHEMA = ", ".join(f"{name} {spark}" for name, (spark, _) in OUTPUT_FIELDS.items())
OUTPUT_COLUMNS = list(OUTPUT_FIELDS)
REPLICA_KIND = "replica"
CLUSTER_KIND = "cluster"
# The columns of the replica rows in a blob: the poll's, then the history step's report.
REPORTED_KINDS = {"poll_id": INT, "ts_ms": INT, **REPORT_KINDS}

# pyspark's worker pads each group's output with an all-null frame before concatenating (pyspark/worker.py),
# which pandas 2 warns about once per batch in the job's terminal. The padding is Spark's, not ours: silenced
# in every worker process, which imports this module to run the tracker.
warnings.filterwarnings("ignore", message="The behavior of DataFrame concatenation with empty or all-NA entries",
                        category=FutureWarning)


def _passthrough(rows):
    out = pd.DataFrame({"cluster": rows["cluster"], "kind": CLUSTER_KIND, "poll_id": rows["poll_id"], "ts_ms": rows["ts_ms"],
                        "table": rows["table"], "payload": rows["payload"]})
    return out.reindex(columns=OUTPUT_COLUMNS)


MEMORY_ARROW = codec.arrow_schema(MEMORY_SCHEMA)


def replica_frame(report, poll_id, ts_ms, cluster=""):
    """The output frame of a bucket's report (history report columns): one row, the poll's rows in its payload
    (streaming.spark.job.batch_rows reads them back)."""
    rows = len(report)
    columns = report.with_columns(poll_id=np.full(rows, poll_id, dtype=np.int64),
                                  ts_ms=np.full(rows, ts_ms, dtype=np.int64))
    return pd.DataFrame({"cluster": [cluster], "kind": [REPLICA_KIND], "poll_id": [poll_id], "ts_ms": [ts_ms], "table": [None],
                         "payload": [codec.encode_columns(columns, REPORTED_KINDS)]}, columns=OUTPUT_COLUMNS)


def read_memory(blob):
    """A bucket's memory from the group state's blob (an Arrow IPC stream of MEMORY_SCHEMA; None: nothing)."""
    return empty_memory() if blob is None else codec.columns_of(codec.read(blob), MEMORY_KINDS)


def write_memory(memory):
    """The group state's blob of a bucket's memory; None when it tracks nothing."""
    return codec.encode_columns(memory, MEMORY_KINDS, MEMORY_ARROW) if len(memory) else None


def track_bucket(rows, memory, settings):
    """(new memory, output frame) for one bucket's source rows (a frame) of one poll and its memory (the
    group state's blob: an Arrow IPC stream of MEMORY_SCHEMA; None when nothing is tracked, in and out).
    Pure; the Spark wrapper below only moves the blob in and out of the group state."""
    memory = read_memory(memory)
    cluster = str(rows["cluster"].iloc[0]) if "cluster" in rows else ""
    ts_ms = int(rows["ts_ms"].max())
    poll_id = int(rows["poll_id"].max())
    snapshot = codec.snapshot_columns(rows["table"].tolist(), rows["payload"].tolist(), ts_ms)
    current = replica_progress(snapshot)
    tracked = concat([memory.select(KEY), unreported_moves(snapshot, memory)], KEY_KINDS)
    if len(tracked):
        current = concat([current, finished_replicas(tracked, snapshot, current)], REPLICA_KINDS)
    memory, report = step(memory, current, ts_ms, settings)
    return write_memory(memory), replica_frame(report, poll_id, ts_ms, cluster)


@contextmanager
def collector_paused():
    """Python's cycle collector off while a bucket's call (here) or the driver's batch handler
    (streaming.spark.job) makes its objects: the text of 100k records or topic names at once set off collection
    after collection over everything alive (when rows were dicts, decoding a bucket of 25k moves took 0.23 s with
    it, 0.07 s without). None of them holds a cycle: reference counting frees them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def make_tracker(settings=Settings(), per_cluster=None):
    """The stateful function, keyed by (bucket,) in a job of one cluster and by (cluster, bucket) in a fleet job;
    `per_cluster`: {cluster name: Settings} where a fleet file's cluster sets its own (`settings` for the others)."""
    per_cluster = dict(per_cluster or {})

    def track(key, batches, state):
        rows = pd.concat(list(batches), ignore_index=True)
        if key[-1] == CLUSTER_BUCKET:
            yield _passthrough(rows)
            return
        own = per_cluster.get(key[0], settings) if len(key) > 1 else settings
        with collector_paused():
            memory, out = track_bucket(rows, state.get[0] if state.exists else None, own)
        if memory is not None:
            state.update((memory,))
        else:
            state.remove()
        yield out
    return track
