"""Records of the progress topic (docs/records.md): keys and JSON values. Pure.

The value schema ships as progress_record.schema.json beside this module; tests validate against it.
"""

import json
import math
from pathlib import Path

from streaming.vocabulary.json_values import json_value

SCHEMA_ID = "kafka-reassign-monitor/progress/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_record.schema.json")
REPLICA_KIND, PARTITION_KIND, REASSIGNMENT_KIND, THROTTLE_KIND, PLAN_KIND = KINDS = (
    "replica", "partition", "reassignment", "throttle", "plan")


def replica_key(replica):
    """`topic:partition:broker` of a replica row. An intra-broker (log dir) move of the same replica gets its
    own key (`:future`) so the two never overwrite each other."""
    future = ":future" if replica["intra_broker"] else ""
    return f"{replica['topic']}:{replica['partition']}:{replica['broker']}{future}"


def partition_key(partition):
    """`topic:partition` of a partition row."""
    return f"{partition['topic']}:{partition['partition']}"


def reassignment_key(request_id=None):
    return "reassignment" if request_id is None else f"reassignment:{request_id}"


def throttle_key(scope, name):
    return f"throttle:{scope}:{name}"


def plan_key(request_id):
    return f"plan:{request_id}"


def record(kind, ts_ms, batch_id, cluster_id, message=None, state=None, **fields):
    value = {"schema": SCHEMA_ID, "kind": kind, "ts_ms": int(ts_ms), "batch_id": int(batch_id),
             "cluster_id": cluster_id, "state": state, "message": message}
    value.update({name: json_value(v) for name, v in fields.items()})
    return value


def encode(value):
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")


# Replica and partition records come by the 100,000 per batch, so they are written column by column: each
# value's JSON text by its kind (exactly the text json.dumps gives it), then one template per record.
# That took about half the time of json.dumps on dicts when measured at 100,000 records (most of what is left
# is Python's float repr). None is null; a NaN or infinity (rows never hold one) is null as well,
# json_value's rule.
_quote = json.encoder.encode_basestring_ascii  # json.dumps' own string encoder
_INFINITIES = (math.inf, -math.inf)


def _strings(values):
    return ["null" if v is None else _quote(v) for v in values]


def _integers(values):
    return ["null" if v is None else str(v) for v in values]


def _numbers(values):
    return ["null" if v is None or v != v or v in _INFINITIES else repr(v) for v in values]


def _flags(values):
    return ["null" if v is None else "true" if v else "false" for v in values]


def _encoded(texts):
    """UTF-8 JSON objects, one per row, from {field: JSON text of each row}, fields in order."""
    template = "{" + ",".join(f"{_quote(name)}:%s" for name in texts) + "}"
    return [(template % row).encode("utf-8") for row in zip(*texts.values())]


def _head(kind, ts_ms, batch_id, cluster_id, rows):
    """The fields every record starts with, as texts for `rows` records (`ts_ms`: their texts)."""
    return {"schema": [_quote(SCHEMA_ID)] * rows, "kind": [_quote(kind)] * rows, "ts_ms": ts_ms,
            "batch_id": [str(int(batch_id))] * rows, "cluster_id": [_quote(cluster_id)] * rows}


def _whole(value):
    """Bytes as an integer (rounded half to even); null stays null."""
    return None if value is None else round(value)


def _target(total):
    """A partition's target bytes: none (null) when its replicas' targets are unknown or 0."""
    return _whole(total) if total is not None and total > 0 else None


def _remaining(done, total):
    return None if done is None or total is None else round(max(total - done, 0.0))


def _transition(replica):
    """The record's message: `previous -> state` when the state changed this poll (NEW when first seen)."""
    return f"{replica['previous_state'] or 'NEW'} -> {replica['state']}" if replica["transition"] else None


def replica_records(replicas, batch_id, cluster_id):
    """(key, encoded value) per replica row (streaming.core.history report columns plus ts_ms, with the
    budget model's ETA and the reason of streaming.core.reasons: `reason_code`, `reason`)."""
    def column(name):
        return [replica[name] for replica in replicas]

    texts = {
        **_head(REPLICA_KIND, _integers(column("ts_ms")), batch_id, cluster_id, len(replicas)),
        "state": _strings(column("state")), "message": _strings(map(_transition, replicas)),
        "topic": _strings(column("topic")), "partition": _integers(column("partition")),
        "broker": _integers(column("broker")), "intra_broker": _flags(column("intra_broker")),
        "previous_state": _strings(column("previous_state")), "state_since_ms": _integers(column("state_since_ms")),
        "numerator": _integers(column("numerator")), "denominator": _integers(column("denominator")),
        "progress": _numbers(column("progress")), "in_isr": _flags(column("in_isr")),
        "rate_bytes_per_sec": _numbers(column("copy_rate")), "eta_seconds": _numbers(column("eta_seconds")),
        "stalled_seconds": _numbers(column("stalled_seconds")),
        "messages_behind_estimate": _numbers(column("messages_behind_estimate")),
        # Rows not diagnosed (the benchmarks' synthetic batches) carry no reason: null.
        "reason_code": _strings(replica.get("reason_code") for replica in replicas),
        "reason": _strings(replica.get("reason") for replica in replicas)}
    return list(zip(map(replica_key, replicas), _encoded(texts)))


def partition_records(partitions, ts_ms, batch_id, cluster_id):
    """(key, encoded value) per partition rollup row (streaming.spark.outputs adds copy_rate and eta_seconds):
    bytes done, target and remaining as whole bytes."""
    def column(name):
        return [partition[name] for partition in partitions]

    done, total = column("bytes_done"), column("bytes_total")
    texts = {
        **_head(PARTITION_KIND, [str(int(ts_ms))] * len(partitions), batch_id, cluster_id, len(partitions)),
        "state": _strings(column("state")), "message": ["null"] * len(partitions),
        "topic": _strings(column("topic")), "partition": _integers(column("partition")),
        "numerator": _integers(map(_whole, done)), "denominator": _integers(map(_target, total)),
        "progress": _numbers(column("progress")), "rate_bytes_per_sec": _numbers(column("copy_rate")),
        "eta_seconds": _numbers(column("eta_seconds")), "bytes_total": _integers(map(_whole, total)),
        "bytes_remaining": _integers(map(_remaining, done, total))}
    return list(zip(map(partition_key, partitions), _encoded(texts)))


def reassignment_record(summary, state, ts_ms, batch_id, cluster_id, request_id=None):
    """`state`: the worst partition state, or None when nothing moves."""
    return record(
        REASSIGNMENT_KIND, ts_ms, batch_id, cluster_id, request_id=request_id, state=state,
        partitions_total=summary["partitions_total"], partitions_completed=summary["partitions_completed"],
        bytes_total=summary["bytes_total"], bytes_remaining=summary["bytes_remaining"],
        rate_bytes_per_sec=summary["rate_bytes_per_sec"], eta_seconds=summary["eta_seconds"])


def plan_record(row, ts_ms, batch_id, cluster_id):
    """A plan's progress (streaming.control.plans.report.plan_row); `message`: why the job does not advance it."""
    return record(PLAN_KIND, ts_ms, batch_id, cluster_id, message=row["not_advanced"], state=row["state"],
                  request_id=row["request_id"], partitions=row["partitions"],
                  partitions_total=row["partitions_total"], partitions_completed=row["partitions_completed"],
                  bytes_total=row["bytes_total"], bytes_remaining=row["bytes_remaining"],
                  rate_bytes_per_sec=row["rate_bytes_per_sec"], eta_seconds=row["eta_seconds"],
                  advanced_by=row["advanced_by"], limits=row["limits"])
