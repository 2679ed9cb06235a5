"""What each replica move has copied, from one poll: snapshot tables in, one row per replica move out. Pure.

docs/progress.md "Progress of a replica move" made executable over columns (streaming.vocabulary.columns), so that the CLI and the
streaming job (inside each state bucket) run the same code on one replica or 100k: each table is keyed once
(`partition_ids`, `replica_keys`) and joined by sorted lookups, linear-logarithmic in the snapshot's size.

With tiered storage (KIP-405) a new replica copies only the leader's local log: DescribeLogDirs' sizes are local,
so copied / target needs no change; the bytes already in remote storage are estimated apart (`remote_bytes`) and
the messages behind counted from the local log start (docs/progress.md "Tiered storage").

The rows' columns are REPLICA_COLUMNS: `numerator` / `denominator` are counts (NaN: not known in this poll),
`progress` and the estimate floats (NaN: unknown), and the facts classify reads (CORE_FACTS).
"""

import numpy as np

from streaming.core.classify import classify
from streaming.vocabulary.columns import Columns, Groups, concat, empty, lookup, member, partition_ids, replica_keys
from streaming.core.snapshot_columns import NO_LEADER
from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.replica_row import BOOL, CORE_FACTS, COUNT, FIELDS, INT, KEY, STRING

REPLICA_KINDS = {**{name: FIELDS[name] for name in KEY + ["numerator", "denominator", "progress", "in_isr", "leader",
                                                          "offset_lag", "messages_behind_estimate",
                                                          "remote_bytes"]},
                 **CORE_FACTS}
REPLICA_COLUMNS = list(REPLICA_KINDS)
# The snapshot columns this module reads, per table: what the job's state buckets need (streaming.spark.codec ships
# them only); a table not named here is read whole.
READ = {"reassignments": ("topic", "partition", "adding", "removing"),
        "unreported_reassignments": ("topic", "partition", "adding"),
        "log_dirs": ("broker", "topic", "partition", "size", "offset_lag", "is_future")}
KEY_KINDS = {name: FIELDS[name] for name in KEY}
_MOVE_KINDS = {"topic": STRING, "partition": INT, "partition_id": INT, "broker": INT, "intra_broker": BOOL,
               "copied": COUNT, "leader": INT, "leader_size": COUNT, "in_isr": BOOL, "offset_lag": COUNT}


def _log_sizes(snapshot, log_ids):
    """(replica keys, bytes) of each broker's current (not future) logs, from the brokers that answered (a
    partition may have logs in several dirs of one broker: they add up; an unknown size adds nothing)."""
    logs = snapshot["log_dirs"]
    current = ~logs["is_future"]
    keys = replica_keys(log_ids[current], logs["broker"][current])
    groups = Groups(keys)
    return groups.first(keys), groups.known_sum(logs["size"][current])


def _size_of(sizes, partition_id, broker):
    """Bytes of (partition, broker)'s current log; NaN where it has none (or no broker: -1)."""
    keys, values = sizes
    index, found = lookup(keys, replica_keys(partition_id, np.maximum(broker, 0)))
    return np.where(found & (broker >= 0), values[index] if len(values) else 0.0, np.nan)


def _inter_broker_moves(snapshot, ids, sizes):
    """Raw facts of each replica being added to a partition (reassignments in table order, then each adding
    broker in list order): copied = its current log's bytes, against the leader's log."""
    reassignments, adding = snapshot["reassignments"], snapshot["reassignments.adding"]
    partitions = snapshot["partitions"]
    partition_id = ids["reassignments"][adding["row"]]
    broker = adding["broker"]
    at, known = lookup(ids["partitions"], partition_id)
    leader = np.where(known, partitions["leader"][at] if len(partitions) else NO_LEADER, NO_LEADER)
    isr = snapshot["partitions.isr"]
    in_isr = member(replica_keys(ids["partitions"][isr["row"]], isr["broker"]), replica_keys(partition_id, broker))
    row = adding["row"]
    return Columns({"topic": reassignments["topic"][row], "partition": reassignments["partition"][row],
                    "partition_id": partition_id, "broker": broker, "intra_broker": np.zeros(len(broker), bool),
                    "copied": _size_of(sizes, partition_id, broker), "leader": leader,
                    "leader_size": _size_of(sizes, partition_id, leader), "in_isr": in_isr,
                    "offset_lag": np.full(len(broker), np.nan)})


