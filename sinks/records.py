"""Records of the progress topic (docs/records.md): keys, JSON values and which rows get one. Pure.

The value schema ships as progress_record.schema.json beside this module; tests validate against it. Every record
names its cluster twice: `cluster`, the name the job calls it by (streaming.vocabulary.cluster_name, the `cluster`
label of the metrics), and `cluster_id`, Kafka's id of it.
"""

import json
import math
import zlib
from pathlib import Path

import numpy as np

from streaming.vocabulary.cluster_name import CLUSTER
from streaming.vocabulary.columns import bytes_left
from streaming.vocabulary.defaults import RECORD_ROW_BUDGET
from streaming.vocabulary.json_values import json_value
from streaming.vocabulary.states import STATE_NAMES

SCHEMA_ID = "kafka-reassign-monitor/progress/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_record.schema.json")
REPLICA_KIND, PARTITION_KIND, REASSIGNMENT_KIND, THROTTLE_KIND, PLAN_KIND = KINDS = (
    "replica", "partition", "reassignment", "throttle", "plan")


def reassignment_key(request_id=None):
    return "reassignment" if request_id is None else f"reassignment:{request_id}"


def throttle_key(scope, name):
    return f"throttle:{scope}:{name}"


def plan_key(request_id):
    return f"plan:{request_id}"


def record(kind, ts_ms, batch_id, cluster_id, message=None, state=None, *, cluster, **fields):
    value = {"schema": SCHEMA_ID, "kind": kind, "ts_ms": int(ts_ms), "batch_id": int(batch_id), CLUSTER: cluster,
             "cluster_id": cluster_id, "state": state, "message": message}
    value.update({name: json_value(v) for name, v in fields.items()})
    return value


def encode(value):
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")


# Replica and partition records come by the 100,000 per batch, so they are written column by column from the
# rows' columns (streaming.vocabulary.columns): each value's JSON text by its kind (exactly the text json.dumps
# gives it), then one template per record. Null (None, NaN) is null; an infinity (rows never hold one) is null as well,
# json_value's rule.
_quote = json.encoder.encode_basestring_ascii  # json.dumps' own string encoder


def _strings(values):
    return ["null" if v is None else _quote(v) for v in values.tolist()]


def _integers(values):
    return list(map(str, values.tolist()))


def _counts(values):
    """Whole numbers that may be unknown (NaN): rounded half to even, as round() does."""
    known = np.isfinite(values)
    texts = list(map(str, np.where(known, np.round(values), 0).astype(np.int64).tolist()))
    return texts if known.all() else [t if k else "null" for t, k in zip(texts, known.tolist())]


def _numbers(values):
    known = np.isfinite(values)
    texts = list(map(repr, values.tolist()))
    return texts if known.all() else [t if k else "null" for t, k in zip(texts, known.tolist())]


def _flags(values):
    return np.where(values, "true", "false").tolist()


_STATE_TEXTS = np.array(["null", *map(_quote, STATE_NAMES)], dtype=object)  # NO_STATE (-1) reads "null"


def _states(values):
    return _STATE_TEXTS[values.astype(np.int64) + 1].tolist()


def _encoded(texts):
    """UTF-8 JSON objects, one per row, from {field: JSON text of each row}, fields in order."""
    template = "{" + ",".join(f"{_quote(name)}:%s" for name in texts) + "}"
    return [(template % row).encode("utf-8") for row in zip(*texts.values())]


def _head(kind, ts_ms, batch_id, cluster, cluster_id, rows):
    """The fields every record starts with, as texts for `rows` records."""
    return {"schema": [_quote(SCHEMA_ID)] * rows, "kind": [_quote(kind)] * rows, "ts_ms": [str(int(ts_ms))] * rows,
            "batch_id": [str(int(batch_id))] * rows, CLUSTER: [_quote(cluster)] * rows,
            "cluster_id": [_quote(cluster_id)] * rows}


def _keys(rows, future):
    """The key of each row: `topic:partition` (a partition), `topic:partition:broker` (a replica, when `future` is
    given). An intra-broker (log dir) move of the same replica gets its own key (`:future`) so the two never
    overwrite each other."""
    partitions = [f"{topic}:{partition}"
                  for topic, partition in zip(rows["topic"].tolist(), rows["partition"].tolist())]
    if future is None:
        return partitions
    return [f"{key}:{broker}:future" if intra else f"{key}:{broker}"
            for key, broker, intra in zip(partitions, rows["broker"].tolist(), future.tolist())]


def _transitions(replicas):
    """The record's message: `previous -> state` where the state changed this poll (NEW when first seen)."""
    names = np.array([*STATE_NAMES, "NEW"], dtype=object)  # NO_STATE (-1) reads the last
    previous, state = names[replicas["previous_state"].astype(np.int64)], names[replicas["state"].astype(np.int64)]
    return ["null" if not changed else _quote(f"{before} -> {now}")
            for changed, before, now in zip(replicas["transition"].tolist(), previous.tolist(), state.tolist())]


