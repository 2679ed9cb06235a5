"""Where replicas sit among their brokers' log dirs, pure: what a move between log dirs (JBOD) still has to do.

A replica is placed when its broker's current log of it is in the log dir its move named and no future log of
it is copying (DescribeLogDirs: one row per log, `is_future` for the copy a move between log dirs makes). A
broker that did not answer DescribeLogDirs shows no log: its replicas are not placed, never taken as done.
`logs` below: (topic, partition) -> that partition's DescribeLogDirs rows (`logs_of`).
"""

from collections import defaultdict


def logs_of(log_rows):
    logs = defaultdict(list)
    for row in log_rows:
        logs[(row["topic"], row["partition"])].append(row)
    return logs


def _current(rows, broker):
    return next((r for r in rows if r["broker"] == broker and not r["is_future"]), None)


def _future(rows, broker):
    return next((r for r in rows if r["broker"] == broker and r["is_future"]), None)


def misplaced(move, logs):
    """The brokers of `move` (streaming.control.ownership.records.Move) whose replica is not in its named log dir
    yet: no current log there, or a future log still copying."""
    rows = logs.get((move.topic, move.partition), ())
    return frozenset(b for b, d in move.named_dirs.items()
                     if _future(rows, b) is not None or (_current(rows, b) or {}).get("log_dir") != d)


def copies(move, logs):
    """broker -> bytes its current log holds, for the replicas of `move` that exist and must be copied into another
    log dir of their broker (a new replica is created in its named dir and copies nothing here)."""
    rows = logs.get((move.topic, move.partition), ())
    return {b: _current(rows, b)["size"] for b in misplaced(move, logs) if _current(rows, b) is not None}


def to_place(move, logs):
    """(topic, partition, broker) -> log dir: the AlterReplicaLogDirs that start what `move` still needs - replicas
    that exist, are not in their named dir, and have no future log copying into it."""
    rows = logs.get((move.topic, move.partition), ())
    named = move.named_dirs
    return {(move.topic, move.partition, b): named[b] for b in misplaced(move, logs)
            if _current(rows, b) is not None and (_future(rows, b) or {}).get("log_dir") != named[b]}


def new_replica_dirs(moves):
    """(topic, partition, broker) -> log dir asked for the replicas their broker does not host yet. Sent before the
    reassignment, as Kafka's own tool does: the broker notes the dir and creates the new replica there. Sent only
    after, the replica is created in the broker's choice of dir and then copied again into the one asked for."""
    return {(m.topic, m.partition, b): d for m in moves for b, d in m.named_dirs.items() if b not in m.sources}


def between_dirs(log_rows):
    """(topic, partition) -> {broker: bytes of the current log its future log copies}: every move between log dirs
    in `log_rows` (whoever started it)."""
    logs = logs_of(log_rows)
    moving = defaultdict(dict)
    for key, rows in logs.items():
        for row in rows:
            if row["is_future"]:
                moving[key][row["broker"]] = (_current(rows, row["broker"]) or {}).get("size") or 0
    return dict(moving)
