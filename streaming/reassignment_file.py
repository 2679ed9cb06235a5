"""`--reassignment-json-file`: Kafka's reassignment format, parsed and checked without a cluster.

    {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}]}

Checks that need the cluster (unknown topics, partitions, brokers) belong to the commands; here every
problem of the file itself is a BadInput naming the entry, so nothing is changed on a bad file.
"""

import json
from dataclasses import dataclass

from streaming.errors import BadInput

ANY_LOG_DIR = "any"


@dataclass(frozen=True)
class PartitionMove:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _entry(index, raw, require_replicas):
    where = f"partitions[{index}]"
    if not isinstance(raw, dict):
        raise BadInput(f"{where}: expected an object")
    topic, partition = raw.get("topic"), raw.get("partition")
    if not isinstance(topic, str) or not topic:
        raise BadInput(f"{where}: 'topic' must be a non-empty string")
    if not _is_int(partition) or partition < 0:
        raise BadInput(f"{where} ({topic}): 'partition' must be an integer >= 0")
    where = f"{topic}-{partition}"
    replicas = raw.get("replicas")
    if replicas is None and not require_replicas:
        return PartitionMove(topic, partition, ())
    if not isinstance(replicas, list) or not replicas or not all(_is_int(b) and b >= 0 for b in replicas):
        raise BadInput(f"{where}: 'replicas' must be a non-empty list of broker ids >= 0")
    if len(set(replicas)) != len(replicas):
        raise BadInput(f"{where}: 'replicas' lists a broker twice: {replicas}")
    log_dirs = raw.get("log_dirs")
    if log_dirs is not None:
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas) or not all(
                isinstance(d, str) and d for d in log_dirs):
            raise BadInput(f"{where}: 'log_dirs' must list one directory (or \"any\") per replica")
        log_dirs = tuple(log_dirs)
    return PartitionMove(topic, partition, tuple(replicas), log_dirs)


def parse(text, require_replicas=True):
    """The moves of a reassignment JSON document. `require_replicas=False` accepts entries naming only
    topic and partition (what `cancel` needs)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadInput(f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from error
    if not isinstance(document, dict):
        raise BadInput("expected a JSON object with 'version' and 'partitions'")
    if document.get("version") != 1:
        raise BadInput(f"unsupported version {document.get('version')!r}: only version 1 exists")
    entries = document.get("partitions")
    if not isinstance(entries, list):
        raise BadInput("'partitions' must be a list")
    moves = tuple(_entry(i, raw, require_replicas) for i, raw in enumerate(entries))
    seen = set()
    for move in moves:
        key = (move.topic, move.partition)
        if key in seen:
            raise BadInput(f"{move.topic}-{move.partition} appears more than once")
        seen.add(key)
    return moves


def load(path, require_replicas=True):
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as error:
        raise BadInput(f"--reassignment-json-file {path}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise BadInput(f"--reassignment-json-file {path}: not UTF-8 text") from error
    try:
        return parse(text, require_replicas)
    except BadInput as error:
        raise BadInput(f"--reassignment-json-file {path}: {error}") from error


def to_json(assignment):
    """Kafka's format for {(topic, partition): replicas}: what `execute` prints for rollback."""
    partitions = [{"topic": t, "partition": p, "replicas": list(r), "log_dirs": [ANY_LOG_DIR] * len(r)}
                  for (t, p), r in sorted(assignment.items())]
    return json.dumps({"version": 1, "partitions": partitions})