def _intra_broker_moves(snapshot, ids, sizes):
    """Raw facts of each future log (log_dirs table order): a copy within one broker, against that broker's
    current log of the partition. It is never in the ISR as a separate replica."""
    logs = snapshot["log_dirs"]
    future = logs["is_future"]
    broker = logs["broker"][future]
    return Columns({"topic": logs["topic"][future], "partition": logs["partition"][future],
                    "partition_id": ids["log_dirs"][future], "broker": broker,
                    "intra_broker": np.ones(len(broker), bool), "copied": logs["size"][future], "leader": broker,
                    "leader_size": _size_of(sizes, ids["log_dirs"][future], broker),
                    "in_isr": np.zeros(len(broker), bool), "offset_lag": logs["offset_lag"][future]})


def _offsets(snapshot, ids, partition_id):
    """(log start, local log start, log end) of each move's partition; NaN where not known."""
    offsets = snapshot["offsets"]
    index, found = lookup(ids["offsets"], partition_id)

    def of(name):
        values = offsets[name]
        return np.where(found, values[index] if len(values) else 0.0, np.nan)

    return of("log_start"), of("local_log_start"), of("log_end")


def local_span(log_start, local_log_start, log_end):
    """Offsets in the leader's local log: log end - local log start, or - log start where the local log start
    is not known (a cluster before Kafka 3.6 has no tiered storage: its log start is local). NaN when unknown."""
    return log_end - np.where(np.isnan(local_log_start), log_start, local_log_start)


def remote_bytes(leader_size, log_start, local_log_start, log_end):
    """Bytes of the partition in tiered storage only, which no new replica copies: the offsets below the leader's
    local log start, at the local log's bytes per offset. Kafka reports no remote size through its protocol
    (DescribeLogDirs' sizes are local, its total_bytes / usable_bytes are the disk's): an estimate. 0 when the
    local log starts at the log start; NaN when an offset or the leader's size is not known, or the local log holds
    no offsets to measure by."""
    remote_offsets = local_log_start - log_start
    span = log_end - local_log_start
    with np.errstate(divide="ignore", invalid="ignore"):
        per_offset = np.where(span > 0, leader_size / np.maximum(span, 1.0), np.nan)
    return np.where(remote_offsets == 0, 0.0, np.where(remote_offsets > 0, remote_offsets * per_offset, np.nan))


def _keyed(snapshot, *names, extra=()):
    """{table name: partition ids of its rows} for the named tables (and `extra` pairs), keyed together."""
    pairs = [(snapshot[name]["topic"], snapshot[name]["partition"]) for name in names] + list(extra)
    return dict(zip([*names, *range(len(extra))], partition_ids(*pairs)))


def replica_progress(snapshot):
    """One row per replica being added (inter-broker) and per future log (intra-broker), with progress
    and history-free facts. Columns: REPLICA_COLUMNS."""
    ids = _keyed(snapshot, "log_dirs", "partitions", "reassignments", "offsets")
    sizes = _log_sizes(snapshot, ids["log_dirs"])
    moves = concat([_inter_broker_moves(snapshot, ids, sizes), _intra_broker_moves(snapshot, ids, sizes)], _MOVE_KINDS)
    answered, alive, unobserved = snapshot.answered_brokers(), snapshot.alive_brokers(), snapshot.unobserved_brokers()
    broker, leader, in_isr = moves["broker"], moves["leader"], moves["in_isr"]
    destination_answered, leader_answered = np.isin(broker, answered), np.isin(leader, answered)
    # A broker that answered but holds no log yet has copied 0 bytes; one that did not answer is unknown.
    numerator = np.where(destination_answered, np.nan_to_num(moves["copied"], nan=0.0), np.nan)
    leader_size = np.where(leader_answered, moves["leader_size"], np.nan)
    # Copied bytes over the leader's, capped at 1 (a follower may hold more than a leader that just deleted old
    # segments); unknown when either is.
    share = np.where(numerator >= leader_size, 1.0, numerator / np.maximum(leader_size, 1.0))
    progress = np.where(in_isr, 1.0, np.where(np.isnan(numerator) | np.isnan(leader_size), np.nan, share))
    log_start, local_log_start, log_end = _offsets(snapshot, ids, moves["partition_id"])
    n = len(moves)
    return Columns({
        "topic": moves["topic"], "partition": moves["partition"], "broker": broker,
        "intra_broker": moves["intra_broker"], "numerator": numerator,
        # Never 0: an empty leader log with a caught-up follower is progress 1.0 over a denominator of 1.
        "denominator": np.maximum(leader_size, 1.0), "progress": progress, "in_isr": in_isr, "leader": leader,
        "offset_lag": moves["offset_lag"],
        # What the new replica must copy: the leader's local log, never the offsets only in remote storage.
        "messages_behind_estimate": (1.0 - progress) * local_span(log_start, local_log_start, log_end),
        "remote_bytes": remote_bytes(leader_size, log_start, local_log_start, log_end),
        # A broker killed a moment ago stays registered and unfenced until its session times out (9 s by
        # default) but answers nothing: it is offline for this poll, not "no bytes yet".
        "destination_alive": np.isin(broker, alive) & destination_answered,
        "leader_alive": np.isin(leader, alive) & leader_answered,
        # Held as unresponsive while Kafka lists it alive (streaming.core.classify.is_unobserved).
        "destination_unobserved": np.isin(broker, unobserved), "leader_unobserved": np.isin(leader, unobserved),
        "finished": np.zeros(n, bool), "in_replica_set": np.ones(n, bool), "still_reassigning": np.ones(n, bool),
        "being_removed": np.zeros(n, bool),
    }, n)


