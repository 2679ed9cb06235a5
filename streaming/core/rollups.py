"""The rollups of replica rows, assembled in one place for every reader: per partition, per topic, per request
and for the cluster. Records, /metrics, the job's terminal lines and `progress`'s summary all read them. Pure.

Rows are columns (streaming.vocabulary.columns). A partition's bytes are done / total over its moving replicas (a
replica in the ISR counts whole; an unknown count adds nothing), its state the worst of its replicas', and with
history its summed copy rate, its leader's growth, its longest stall and whether all are in the ISR. Every ETA is
the budget model's (streaming.core.budget_view): a partition's is when its last replica finishes, a topic's when
its last partition does, the cluster's when the last move does; unknown when one of them is.
"""

import numpy as np

from streaming.vocabulary.columns import NO_STATE, Columns, Groups, member, partition_ids, worst_code
from streaming.vocabulary.columns import finished as finished_codes
from streaming.vocabulary.replica_row import BOOL, FLOAT, INT, STATE, STRING
from streaming.vocabulary.states import ReplicaState

PARTITION_KINDS = {"topic": STRING, "partition": INT, "replicas": INT, "bytes_done": FLOAT, "bytes_total": FLOAT,
                   "progress": FLOAT, "state": STATE, "in_isr": BOOL, "copy_rate": FLOAT, "leader_rate": FLOAT,
                   "stalled_seconds": FLOAT, "eta_seconds": FLOAT, "remote_bytes": FLOAT}
TOPIC_KINDS = {name: kind for name, kind in PARTITION_KINDS.items() if name != "partition"}


def replica_bytes(replicas):
    """(done, total) bytes of each replica row: a replica in the ISR counts whole; an unknown numerator or
    denominator leaves done unknown (NaN), and an unknown denominator adds nothing to the total."""
    total = replicas["denominator"]
    done = np.where(replicas["in_isr"], total, np.minimum(replicas["numerator"], total))
    return done, total


def finished(rows):
    """Rows (replica or rollup) whose move is finished: COMPLETED or CANCELLED."""
    return finished_codes(rows["state"])


def _progress(done, total):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, done / total, np.nan)


def _column(rows, name):
    values = rows.get(name)
    return np.full(len(rows), np.nan) if values is None else values


def _rolled(groups, rows, done, total, leader_rate, remote, keys):
    """The rollup of grouped rows: `keys` ({name: values per group}) then bytes, progress, state and the rest;
    `remote`: the groups' bytes in tiered storage."""
    bytes_done, bytes_total = groups.known_sum(done), groups.known_sum(total)
    return Columns({
        **keys, "bytes_done": bytes_done, "bytes_total": bytes_total, "progress": _progress(bytes_done, bytes_total),
        "state": groups.worst(rows["state"]).astype(np.int8), "in_isr": groups.all(rows["in_isr"]),
        "copy_rate": groups.known_sum(_column(rows, "copy_rate")), "leader_rate": leader_rate,
        "stalled_seconds": groups.known_max(_column(rows, "stalled_seconds")),
        "eta_seconds": groups.last(_column(rows, "eta_seconds")), "remote_bytes": remote}, len(groups))


def partition_rollup(replicas):
    """The one rollup of replica rows per partition (PARTITION_KINDS), sorted by (topic, partition)."""
    groups = Groups(partition_ids((replicas["topic"], replicas["partition"]))[0])
    done, total = replica_bytes(replicas)
    keys = {"topic": groups.first(replicas["topic"]), "partition": groups.first(replicas["partition"]),
            "replicas": groups.sizes.astype(np.int64)}
    # One partition's replicas share one leader: its growth is the largest any of them saw, its remote bytes are
    # the partition's.
    return _rolled(groups, replicas, done, total, groups.known_max(_column(replicas, "leader_rate")),
                   groups.known_max(_column(replicas, "remote_bytes")), keys)


def topic_rollup(partitions):
    """Partition rollups summed per topic by the same rules (each partition's leader grows on its own, so their
    growths add up). Sorted by topic."""
    groups = Groups(partition_ids((partitions["topic"], np.zeros(len(partitions), np.int64)))[0])
    keys = {"topic": groups.first(partitions["topic"]),
            "replicas": groups._reduce(np.add, partitions["replicas"]) if len(partitions) else np.zeros(0, np.int64)}
    return _rolled(groups, partitions, partitions["bytes_done"], partitions["bytes_total"],
                   groups.known_sum(partitions["leader_rate"]), groups.known_sum(_column(partitions, "remote_bytes")),
                   keys)


def _known_total(values):
    return float(np.nansum(values)) if len(values) else 0.0


def summary(partitions, copy_rate=None, leader_rate=None):
    """One summary over some partition rollups: partitions total / completed (finished: COMPLETED or CANCELLED) /
    in sync, bytes total / remaining, the copy rate, and the ETA - when the last of them finishes (a moment with
    nothing to copy: 0 once a rate is known)."""
    bytes_total = _known_total(partitions["bytes_total"])
    remaining = max(bytes_total - _known_total(partitions["bytes_done"]), 0.0)
    if len(partitions):
        last = float(np.max(partitions["eta_seconds"]))
        eta = None if last != last else last
    else:
        eta = None if copy_rate is None else 0.0
    return {
        "partitions_total": len(partitions),
        "partitions_completed": int(finished(partitions).sum()),
        "partitions_in_sync": int((partitions["state"] == ReplicaState.IN_SYNC.value).sum()),
        "bytes_total": int(bytes_total),
        "bytes_remaining": int(remaining),
        "rate_bytes_per_sec": copy_rate,
        "eta_seconds": eta,
    }


def worst_state(rows):
    """The name of the worst state of some rows; None for none."""
    worst = worst_code(rows["state"])
    return None if worst == NO_STATE else ReplicaState(worst).name


def moving_summary(moving_partitions):
    """(summary with the summed rates, worst state name or None) over moving partition rollups."""
    return (summary(moving_partitions, _known_total(moving_partitions["copy_rate"]),
                    _known_total(moving_partitions["leader_rate"])), worst_state(moving_partitions))


def request_rollups(partitions, requests):
    """Per request id ({id: [(topic, partition), ...]} of moves started by `execute`): (summary, worst state) over
    the request's partitions seen this batch. A partition of the request that is no longer in the batch
    finished earlier: it counts as completed with its bytes done."""
    rollups = {}
    if not requests:
        return rollups
    moving = partitions.take(~finished(partitions))
    for request_id, keys in requests.items():
        wanted = sorted(set(keys))
        ids = partition_ids((moving["topic"], moving["partition"]),
                            (np.array([t for t, _ in wanted] or [], dtype=object),
                             np.array([p for _, p in wanted] or [], dtype=np.int64)))
        mine = moving.take(member(ids[1], ids[0]))
        request_summary, state = moving_summary(mine)
        request_summary["partitions_completed"] += len(wanted) - len(mine)
        request_summary["partitions_total"] = len(wanted)
        rollups[request_id] = (request_summary, state)
    return rollups
