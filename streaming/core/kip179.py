"""The replica rows of `reassign-monitor progress`, each with its KIP-179 status. Pure.

Without a reassignment file the rows are the moves under way (the progress core's rows). With one,
there is exactly one row per replica the file lists, in file order, and its status is the first of
these rules that holds (`statuses` orders them):

    Unknown topic                        the cluster's metadata has no such topic
    Unknown partition                    the topic exists, the partition index does not
    Unknown broker                       no registered broker has the id and no replica set names it
    Broker does not host this partition  the broker is neither in the partition's replica set nor being
                                         added to it (the move never started, was cancelled, or the file
                                         is not the one that was executed)
    In sync                              the broker is alive, in the partition's ISR and has no log-dir move
                                         under way, whether the partition still reassigns or completed
    Behind: N bytes (x%)                 otherwise. N = leader's log bytes - this replica's log bytes
                                         (at least 0) and x = N as a share of the leader's log: what is
                                         still to copy (x = 100 - progress %). "Behind: unknown" when the
                                         progress is unknown in this poll (a broker offline or silent).

A broker that went offline still appears in its partitions' replica sets, so it reads as Behind (state
BROKER_OFFLINE), not as Unknown broker.
"""

from dataclasses import replace

from streaming.core.progress import replica_progress, with_states
from streaming.vocabulary.replica_row import KEY, partition_of
from streaming.vocabulary.snapshot import table

IN_SYNC = "In sync"
UNKNOWN_TOPIC = "Unknown topic"
UNKNOWN_PARTITION = "Unknown partition"
UNKNOWN_BROKER = "Unknown broker"
NOT_HOSTED = "Broker does not host this partition"
BEHIND = "Behind"  # the prefix of every "Behind: ..." status; also its name when statuses are counted
BEHIND_UNKNOWN = "Behind: unknown"

# What the rules read besides the progress facts: whether the cluster knows the row's topic, partition
# and broker, whether the broker holds (or is receiving) the partition, whether the partition is in
# ListPartitionReassignments, and whether this replica is itself being moved (added, or between dirs).
FACT_COLUMNS = ["topic_known", "partition_known", "broker_known", "hosted", "reassigning", "moving"]
ROW_COLUMNS = KEY + FACT_COLUMNS + ["numerator", "denominator", "progress", "in_isr", "leader", "offset_lag",
                                    "messages_behind_estimate", "finished", "in_replica_set",
                                    "destination_alive", "leader_alive", "state", "status"]
# What a listed replica the core did not measure (not hosted, or of an unknown partition) says of its move:
# nothing is moving; every other progress fact, and the state, is null.
NOT_MEASURED = {"intra_broker": False, "moving": False}


def _flag(row, name):
    """A fact as a flag: a null (a fact the core did not measure for the row) is false."""
    return bool(row.get(name))


def is_unknown_topic(row):
    return not _flag(row, "topic_known")


def is_unknown_partition(row):
    return not _flag(row, "partition_known")


def is_unknown_broker(row):
    return not _flag(row, "broker_known") and not _flag(row, "hosted")


def is_not_hosted(row):
    return not _flag(row, "hosted")


def is_in_sync(row):
    # An offline broker can stay in the ISR (the last member of a partition that lost its leader): it is
    # not serving anything, so it is not "in sync".
    return _flag(row, "in_isr") and _flag(row, "destination_alive") and not _flag(row, "intra_broker")


def behind(numerator, denominator, progress):
    """'Behind: N bytes (x%)' for one row, from the core's progress so that x = 100 - the report's %
    column (an empty leader log, denominator 1, is 0 bytes behind); BEHIND_UNKNOWN where a number is
    null (the core sets progress 1.0 for any ISR member, even one whose broker did not answer)."""
    if numerator is None or denominator is None or progress is None:
        return BEHIND_UNKNOWN
    missing = (1.0 - progress) * denominator
    return f"{BEHIND}: {round(missing)} bytes ({100 * (1 - progress):.1f}%)"


def _first_status(row, rules):
    for holds, text in rules:
        if holds(row):
            return text
    return behind(row["numerator"], row["denominator"], row["progress"])


def statuses(rows):
    """The KIP-179 status of each row. Order is precedence: the first rule that holds wins. What the
    cluster does not know comes first (nothing else can be said about it), then whether the broker holds
    the partition at all, then ISR membership, and what is left is a replica still catching up."""
    rules = [
        (is_unknown_topic, UNKNOWN_TOPIC),
        (is_unknown_partition, UNKNOWN_PARTITION),
        (is_unknown_broker, UNKNOWN_BROKER),
        (is_not_hosted, NOT_HOSTED),
        (is_in_sync, IN_SYNC),
    ]
    return [_first_status(row, rules) for row in rows]


