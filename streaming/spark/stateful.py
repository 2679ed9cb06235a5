"""The stateful operator: per state bucket, the progress core plus history, checkpointed by Spark.

Runs on executors inside `applyInPandasWithState` (grouped by the source's `bucket`). One call per bucket
per batch handles all of that bucket's replica moves at once: the bucket's tables are decoded to row
dicts, the core runs on them, and the report goes back to Spark as one Arrow IPC blob in a one-row frame. The
bucket's memory (one row per tracked move, streaming.core.history) is one Arrow IPC blob in the group state.
Why per bucket: per-replica keys in Spark's state store cost a Python call and a state access each
(docs/architecture.md "The batch and the checkpoint").

The cluster bucket passes its tables through untouched (kind "cluster", with table and payload) for the
driver's sinks.
Everything here must be picklable: `make_tracker` closes over plain settings only.
"""

import gc
import warnings
from contextlib import contextmanager

import pandas as pd
import pyarrow as pa

from streaming.spark import codec
from streaming.vocabulary.replica_row import FIELDS
from streaming.core.history import MEMORY_SCHEMA, Settings, empty_memory
from streaming.spark.history_columns import step_columns
from streaming.core.progress import finished_replicas, replica_progress, unreported_moves
from streaming.vocabulary.snapshot import Snapshot
from streaming.spark.source import CLUSTER_BUCKET

STATE_SCHEMA = "memory binary"
# One frame carries both kinds of rows, each a blob: the cluster bucket's tables passed through as (table,
# payload), and a bucket's replica rows (streaming.vocabulary.replica_row) as one Arrow IPC stream in
# `payload`. As 25,000 rows of 19 columns a bucket, Spark converted the replica rows from Arrow to its own rows
# and back to Arrow for the driver's toArrow: the largest part of Spark's own time at 100,000 moving replicas
# (bench/RESULTS.md, "Where a synthetic batch's wall time goes in Spark"). name -> (Spark SQL type, nullable).
OUTPUT_FIELDS = {"kind": ("string", False), "poll_id": ("long", False), "ts_ms": ("long", False),
                 "table": ("string", True), "payload": ("binary", True)}
OUTPUT_SCHEMA = ", ".join(f"{name} {spark}" for name, (spark, _) in OUTPUT_FIELDS.items())
OUTPUT_COLUMNS = list(OUTPUT_FIELDS)
REPLICA_KIND = "replica"
CLUSTER_KIND = "cluster"
# The columns of the replica rows in a blob: the poll's, then the replica row's.
REPLICA_FIELDS = {"poll_id": OUTPUT_FIELDS["poll_id"], "ts_ms": OUTPUT_FIELDS["ts_ms"], **FIELDS}

# pyspark's worker pads each group's output with an all-null frame before concatenating (pyspark/worker.py),
# which pandas 2 warns about once per batch in the job's terminal. The padding is Spark's, not ours: silenced
# in every worker process, which imports this module to run the tracker.
warnings.filterwarnings("ignore", message="The behavior of DataFrame concatenation with empty or all-NA entries",
                        category=FutureWarning)


def _passthrough(rows):
    out = pd.DataFrame({"kind": CLUSTER_KIND, "poll_id": rows["poll_id"], "ts_ms": rows["ts_ms"],
                        "table": rows["table"], "payload": rows["payload"]})
    return out.reindex(columns=OUTPUT_COLUMNS)


REPLICA_ARROW = codec.fields_schema(REPLICA_FIELDS)
MEMORY_ARROW = codec.arrow_schema(MEMORY_SCHEMA)


def replica_frame(report, poll_id, ts_ms):
    """The output frame of a bucket's report ({column: Arrow array} of the replica row's fields): one row,
    the poll's rows in its payload (streaming.spark.job.replica_table reads them back)."""
    rows = len(report["topic"])
    columns = {"poll_id": pa.repeat(pa.scalar(poll_id, pa.int64()), rows),
               "ts_ms": pa.repeat(pa.scalar(ts_ms, pa.int64()), rows), **report}
    return pd.DataFrame({"kind": [REPLICA_KIND], "poll_id": [poll_id], "ts_ms": [ts_ms], "table": [None],
                         "payload": [codec.encode_columns(columns, REPLICA_ARROW)]}, columns=OUTPUT_COLUMNS)


def track_bucket(rows, memory, settings):
    """(new memory, output frame) for one bucket's source rows (a frame) of one poll and its memory (the
    group state's blob: an Arrow IPC stream of MEMORY_SCHEMA; None when nothing is tracked, in and out).
    Pure; the Spark wrapper below only moves the blob in and out of the group state."""
    memory = codec.decode(memory) if memory is not None else empty_memory()
    ts_ms = int(rows["ts_ms"].max())
    poll_id = int(rows["poll_id"].max())
    snapshot = Snapshot(ts_ms=ts_ms, cluster_id="", tables=codec.decode_tables(rows["table"], rows["payload"]))
    current = replica_progress(snapshot)
    tracked = memory + unreported_moves(snapshot, memory)
    if tracked:
        current = current + finished_replicas(tracked, snapshot, current)
    memory, report = step_columns(memory, current, ts_ms, settings)
    return (codec.encode_columns(memory, MEMORY_ARROW) if len(memory["topic"]) else None,
            replica_frame(report, poll_id, ts_ms))


@contextmanager
def collector_paused():
    """Python's cycle collector off while a bucket's call (here) or the driver's batch handler
    (streaming.spark.job) builds its row dicts: 100k of them at once set off collection after collection
    over everything alive, making the decoding several times slower when measured. Rows hold no cycles:
    reference counting frees them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def make_tracker(settings=Settings()):
    def track(key, batches, state):
        rows = pd.concat(list(batches), ignore_index=True)
        if key[0] == CLUSTER_BUCKET:
            yield _passthrough(rows)
            return
        with collector_paused():
            memory, out = track_bucket(rows, state.get[0] if state.exists else None, settings)
        if memory is not None:
            state.update((memory,))
        else:
            state.remove()
        yield out
    return track