def unreported_moves(snapshot, tracked):
    """KEY rows of the replicas being added by the snapshot's "unreported_reassignments" (moves the job's
    controller saw start that left the list before any batch polled them), except those `tracked` already has:
    finished_replicas then reports them like tracked moves, so their COMPLETED or CANCELLED is never skipped.
    Sorted by key."""
    unreported, adding = snapshot["unreported_reassignments"], snapshot["unreported_reassignments.adding"]
    topics, partitions = unreported["topic"][adding["row"]], unreported["partition"][adding["row"]]
    ids, known_ids = partition_ids((topics, partitions), (tracked["topic"], tracked["partition"]))
    keys = replica_keys(ids, adding["broker"])
    known = replica_keys(known_ids, tracked["broker"], tracked["intra_broker"])
    order = np.argsort(keys)
    distinct = np.ones(len(keys), dtype=bool)
    distinct[1:] = keys[order][1:] != keys[order][:-1]
    at = order[distinct]
    at = at[~member(known, keys[at])]
    return Columns({"topic": topics[at], "partition": partitions[at], "broker": adding["broker"][at],
                    "intra_broker": np.zeros(len(at), bool)}, len(at))


def finished_replicas(tracked, snapshot, current):
    """Rows for tracked replica moves (KEY columns) that no longer move in this snapshot (`current`, its
    replica_progress): marked `finished`, with what the cluster says now - `in_replica_set` (the partition's
    current replicas; a partition missing from the metadata, its topic deleted, holds no broker), `in_isr` (its
    ISR), `still_reassigning` (the partition still reassigns: the target changed in flight) and `being_removed`
    (the broker is in that reassignment's removing list). classify decides COMPLETED or CANCELLED from them."""
    ids = _keyed(snapshot, "partitions", "reassignments",
                 extra=[(tracked["topic"], tracked["partition"]), (current["topic"], current["partition"])])
    tracked_ids = ids[0]
    moving = replica_keys(ids[1], current["broker"], current["intra_broker"])
    left = ~member(moving, replica_keys(tracked_ids, tracked["broker"], tracked["intra_broker"]))
    gone = tracked.select(KEY).take(left)
    n = len(gone)
    if not n:  # most polls: every tracked move still moves
        return empty(REPLICA_KINDS)
    partition_id, broker = tracked_ids[left], gone["broker"]
    member_key = replica_keys(partition_id, broker)

    def listed(table, name):
        rows = snapshot[f"{table}.{name}"]
        return member(replica_keys(ids[table][rows["row"]], rows["broker"]), member_key)

    nothing = np.full(n, np.nan)
    # The brokers' liveness no longer matters for a finished move; the numbers come from history.
    return Columns({
        **{name: gone[name] for name in KEY}, "numerator": nothing, "denominator": nothing, "progress": nothing,
        "in_isr": listed("partitions", "isr"), "leader": np.full(n, NO_LEADER, np.int64), "offset_lag": nothing,
        "messages_behind_estimate": nothing, "remote_bytes": nothing, "destination_alive": np.ones(n, bool),
        "leader_alive": np.ones(n, bool), "destination_unobserved": np.zeros(n, bool),
        "leader_unobserved": np.zeros(n, bool),
        "finished": np.ones(n, bool), "in_replica_set": listed("partitions", "replicas"),
        "still_reassigning": member(ids["reassignments"], partition_id),
        "being_removed": listed("reassignments", "removing"),
    }, n)


def with_states(rows, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    """The rows with their `state` (classify's)."""
    return rows.with_columns(state=classify(rows, stall_after_s, rate_window_s))
