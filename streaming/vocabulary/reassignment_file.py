"""`--reassignment-json-file`: Kafka's reassignment format, parsed and checked without a cluster.

    {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}]}

Checks that need the cluster (unknown topics, partitions, brokers) belong to the commands; here every
problem of the file itself is a BadInput naming the entry, so nothing is changed on a bad file: what is
not a file (a directory), too large, unreadable or not UTF-8; JSON that is malformed, nested too deeply,
has duplicate keys, NaN/Infinity or numbers too long to be ids; names Kafka would refuse (streaming.vocabulary.kafka_limits);
ids outside int32; duplicate partitions or brokers; an empty list of partitions where one is needed.
"""

import json
from dataclasses import dataclass

from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput, reading_input
from streaming.vocabulary.kafka_limits import INT32_MAX, topic_name_problem
from streaming.vocabulary.operator_file import read_text

ANY_LOG_DIR = "any"
# Kafka's own tool has no limit; 100,000 moves are about 8 MB of JSON. A cap keeps /dev/zero or a wrong
# file from being read into memory whole.
MAX_FILE_BYTES = 64 * 1024 * 1024
# More digits than any int32 id needs; stops a 5,000-digit number before Python converts it.
MAX_NUMBER_DIGITS = 20


@dataclass(frozen=True)
class PartitionMove:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_id(value):
    return _is_int(value) and 0 <= value <= INT32_MAX


def _entry(index, raw, require_replicas):
    where = f"partitions[{index}]"
    if not isinstance(raw, dict):
        raise BadInput(f"{where}: expected an object")
    topic, partition = raw.get("topic"), raw.get("partition")
    if not isinstance(topic, str) or not topic:
        raise BadInput(f"{where}: 'topic' must be a non-empty string")
    problem = topic_name_problem(topic)
    if problem:
        raise BadInput(f"{where}: topic {shown(topic)!r} {problem}")
    if not _is_id(partition):
        raise BadInput(f"{where} ({topic}): 'partition' must be an integer >= 0 and <= {INT32_MAX}")
    where = f"{topic}-{partition}"
    replicas = raw.get("replicas")
    if replicas is None and not require_replicas:
        return PartitionMove(topic, partition, ())
    if not isinstance(replicas, list) or not replicas or not all(_is_id(b) for b in replicas):
        raise BadInput(f"{where}: 'replicas' must be a non-empty list of broker ids >= 0 and <= {INT32_MAX}")
    if len(set(replicas)) != len(replicas):
        raise BadInput(f"{where}: 'replicas' lists a broker twice: {shown(replicas)}")
    log_dirs = raw.get("log_dirs")
    if log_dirs is not None:
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas) or not all(
                isinstance(d, str) and d for d in log_dirs):
            raise BadInput(f"{where}: 'log_dirs' must list one directory (or \"any\") per replica")
        relative = [d for d in log_dirs if d != ANY_LOG_DIR and not d.startswith("/")]
        if relative:
            raise BadInput(f"{where}: log dir {shown(relative[0])!r} is neither \"any\" nor an absolute path")
        log_dirs = tuple(log_dirs)
    return PartitionMove(topic, partition, tuple(replicas), log_dirs)


def _object(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise BadInput(f"key {shown(twice)!r} appears twice in one object")
    return dict(pairs)


def _integer(text):
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise BadInput(f"number {shown(text, 20)} is too large for an id")
    return int(text)


def _constant(name):
    raise BadInput(f"{name} is not a number JSON allows")


def _decode(text):
    try:
        return json.loads(text, object_pairs_hook=_object, parse_int=_integer, parse_constant=_constant)
    except json.JSONDecodeError as error:
        raise BadInput(f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from error
    except RecursionError as error:
        raise BadInput("not valid JSON: nested too deeply") from error


def parse(text, require_replicas=True, allow_empty=False):
    """The moves of a reassignment JSON document. `require_replicas=False` accepts entries naming only
    topic and partition (what `cancel` needs); `allow_empty` accepts a document listing no partition."""
    document = _decode(text)
    if not isinstance(document, dict):
        raise BadInput("expected a JSON object with 'version' and 'partitions'")
    version = document.get("version")
    if not (_is_int(version) and version == 1):
        raise BadInput(f"unsupported version {shown(repr(version))}: only version 1 exists")
    entries = document.get("partitions")
    if not isinstance(entries, list):
        raise BadInput("'partitions' must be a list")
    if not entries and not allow_empty:
        raise BadInput("'partitions' lists no partition")
    moves = tuple(_entry(i, raw, require_replicas) for i, raw in enumerate(entries))
    seen = set()
    for move in moves:
        key = (move.topic, move.partition)
        if key in seen:
            raise BadInput(f"{move.topic}-{move.partition} appears more than once")
        seen.add(key)
    return moves


def load(path, require_replicas=True, allow_empty=False):
    with reading_input(f"--reassignment-json-file {shown(path, 200)}"):
        return parse(read_text(path, MAX_FILE_BYTES), require_replicas, allow_empty)


def to_json(assignment):
    """Kafka's format for {(topic, partition): replicas}: what `execute` prints for rollback."""
    partitions = [{"topic": t, "partition": p, "replicas": list(r), "log_dirs": [ANY_LOG_DIR] * len(r)}
                  for (t, p), r in sorted(assignment.items())]
    return json.dumps({"version": 1, "partitions": partitions})
