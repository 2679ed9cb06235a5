"""The progress core: snapshot tables in, replica / partition / reassignment progress out. Pure.

docs/progress.md "Progress of a replica move" made executable in plain Python (the one-shot CLI starts without paying
for a dataframe library), so that the CLI and the streaming job (inside its bucketed stateful operator)
run the same code on one replica or 100k. Each call indexes the tables it joins once (dicts and sets),
then walks the rows: linear in the size of the snapshot.

Replica rows are dicts keyed by (topic, partition, broker, intra_broker). `numerator` / `denominator`
are ints or None (null = not known in this poll), `progress` and the estimates floats or None.
"""

from streaming.core.classify import classify
from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.replica_row import CORE_FACTS, KEY, key_of, partition_of
from streaming.vocabulary.states import FINISHED_STATES, ReplicaState, worst

REPLICA_COLUMNS = KEY + ["numerator", "denominator", "progress", "in_isr", "leader", "offset_lag",
                         "messages_behind_estimate"] + list(CORE_FACTS)


def _members(rows, list_column):
    """{(topic, partition, broker)} for every broker of a list column (a null list holds none)."""
    return {(row["topic"], row["partition"], broker) for row in rows for broker in row[list_column] or ()
            if broker is not None}


def _current_log_sizes(log_dirs):
    """{(topic, partition, broker): bytes} of each broker's current (not future) logs, from the brokers
    that answered (a partition may have logs in several dirs of one broker: they add up)."""
    sizes = {}
    for log in log_dirs:
        if not log["is_future"]:
            where = (log["topic"], log["partition"], log["broker"])
            sizes[where] = sizes.get(where, 0) + (log["size"] or 0)
    return sizes


def _offset_spans(offsets):
    """{(topic, partition): log_end - log_start} where both offsets are known."""
    return {partition_of(row): float(row["log_end"] - row["log_start"]) for row in offsets
            if row["log_start"] is not None and row["log_end"] is not None}


def _inter_broker_moves(snapshot, sizes):
    """Raw facts of each replica being added to a partition (reassignments in table order, then each
    adding broker in list order): copied = its current log's bytes, against the leader's log."""
    leaders = {partition_of(row): row["leader"] for row in snapshot["partitions"]}
    isr = _members(snapshot["partitions"], "isr")
    for reassignment in snapshot["reassignments"]:
        topic, partition = partition_of(reassignment)
        leader = leaders.get((topic, partition))
        leader = -1 if leader is None else leader
        for broker in reassignment["adding"] or ():
            if broker is not None:
                yield {"topic": topic, "partition": partition, "broker": broker, "intra_broker": False,
                       "copied": sizes.get((topic, partition, broker)), "leader": leader,
                       "leader_size": sizes.get((topic, partition, leader)),
                       "in_isr": (topic, partition, broker) in isr, "offset_lag": None}


def _intra_broker_moves(snapshot, sizes):
    """Raw facts of each future log (log_dirs table order): a copy within one broker, against that
    broker's current log of the partition. It is never in the ISR as a separate replica."""
    for log in snapshot["log_dirs"]:
        if log["is_future"]:
            topic, partition, broker = log["topic"], log["partition"], log["broker"]
            yield {"topic": topic, "partition": partition, "broker": broker, "intra_broker": True,
                   "copied": log["size"], "leader": broker, "leader_size": sizes.get((topic, partition, broker)),
                   "in_isr": False, "offset_lag": log["offset_lag"]}


def _copied_share(numerator, leader_size):
    """Copied bytes over the leader's, capped at 1 (a follower may hold more than a leader that just
    deleted old segments); null when either is unknown."""
    if numerator is None or leader_size is None:
        return None
    return 1.0 if numerator >= leader_size else numerator / max(leader_size, 1)


def _replica_row(move, answered, alive, spans):
    """One replica row (REPLICA_COLUMNS) from a move's raw facts and this poll's brokers and offsets."""
    broker, leader = move["broker"], move["leader"]
    destination_answered = broker in answered
    # A broker that answered but holds no log yet has copied 0 bytes; one that did not answer is unknown.
    numerator = (move["copied"] or 0) if destination_answered else None
    leader_size = move["leader_size"] if leader in answered else None
    progress = 1.0 if move["in_isr"] else _copied_share(numerator, leader_size)
    span = spans.get((move["topic"], move["partition"]))
    return {
        "topic": move["topic"], "partition": move["partition"], "broker": broker,
        "intra_broker": move["intra_broker"], "numerator": numerator,
        # Never 0: an empty leader log with a caught-up follower is progress 1.0 over a denominator of 1.
        "denominator": None if leader_size is None else max(leader_size, 1),
        "progress": progress, "in_isr": move["in_isr"], "leader": leader, "offset_lag": move["offset_lag"],
        "messages_behind_estimate": None if progress is None or span is None else (1.0 - progress) * span,
        # A broker killed a moment ago stays registered and unfenced until its session times out (9 s by
        # default) but answers nothing: it is offline for this poll, not "no bytes yet".
        "destination_alive": broker in alive and destination_answered,
        "leader_alive": leader in alive and leader in answered,
        "finished": False, "in_replica_set": True, "still_reassigning": True, "being_removed": False,
    }


