"""The stateful operator: per state bucket, the progress core plus history, checkpointed by Spark.

Runs on executors inside `applyInPandasWithState` (grouped by the source's `bucket`). One call per bucket
per batch handles all of that bucket's replica moves at once with pandas; the bucket's memory (one row
per tracked move, streaming.core.history) is one Arrow IPC blob in the group state. MEASURED.md: per-replica
keys cost ~1 ms each in Python; per-bucket blobs keep 10k moves around a second.

The cluster bucket passes its tables through untouched (kind "cluster:<table>") for the driver's sinks.
Everything here must be picklable: `make_tracker` closes over plain settings only.
"""

import pandas as pd

from streaming.spark import codec
from streaming.vocabulary.replica_row import spark_fields
from streaming.core.history import Settings, empty_memory, step
from streaming.core.progress import finished_replicas, replica_progress
from streaming.vocabulary.snapshot import Snapshot
from streaming.spark.source import CLUSTER_BUCKET

STATE_SCHEMA = "memory binary"
# One frame carries both kinds of rows: replica rows (streaming.vocabulary.replica_row) and the cluster
# bucket's tables passed through as (table, payload).
OUTPUT_SCHEMA = f"kind string, poll_id long, ts_ms long, {spark_fields()}, table string, payload binary"
OUTPUT_COLUMNS = [field.split(" ")[0] for field in OUTPUT_SCHEMA.split(", ")]
REPLICA_KIND = "replica"
CLUSTER_KIND = "cluster"


def _passthrough(rows):
    out = pd.DataFrame({"kind": CLUSTER_KIND, "poll_id": rows["poll_id"], "ts_ms": rows["ts_ms"],
                        "table": rows["table"], "payload": rows["payload"]})
    return out.reindex(columns=OUTPUT_COLUMNS)


def _replica_rows(report, poll_id, ts_ms):
    out = report.assign(kind=REPLICA_KIND, poll_id=poll_id, ts_ms=ts_ms, table=None, payload=None)
    return out.reindex(columns=OUTPUT_COLUMNS)


def track_bucket(rows, memory, settings):
    """(new memory, output rows) for one bucket's source rows of one poll. Pure; the Spark wrapper
    below only moves bytes in and out of the group state."""
    ts_ms = int(rows["ts_ms"].max())
    poll_id = int(rows["poll_id"].max())
    tables = codec.decode_tables(rows["table"], rows["payload"])
    snapshot = Snapshot(ts_ms=ts_ms, cluster_id="", tables=tables)
    current = replica_progress(snapshot)
    finished = finished_replicas(memory, snapshot, current) if not memory.empty else None
    if finished is not None and not finished.empty:
        current = finished if current.empty else pd.concat([current, finished], ignore_index=True)
    memory, report = step(memory, current, ts_ms, settings)
    return memory, _replica_rows(report, poll_id, ts_ms)


def make_tracker(settings=Settings()):
    def track(key, batches, state):
        rows = pd.concat(list(batches), ignore_index=True)
        if key[0] == CLUSTER_BUCKET:
            yield _passthrough(rows)
            return
        memory = codec.decode(state.get[0]) if state.exists else empty_memory()
        memory, out = track_bucket(rows, memory, settings)
        if memory.empty:
            state.remove()
        else:
            state.update((codec.encode(memory),))
        yield out
    return track