def _report_rows(rows):
    """Each row as ROW_COLUMNS (a column the row lacks is null), with its status."""
    return [{**{column: row.get(column) for column in ROW_COLUMNS}, "status": status}
            for row, status in zip(rows, statuses(rows))]


def ongoing_replicas(snapshot):
    """Every move under way (replicas being added, future logs), with state and status."""
    reassigning = _partition_keys(snapshot["reassignments"])
    rows = [{**row, "topic_known": True, "partition_known": True, "broker_known": True, "hosted": True,
             "reassigning": partition_of(row) in reassigning, "moving": True}
            for row in with_states(replica_progress(snapshot))]
    return _report_rows(rows)


def _replica(row):
    return row["topic"], row["partition"], row["broker"]


def _partition_keys(rows):
    return {partition_of(row) for row in rows}


def _replica_keys(rows, list_column):
    """(topic, partition, broker) for every broker of a list column (a null list names none)."""
    return {(row["topic"], row["partition"], broker) for row in rows for broker in row[list_column] or ()}


def listed(moves):
    """One (topic, partition, broker) row per replica a reassignment file lists, in file order."""
    return [{"topic": m.topic, "partition": m.partition, "broker": b} for m in moves for b in m.replicas]


def _facts(replicas, snapshot):
    partitions, reassignments = snapshot["partitions"], snapshot["reassignments"]
    topics = {row["topic"] for row in partitions}
    known_partitions = _partition_keys(partitions)
    brokers = {row["broker"] for row in snapshot["brokers"]}
    # During a reassignment Metadata's replica set already holds the adding brokers; the reassignment
    # row is read too so that a poll whose Metadata lags by a moment still sees them.
    hosts = (_replica_keys(partitions, "replicas") | _replica_keys(reassignments, "replicas")
             | _replica_keys(reassignments, "adding"))
    reassigning = _partition_keys(reassignments)
    return [{**row, "topic_known": row["topic"] in topics, "partition_known": partition_of(row) in known_partitions,
             "broker_known": row["broker"] in brokers, "hosted": _replica(row) in hosts,
             "reassigning": partition_of(row) in reassigning}
            for row in replicas]


def _progress_as_if_adding(hosted, snapshot):
    """{(topic, partition, broker): progress row} of hosted listed replicas. The core measures replicas
    being added, so it is run on a copy of the snapshot that lists every hosted replica as being added:
    the same numerator (the broker's log), denominator (the leader's log) and ISR rule, for replicas that
    move and replicas that stay."""
    adding = {}
    for row in hosted:
        adding.setdefault(partition_of(row), []).append(row["broker"])
    as_adding = [{"topic": t, "partition": p, "replicas": [], "adding": sorted(brokers), "removing": []}
                 for (t, p), brokers in adding.items()]
    widened = replace(snapshot, tables={**snapshot.tables, "reassignments": table("reassignments", as_adding)})
    listed_keys = {_replica(row) for row in hosted}
    progress = {}
    for row in replica_progress(widened):
        key = _replica(row)
        # A listed replica with a future log is moving between log dirs: that move is its row.
        if key in listed_keys and (key not in progress or row["intra_broker"]):
            progress[key] = row
    return progress


def listed_replicas(moves, snapshot):
    """One row per replica the file lists (file order), with progress facts where the broker holds the
    partition, state and status."""
    facts = _facts(listed(moves), snapshot)
    progress = _progress_as_if_adding([row for row in facts if row["hosted"] and row["partition_known"]], snapshot)
    adding = _replica_keys(snapshot["reassignments"], "adding")
    reassigning = _partition_keys(snapshot["reassignments"])
    measured = []
    for key, row in progress.items():
        moving = key in adding or row["intra_broker"]
        still_reassigning = partition_of(row) in reassigning
        # A replica that is not moving, of a partition no longer reassigning, is a finished move: COMPLETED.
        measured.append({**row, "moving": moving, "still_reassigning": still_reassigning,
                         "finished": not still_reassigning and not moving, "in_replica_set": True})
    by_replica = dict(zip(progress, with_states(measured)))
    return _report_rows([{**row, **by_replica.get(_replica(row), NOT_MEASURED)} for row in facts])
