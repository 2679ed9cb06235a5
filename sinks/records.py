"""Records of the progress topic (DESIGN.md "Kafka progress topic"): keys and JSON values. Pure.

The value schema ships as progress_record.schema.json beside this module; tests validate against it.
"""

import json
import math
from pathlib import Path

SCHEMA_ID = "kafka-reassign-monitor/progress/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_record.schema.json")
REPLICA_KIND, PARTITION_KIND, REASSIGNMENT_KIND, THROTTLE_KIND = KINDS = ("replica", "partition", "reassignment", "throttle")


def replica_key(topic, partition, broker, intra_broker=False):
    # An intra-broker (log dir) move of the same replica gets its own key so the two never overwrite.
    return f"{topic}:{partition}:{broker}" + (":future" if intra_broker else "")


def partition_key(topic, partition):
    return f"{topic}:{partition}"


def reassignment_key(request_id=None):
    return "reassignment" if request_id is None else f"reassignment:{request_id}"


def throttle_key(scope, name):
    return f"throttle:{scope}:{name}"


def _clean(value):
    """JSON-safe scalars: NaN/NA -> null, numpy scalars -> Python."""
    if value is None:
        return None
    try:
        if value != value:  # NaN and pandas NA-like floats
            return None
    except (TypeError, ValueError):  # pandas.NA refuses comparison
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


def record(kind, ts_ms, batch_id, cluster_id, message=None, state=None, **fields):
    value = {"schema": SCHEMA_ID, "kind": kind, "ts_ms": int(ts_ms), "batch_id": int(batch_id),
             "cluster_id": cluster_id, "state": state, "message": message}
    value.update({name: _clean(v) for name, v in fields.items()})
    return value


def encode(value):
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")


def replica_record(row, batch_id, cluster_id, request_id=None):
    return record(
        REPLICA_KIND, row["ts_ms"], batch_id, cluster_id, state=row["state"], topic=row["topic"],
        partition=row["partition"], broker=row["broker"], intra_broker=row["intra_broker"],
        request_id=request_id, previous_state=row["previous_state"], state_since_ms=row["state_since_ms"],
        numerator=row["numerator"], denominator=row["denominator"], progress=row["progress"],
        in_isr=row["in_isr"], rate_bytes_per_sec=row["copy_rate"], eta_seconds=row["eta_seconds"],
        stalled_seconds=row["stalled_seconds"], messages_behind_estimate=row["messages_behind_estimate"],
        message=f"{row['previous_state']} -> {row['state']}" if row["transition"] else None)


def partition_record(row, ts_ms, batch_id, cluster_id):
    return record(
        PARTITION_KIND, ts_ms, batch_id, cluster_id, state=row["state"], topic=row["topic"],
        partition=row["partition"], numerator=row["bytes_done"], denominator=row["bytes_total"] or None,
        progress=row["progress"], rate_bytes_per_sec=row.get("copy_rate"), eta_seconds=row.get("eta_seconds"),
        bytes_total=row["bytes_total"], bytes_remaining=max(row["bytes_total"] - row["bytes_done"], 0))


def reassignment_record(summary, state, ts_ms, batch_id, cluster_id, request_id=None):
    """`state`: the worst partition state, or None when nothing moves."""
    return record(
        REASSIGNMENT_KIND, ts_ms, batch_id, cluster_id, request_id=request_id, state=state,
        partitions_total=summary["partitions_total"], partitions_completed=summary["partitions_completed"],
        bytes_total=summary["bytes_total"], bytes_remaining=summary["bytes_remaining"],
        rate_bytes_per_sec=summary["rate_bytes_per_sec"], eta_seconds=summary["eta_seconds"])
