"""Records of the progress topic (DESIGN.md "Kafka progress topic"): keys and JSON values. Pure.

The value schema ships as progress_record.schema.json beside this module; tests validate against it.
"""

import json
import math
from pathlib import Path

SCHEMA_ID = "kafka-reassign-monitor/progress/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_record.schema.json")
KINDS = ("replica", "partition", "reassignment", "throttle")


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