def replica_progress(snapshot):
    """One row per replica being added (inter-broker) and per future log (intra-broker), with progress
    and history-free facts. Columns: REPLICA_COLUMNS."""
    sizes = _current_log_sizes(snapshot["log_dirs"])
    answered, alive = snapshot.answered_brokers(), snapshot.alive_brokers()
    spans = _offset_spans(snapshot["offsets"])
    moves = [*_inter_broker_moves(snapshot, sizes), *_intra_broker_moves(snapshot, sizes)]
    return [_replica_row(move, answered, alive, spans) for move in moves]


def unreported_moves(snapshot, tracked):
    """KEY rows of the replicas being added by the snapshot's "unreported_reassignments" (moves the job's
    watch saw start that left the list before any batch polled them), except those `tracked` already has:
    finished_replicas then reports them like tracked moves, so their COMPLETED or CANCELLED is never skipped."""
    known = {key_of(row) for row in tracked}
    keys = {(row["topic"], row["partition"], broker, False) for row in snapshot["unreported_reassignments"]
            for broker in row["adding"] or () if broker is not None}
    return [dict(zip(KEY, key)) for key in sorted(keys - known)]


def finished_replicas(tracked, snapshot, current=None):
    """Rows for tracked replica moves (KEY columns) that no longer move in this snapshot: marked
    `finished`, with what the cluster says now - `in_replica_set` (the partition's current replicas; a
    partition missing from the metadata, its topic deleted, holds no broker), `in_isr` (its ISR),
    `still_reassigning` (the partition still reassigns: the target changed in flight) and `being_removed`
    (the broker is in that reassignment's removing list). classify decides COMPLETED or CANCELLED from
    them. `current`, this snapshot's replica_progress when the caller has it already, saves computing it twice."""
    moving = {key_of(row) for row in (replica_progress(snapshot) if current is None else current)}
    left = [row for row in tracked if key_of(row) not in moving]
    if not left:  # most polls: every tracked move still moves, and the partition tables need no index
        return []
    replica_sets = _members(snapshot["partitions"], "replicas")
    isr = _members(snapshot["partitions"], "isr")
    removing = _members(snapshot["reassignments"], "removing")
    reassigning = {partition_of(row) for row in snapshot["reassignments"]}
    gone = []
    for row in left:
        member = (row["topic"], row["partition"], row["broker"])
        # The brokers' liveness no longer matters for a finished move; the numbers come from history.
        gone.append({
            **dict(zip(KEY, key_of(row))), "numerator": None, "denominator": None, "progress": None,
            "in_isr": member in isr, "leader": -1, "offset_lag": None, "messages_behind_estimate": None,
            "destination_alive": True, "leader_alive": True, "finished": True,
            "in_replica_set": member in replica_sets, "still_reassigning": partition_of(row) in reassigning,
            "being_removed": member in removing,
        })
    return gone


