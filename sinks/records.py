"""Records of the progress topic (DESIGN.md "Kafka progress topic"): keys and JSON values. Pure.

The value schema ships as progress_record.schema.json beside this module; tests validate against it.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd

from streaming.vocabulary.json_values import json_value

SCHEMA_ID = "kafka-reassign-monitor/progress/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_record.schema.json")
REPLICA_KIND, PARTITION_KIND, REASSIGNMENT_KIND, THROTTLE_KIND = KINDS = ("replica", "partition", "reassignment", "throttle")


def replica_keys(replicas):
    """`topic:partition:broker` per row. An intra-broker (log dir) move of the same replica gets its own
    key (`:future`) so the two never overwrite each other."""
    return (replicas["topic"] + ":" + replicas["partition"].astype(str) + ":" + replicas["broker"].astype(str)
            + np.where(replicas["intra_broker"], ":future", ""))


def partition_keys(partitions):
    """`topic:partition` per row."""
    return partitions["topic"] + ":" + partitions["partition"].astype(str)


def reassignment_key(request_id=None):
    return "reassignment" if request_id is None else f"reassignment:{request_id}"


def throttle_key(scope, name):
    return f"throttle:{scope}:{name}"


def record(kind, ts_ms, batch_id, cluster_id, message=None, state=None, **fields):
    value = {"schema": SCHEMA_ID, "kind": kind, "ts_ms": int(ts_ms), "batch_id": int(batch_id),
             "cluster_id": cluster_id, "state": state, "message": message}
    value.update({name: json_value(v) for name, v in fields.items()})
    return value


def encode(value):
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _encoded_rows(frame):
    """One UTF-8 JSON value per row, built by pandas in C: 100k records cost ~0.1 s, not seconds."""
    text = frame.to_json(orient="records", lines=True, double_precision=15)
    return [line.encode("utf-8") for line in text.splitlines()]


def _head(kind, ts_ms, batch_id, cluster_id):
    return {"schema": SCHEMA_ID, "kind": kind, "ts_ms": ts_ms, "batch_id": int(batch_id), "cluster_id": cluster_id}


def replica_records(replicas, batch_id, cluster_id):
    """(key, encoded value) per replica row (streaming.core.history report columns plus ts_ms)."""
    if replicas.empty:
        return []
    moved = replicas["transition"].to_numpy(dtype=bool)
    message = (replicas["previous_state"].fillna("NEW") + " -> " + replicas["state"]).where(moved, None)
    frame = pd.DataFrame({
        **_head(REPLICA_KIND, replicas["ts_ms"].astype("int64"), batch_id, cluster_id),
        "state": replicas["state"], "message": message, "topic": replicas["topic"],
        "partition": replicas["partition"], "broker": replicas["broker"], "intra_broker": replicas["intra_broker"],
        "previous_state": replicas["previous_state"], "state_since_ms": replicas["state_since_ms"],
        "numerator": replicas["numerator"], "denominator": replicas["denominator"], "progress": replicas["progress"],
        "in_isr": replicas["in_isr"], "rate_bytes_per_sec": replicas["copy_rate"],
        "eta_seconds": replicas["eta_seconds"], "stalled_seconds": replicas["stalled_seconds"],
        "messages_behind_estimate": replicas["messages_behind_estimate"]})
    return list(zip(replica_keys(replicas), _encoded_rows(frame)))


def partition_records(partitions, ts_ms, batch_id, cluster_id):
    """(key, encoded value) per partition rollup row (streaming.spark.outputs adds copy_rate and eta_seconds)."""
    if partitions.empty:
        return []
    total = partitions["bytes_total"].astype("float64")
    frame = pd.DataFrame({
        **_head(PARTITION_KIND, int(ts_ms), batch_id, cluster_id),
        "state": partitions["state"], "message": None, "topic": partitions["topic"],
        "partition": partitions["partition"], "numerator": partitions["bytes_done"].round().astype("Int64"),
        "denominator": total.where(total > 0).round().astype("Int64"), "progress": partitions["progress"],
        "rate_bytes_per_sec": partitions["copy_rate"], "eta_seconds": partitions["eta_seconds"],
        "bytes_total": total.round().astype("Int64"),
        "bytes_remaining": (total - partitions["bytes_done"]).clip(lower=0).round().astype("Int64")})
    return list(zip(partition_keys(partitions), _encoded_rows(frame)))


def reassignment_record(summary, state, ts_ms, batch_id, cluster_id, request_id=None):
    """`state`: the worst partition state, or None when nothing moves."""
    return record(
        REASSIGNMENT_KIND, ts_ms, batch_id, cluster_id, request_id=request_id, state=state,
        partitions_total=summary["partitions_total"], partitions_completed=summary["partitions_completed"],
        bytes_total=summary["bytes_total"], bytes_remaining=summary["bytes_remaining"],
        rate_bytes_per_sec=summary["rate_bytes_per_sec"], eta_seconds=summary["eta_seconds"])
