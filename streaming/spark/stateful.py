"""The stateful operator: per state bucket, the progress core plus history, checkpointed by Spark.

Runs on executors inside `applyInPandasWithState` (grouped by the source's `bucket`). One call per bucket
per batch handles all of that bucket's replica moves at once: the bucket's tables are decoded to row
dicts, the core runs on them, and the report goes back to Spark as one pandas frame. The bucket's memory
(one row per tracked move, streaming.core.history) is one Arrow IPC blob in the group state. MEASURED.md:
per-replica keys cost ~1 ms each in Python; per-bucket blobs keep 10k moves around a second.

The cluster bucket passes its tables through untouched (kind "cluster", with table and payload) for the
driver's sinks.
Everything here must be picklable: `make_tracker` closes over plain settings only.
"""

import gc
import warnings
from contextlib import contextmanager

import pandas as pd

from streaming.spark import codec
from streaming.vocabulary.replica_row import FIELDS
from streaming.core.history import MEMORY_SCHEMA, Settings, empty_memory, step
from streaming.core.progress import finished_replicas, replica_progress, unreported_moves
from streaming.vocabulary.snapshot import Snapshot
from streaming.spark.source import CLUSTER_BUCKET

STATE_SCHEMA = "memory binary"
# One frame carries both kinds of rows: replica rows (streaming.vocabulary.replica_row) and the cluster
# bucket's tables passed through as (table, payload). name -> (Spark SQL type, nullable).
OUTPUT_FIELDS = {"kind": ("string", False), "poll_id": ("long", False), "ts_ms": ("long", False), **FIELDS,
                 "table": ("string", True), "payload": ("binary", True)}
OUTPUT_SCHEMA = ", ".join(f"{name} {spark}" for name, (spark, _) in OUTPUT_FIELDS.items())
OUTPUT_COLUMNS = list(OUTPUT_FIELDS)
REPLICA_KIND = "replica"
CLUSTER_KIND = "cluster"

# pyspark's worker pads each group's output with an all-null frame before concatenating (pyspark/worker.py),
# which pandas 2 warns about once per batch in the job's terminal. The padding is Spark's, not ours: silenced
# in every worker process, which imports this module to run the tracker.
warnings.filterwarnings("ignore", message="The behavior of DataFrame concatenation with empty or all-NA entries",
                        category=FutureWarning)

# The pandas dtype Spark's Arrow conversion takes for each Spark SQL type. A nullable integer or flag
# needs pandas' masked dtype: a plain one cannot hold a null, and a float column would round big longs.
PANDAS_DTYPES = {"string": "object", "binary": "object", "int": "int32", "long": "int64", "double": "float64",
                 "boolean": "bool"}
MASKED_DTYPES = {"int32": "Int32", "int64": "Int64", "bool": "boolean"}


def pandas_dtype(spark_type, nullable):
    dtype = PANDAS_DTYPES[spark_type]
    return MASKED_DTYPES.get(dtype, dtype) if nullable else dtype


OUTPUT_DTYPES = {name: pandas_dtype(*field) for name, field in OUTPUT_FIELDS.items()}


def _passthrough(rows):
    out = pd.DataFrame({"kind": CLUSTER_KIND, "poll_id": rows["poll_id"], "ts_ms": rows["ts_ms"],
                        "table": rows["table"], "payload": rows["payload"]})
    return out.reindex(columns=OUTPUT_COLUMNS)


def replica_frame(report, poll_id, ts_ms):
    """The output frame of a bucket's report rows (dicts with the replica row's fields)."""
    constants = {"kind": REPLICA_KIND, "poll_id": poll_id, "ts_ms": ts_ms, "table": None, "payload": None}
    return pd.DataFrame({
        name: pd.Series([constants[name]] * len(report) if name in constants else [row[name] for row in report],
                        dtype=dtype)
        for name, dtype in OUTPUT_DTYPES.items()})


def track_bucket(rows, memory, settings):
    """(new memory, output frame) for one bucket's source rows (a frame) of one poll and its memory (row
    dicts). Pure; the Spark wrapper below only moves bytes in and out of the group state."""
    ts_ms = int(rows["ts_ms"].max())
    poll_id = int(rows["poll_id"].max())
    snapshot = Snapshot(ts_ms=ts_ms, cluster_id="", tables=codec.decode_tables(rows["table"], rows["payload"]))
    current = replica_progress(snapshot)
    tracked = memory + unreported_moves(snapshot, memory)
    if tracked:
        current = current + finished_replicas(tracked, snapshot, current)
    memory, report = step(memory, current, ts_ms, settings)
    return memory, replica_frame(report, poll_id, ts_ms)


@contextmanager
def collector_paused():
    """Python's cycle collector off while a bucket's call (here) or the driver's batch handler
    (streaming.spark.job) builds its row dicts: 100k of them at once set off collection after collection
    over everything alive (decoding a bucket of 25k moves took 0.23 s with it, 0.07 s without; the
    synthetic 100k batch's sinks 3.2 s against 2.7 s). Rows hold no cycles: reference counting frees them."""
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
            memory = codec.decode(state.get[0]) if state.exists else empty_memory()
            memory, out = track_bucket(rows, memory, settings)
        if memory:
            state.update((codec.encode(memory, MEMORY_SCHEMA),))
        else:
            state.remove()
        yield out
    return track