def with_states(rows, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    """The rows, each a new dict with its `state` (classify's name)."""
    return [{**row, "state": classify(row, stall_after_s, rate_window_s)} for row in rows]


def eta_seconds(remaining, copy_rate, leader_rate):
    """The one ETA rule (replica, partition, topic and cluster alike): remaining bytes over the copy rate
    net of the leader's growth (an unknown growth counts as none); 0 when nothing remains; null when the
    net rate is not positive or unknown."""
    if remaining is not None and remaining <= 0:
        return 0.0
    if remaining is None or copy_rate is None:
        return None
    net = copy_rate - (leader_rate or 0.0)
    return remaining / net if net > 0 else None


def known_sum(values):
    """A sum where a null adds nothing (0.0 when all are null), as a dataframe sums."""
    return float(sum(value for value in values if value is not None))


def known_max(values):
    """The largest known value; null when none is known."""
    return max((value for value in values if value is not None), default=None)


def _worst(states):
    """The most severe of the known state names; null when none is known."""
    known = [state for state in states if state is not None]
    return worst(known) if known else None


# Per-replica facts carried into a rollup when the rows have them (in_isr always, the rest with history):
# how each combines. The job rolls up in columns (streaming.spark.rollup): each combine here has its column
# form there, looked up by this function, so a new one cannot be left out.
ROLLUP_EXTRAS = {"in_isr": all, "copy_rate": known_sum, "leader_rate": known_max, "stalled_seconds": known_max}


def _grouped(rows, key):
    """The rows in groups of equal key(row), ordered by key."""
    groups = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return [groups[k] for k in sorted(groups)]


def replica_bytes(replica):
    """(done, total) bytes of one replica row: a replica in the ISR counts whole; an unknown numerator or
    denominator leaves done unknown, and an unknown denominator adds nothing to the total."""
    total = None if replica["denominator"] is None else float(replica["denominator"])
    if replica["in_isr"]:
        return total, total
    if total is None or replica["numerator"] is None:
        return None, total
    return float(min(replica["numerator"], replica["denominator"])), total


def _with_rollup_facts(rollup, rows, extras):
    """A rollup (key, replicas, bytes) completed from its rows: progress, the worst state, each of the
    `extras` (column -> how it combines) the rows carry, and the ETA when they carry a copy rate."""
    rollup["progress"] = rollup["bytes_done"] / rollup["bytes_total"] if rollup["bytes_total"] > 0 else None
    rollup["state"] = _worst(row["state"] for row in rows)
    rollup.update({column: combine([row[column] for row in rows]) for column, combine in extras.items()
                   if column in rows[0]})
    if "copy_rate" in rollup:
        rollup["eta_seconds"] = eta_seconds(rollup["bytes_total"] - rollup["bytes_done"], rollup["copy_rate"],
                                            rollup.get("leader_rate"))
    return rollup


# The columns of a partition rollup of history rows, in the order partition_rollup makes them.
PARTITION_COLUMNS = ["topic", "partition", "replicas", "bytes_done", "bytes_total", "progress", "state",
                     *ROLLUP_EXTRAS, "eta_seconds"]


def partition_rollup(replicas):
    """The one rollup of replica rows, per partition: bytes done / total over its moving replicas (a replica
    in the ISR counts whole; a null denominator adds nothing), the worst replica state, and with history
    columns the summed copy rate, the leader's growth, the longest stall, ISR membership of all, the ETA.
    Records, metrics and the CLI report all read it. Sorted by (topic, partition)."""
    rollups = []
    for rows in _grouped(replicas, partition_of):
        done, total = zip(*map(replica_bytes, rows))
        rollup = {"topic": rows[0]["topic"], "partition": rows[0]["partition"], "replicas": len(rows),
                  "bytes_done": known_sum(done), "bytes_total": known_sum(total)}
        rollups.append(_with_rollup_facts(rollup, rows, ROLLUP_EXTRAS))
    return rollups


# One level up, leader growth adds up across partitions (each partition's leader grows on its own).
TOPIC_EXTRAS = {**ROLLUP_EXTRAS, "leader_rate": known_sum}


def topic_rollup(partitions):
    """Partition rollups summed per topic, by the same rules. Sorted by topic."""
    rollups = []
    for rows in _grouped(partitions, lambda row: row["topic"]):
        rollup = {"topic": rows[0]["topic"], "replicas": sum(row["replicas"] for row in rows),
                  "bytes_done": known_sum(row["bytes_done"] for row in rows),
                  "bytes_total": known_sum(row["bytes_total"] for row in rows)}
        rollups.append(_with_rollup_facts(rollup, rows, TOPIC_EXTRAS))
    return rollups


def reassignment_rollup(partitions, copy_rate=None, leader_rate=None):
    """One summary over some partition rollups: partitions total / completed (finished: COMPLETED or
    CANCELLED) / in sync, bytes total / remaining, and, given the summed copy and leader growth rates,
    the rate and ETA (the one rule of `eta_seconds`)."""
    states = [row["state"] for row in partitions]
    bytes_total = known_sum(row["bytes_total"] for row in partitions)
    remaining = max(bytes_total - known_sum(row["bytes_done"] for row in partitions), 0.0)
    finished = {state.name for state in FINISHED_STATES}
    return {
        "partitions_total": len(partitions),
        "partitions_completed": sum(state in finished for state in states),
        "partitions_in_sync": states.count(ReplicaState.IN_SYNC.name),
        "bytes_total": int(bytes_total),
        "bytes_remaining": int(remaining),
        "rate_bytes_per_sec": copy_rate,
        "eta_seconds": None if copy_rate is None else eta_seconds(remaining, copy_rate, leader_rate or 0.0),
    }
