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
BROKER_OFFLINE), not as Unknown broker. The rows are columns (streaming.vocabulary.columns), as the core's.
"""

from dataclasses import replace

import numpy as np

from streaming.core import classify
from streaming.core.measure import REPLICA_KINDS, replica_progress, with_states
from streaming.core.snapshot_columns import from_snapshot
from streaming.vocabulary.columns import Columns, from_rows, member, nulls, partition_ids, replica_keys
from streaming.vocabulary.replica_row import BOOL, STATE, STRING, TEXT
from streaming.vocabulary.snapshot import table
from streaming.vocabulary.states import Kip179Status

UNKNOWN_TOPIC, UNKNOWN_PARTITION, UNKNOWN_BROKER, NOT_HOSTED, IN_SYNC, BEHIND, BEHIND_UNKNOWN = Kip179Status

# What the rules read besides the progress facts: whether the cluster knows the row's topic, partition
# and broker, whether the broker holds (or is receiving) the partition, whether the partition is in
# ListPartitionReassignments, and whether this replica is itself being moved (added, or between dirs).
FACT_KINDS = {"topic_known": BOOL, "partition_known": BOOL, "broker_known": BOOL, "hosted": BOOL,
              "reassigning": BOOL, "moving": BOOL}
ROW_KINDS = {**REPLICA_KINDS, **FACT_KINDS, "state": STATE, "status": TEXT}


def is_unknown_topic(rows):
    return ~rows["topic_known"]


def is_unknown_partition(rows):
    return ~rows["partition_known"]


def is_unknown_broker(rows):
    return ~rows["broker_known"] & ~rows["hosted"]


def is_not_hosted(rows):
    return ~rows["hosted"]


def is_in_sync(rows):
    """In sync as the progress core says it (streaming.core.classify), with no log-dir move of its own under way."""
    return classify.is_in_sync(rows) & ~rows["intra_broker"]


def behind(numerator, denominator, progress):
    """'Behind: N bytes (x%)' for one row, from the core's progress so that x = 100 - the report's %
    column (an empty leader log, denominator 1, is 0 bytes behind); BEHIND_UNKNOWN where a number is
    unknown (the core sets progress 1.0 for any ISR member, even one whose broker did not answer)."""
    if numerator is None or denominator is None or progress is None:
        return BEHIND_UNKNOWN.value
    missing = (1.0 - progress) * denominator
    return f"{BEHIND}: {round(missing)} bytes ({100 * (1 - progress):.1f}%)"


# Order is precedence: the first rule that holds wins. What the cluster does not know comes first (nothing else can
# be said about it), then whether the broker holds the partition at all, then ISR membership, and what is left is a
# replica still catching up.
RULES = ((is_unknown_topic, UNKNOWN_TOPIC), (is_unknown_partition, UNKNOWN_PARTITION),
         (is_unknown_broker, UNKNOWN_BROKER), (is_not_hosted, NOT_HOSTED), (is_in_sync, IN_SYNC))


def statuses(rows):
    """The KIP-179 status of each row (an object array)."""
    out = np.full(len(rows), None, dtype=object)
    for holds, text in reversed(RULES):  # a row's first rule is the one written last
        out[holds(rows)] = text.value
    rest = np.flatnonzero(out == None)  # noqa: E711 (elementwise)
    for i, row in zip(rest.tolist(), rows.select(["numerator", "denominator", "progress"]).take(rest).rows()):
        out[i] = behind(row["numerator"], row["denominator"], row["progress"])
    return out


def _with_statuses(rows):
    """The rows with every column of ROW_KINDS (a column they lack null) and their status."""
    filled = rows.with_columns(**{name: nulls(len(rows), kind) for name, kind in ROW_KINDS.items() if name not in rows})
    filled = filled.select(list(ROW_KINDS))
    return filled.with_columns(status=statuses(filled))


def ongoing_replicas(snapshot):
    """Every move under way (replicas being added, future logs), with state and status."""
    columns = from_snapshot(snapshot)
    rows = with_states(replica_progress(columns))
    reassignments = columns["reassignments"]
    ids = partition_ids((rows["topic"], rows["partition"]), (reassignments["topic"], reassignments["partition"]))
    every = np.ones(len(rows), bool)
    return _with_statuses(rows.with_columns(topic_known=every, partition_known=every, broker_known=every,
                                            hosted=every, reassigning=member(ids[1], ids[0]), moving=every))


def listed(moves):
    """One (topic, partition, broker) row per replica a reassignment file lists, in file order."""
    return [{"topic": m.topic, "partition": m.partition, "broker": b} for m in moves for b in m.replicas]


def listed_replicas(moves, snapshot):
    """One row per replica the file lists (file order), with progress facts where the broker holds the
    partition, state and status."""
    columns = from_snapshot(snapshot)
    rows = from_rows(listed(moves), {"topic": STRING}) if moves else Columns(
        {"topic": np.empty(0, object), "partition": np.empty(0, np.int64), "broker": np.empty(0, np.int64)})
    partitions, reassignments = columns["partitions"], columns["reassignments"]
    ids, partition_id, reassigning_id = partition_ids((rows["topic"], rows["partition"]),
                                                      (partitions["topic"], partitions["partition"]),
                                                      (reassignments["topic"], reassignments["partition"]))
    key = replica_keys(ids, rows["broker"])

    def brokers_of(name, owner_ids):
        listed_rows = columns[name]
        return replica_keys(owner_ids[listed_rows["row"]], listed_rows["broker"])

    # During a reassignment Metadata's replica set already holds the adding brokers; the reassignment row is
    # read too so that a poll whose Metadata lags by a moment still sees them.
    hosts = np.concatenate([brokers_of("partitions.replicas", partition_id),
                            brokers_of("reassignments.replicas", reassigning_id),
                            brokers_of("reassignments.adding", reassigning_id)])
    topics = set(partitions["topic"].tolist())
    facts = rows.with_columns(
        topic_known=np.array([t in topics for t in rows["topic"].tolist()], dtype=bool).reshape(len(rows)),
        partition_known=member(partition_id, ids), broker_known=member(columns["brokers"]["broker"], rows["broker"]),
        hosted=member(hosts, key), reassigning=member(reassigning_id, ids))
    measured = _measured(facts, snapshot, member(brokers_of("reassignments.adding", reassigning_id), key))
    return _with_statuses(facts.with_columns(**{name: values for name, values in measured.items()}))


def _measured(facts, snapshot, adding):
    """The progress columns of each listed replica the cluster hosts (null elsewhere). The core measures replicas
    being added, so it runs on a copy of the snapshot that lists every hosted replica as being added: the same
    numerator (the broker's log), denominator (the leader's log) and ISR rule, for replicas that move and
    replicas that stay. A listed replica with a future log is moving between log dirs: that move is its row."""
    hosted = np.flatnonzero(facts["hosted"] & facts["partition_known"])
    wanted = {}
    for i, (topic, partition, broker) in zip(hosted.tolist(), zip(facts["topic"][hosted].tolist(),
                                                                   facts["partition"][hosted].tolist(),
                                                                   facts["broker"][hosted].tolist())):
        wanted.setdefault((topic, partition), {})[broker] = i
    as_adding = [{"topic": t, "partition": p, "replicas": [], "adding": sorted(brokers), "removing": []}
                 for (t, p), brokers in wanted.items()]
    widened = replace(snapshot, tables={**snapshot.tables, "reassignments": table("reassignments", as_adding)})
    progress = replica_progress(from_snapshot(widened))
    chosen = {}
    keys = zip(progress["topic"].tolist(), progress["partition"].tolist(), progress["broker"].tolist(),
               progress["intra_broker"].tolist())
    for j, (topic, partition, broker, intra) in enumerate(keys):
        i = wanted.get((topic, partition), {}).get(broker)
        if i is not None and (i not in chosen or intra):
            chosen[i] = j
    at, of = np.array(list(chosen), dtype=np.int64), np.array(list(chosen.values()), dtype=np.int64)
    measured = progress.take(of)
    moving = adding[at] | measured["intra_broker"]
    still_reassigning = facts["reassigning"][at]
    # A replica that is not moving, of a partition no longer reassigning, is a finished move: COMPLETED.
    measured = with_states(measured.with_columns(moving=moving, still_reassigning=still_reassigning,
                                                 finished=~still_reassigning & ~moving,
                                                 in_replica_set=np.ones(len(at), bool)))
    n = len(facts)
    out = {}
    for name in [*REPLICA_KINDS, "state", "moving"]:
        if name in ("topic", "partition", "broker"):
            continue
        kind = ROW_KINDS[name]
        column = nulls(n, kind)
        column[at] = measured[name]
        out[name] = column
    return out