def replica_records(replicas, ts_ms, batch_id, cluster_id, *, cluster):
    """(key, encoded value) per replica row (history report columns with the budget model's ETA and the reason of
    streaming.core.diagnosis: `reason_code`, `reason`; rows without them or without `remote_bytes` - the
    benchmarks' synthetic batches - carry null)."""
    n = len(replicas)
    nothing = np.full(n, None, dtype=object)
    texts = {
        **_head(REPLICA_KIND, ts_ms, batch_id, cluster, cluster_id, n),
        "state": _states(replicas["state"]), "message": _transitions(replicas),
        "topic": _strings(replicas["topic"]), "partition": _integers(replicas["partition"]),
        "broker": _integers(replicas["broker"]), "intra_broker": _flags(replicas["intra_broker"]),
        "previous_state": _states(replicas["previous_state"]), "state_since_ms": _integers(replicas["state_since_ms"]),
        "numerator": _counts(replicas["numerator"]), "denominator": _counts(replicas["denominator"]),
        "progress": _numbers(replicas["progress"]), "in_isr": _flags(replicas["in_isr"]),
        "rate_bytes_per_sec": _numbers(replicas["copy_rate"]), "eta_seconds": _numbers(replicas["eta_seconds"]),
        "stalled_seconds": _numbers(replicas["stalled_seconds"]),
        "messages_behind_estimate": _numbers(replicas["messages_behind_estimate"]),
        "remote_bytes": _counts(replicas.get("remote_bytes", np.full(n, np.nan))),
        "reason_code": _strings(replicas.get("reason_code", nothing)),
        "reason": _strings(replicas.get("reason", nothing))}
    return list(zip(_keys(replicas, replicas["intra_broker"]), _encoded(texts)))


def partition_records(partitions, ts_ms, batch_id, cluster_id, *, cluster):
    """(key, encoded value) per partition rollup row (streaming.core.rollups): bytes done, target and remaining as
    whole bytes; a target of 0 (every replica's unknown) is null."""
    n = len(partitions)
    done, total = partitions["bytes_done"], partitions["bytes_total"]
    texts = {
        **_head(PARTITION_KIND, ts_ms, batch_id, cluster, cluster_id, n),
        "state": _states(partitions["state"]), "message": ["null"] * n,
        "topic": _strings(partitions["topic"]), "partition": _integers(partitions["partition"]),
        "numerator": _counts(done), "denominator": _counts(np.where(total > 0, total, np.nan)),
        "progress": _numbers(partitions["progress"]), "rate_bytes_per_sec": _numbers(partitions["copy_rate"]),
        "eta_seconds": _numbers(partitions["eta_seconds"]), "bytes_total": _counts(total),
        "remote_bytes": _counts(partitions.get("remote_bytes", np.full(n, np.nan))),
        "bytes_remaining": _counts(bytes_left(total, done))}
    return list(zip(_keys(partitions, None), _encoded(texts)))


def _phase(rows, every):
    """Each row's turn among `every` batches: by its partition (crc32 of the topic plus the partition), so a
    partition's record and its replicas' come in the same batch, and a key's turn is the same in every process."""
    if every == 1:
        return np.zeros(len(rows), dtype=np.int64)
    topics = rows["topic"].tolist()
    crc = {topic: zlib.crc32(topic.encode("utf-8")) for topic in set(topics)}
    return (np.fromiter(map(crc.__getitem__, topics), np.int64, len(topics)) + rows["partition"]) % every


def rewritten(replicas, batch_id, budget=RECORD_ROW_BUDGET):
    """Which replica rows get a record this batch: every transition (first sight, a state change, the finish of
    a move), and of the steady rows those whose turn it is - every steady row every batch while there are at
    most `budget` of them, else each once every ceil(steady / budget) batches, by partition (`_phase`)."""
    transition = replicas["transition"]
    every = max(1, math.ceil(int((~transition).sum()) / budget))
    return transition | ((_phase(replicas, every) + batch_id) % every == 0)


def reassignment_record(summary, state, ts_ms, batch_id, cluster_id, request_id=None, *, cluster):
    """`state`: the worst partition state, or None when nothing moves."""
    return record(
        REASSIGNMENT_KIND, ts_ms, batch_id, cluster_id, cluster=cluster, request_id=request_id, state=state,
        partitions_total=summary["partitions_total"], partitions_completed=summary["partitions_completed"],
        bytes_total=summary["bytes_total"], bytes_remaining=summary["bytes_remaining"],
        rate_bytes_per_sec=summary["rate_bytes_per_sec"], eta_seconds=summary["eta_seconds"])


def plan_record(row, ts_ms, batch_id, cluster_id, *, cluster):
    """A plan's progress (streaming.control.plans.report.plan_row); `message`: why the job does not advance it."""
    return record(PLAN_KIND, ts_ms, batch_id, cluster_id, cluster=cluster, message=row["not_advanced"],
                  state=row["state"],
                  request_id=row["request_id"], partitions=row["partitions"],
                  partitions_total=row["partitions_total"], partitions_completed=row["partitions_completed"],
                  bytes_total=row["bytes_total"], bytes_remaining=row["bytes_remaining"],
                  rate_bytes_per_sec=row["rate_bytes_per_sec"], eta_seconds=row["eta_seconds"],
                  advanced_by=row["advanced_by"], limits=row["limits"])
