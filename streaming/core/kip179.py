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

import numpy as np
import pandas as pd

from streaming.core.progress import replica_progress, with_states
from streaming.vocabulary.replica_row import KEY
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


def _flag(rows, name):
    return rows[name].astype("boolean").fillna(False).astype(bool)


def is_unknown_topic(rows):
    return ~_flag(rows, "topic_known")


def is_unknown_partition(rows):
    return ~_flag(rows, "partition_known")


def is_unknown_broker(rows):
    return ~_flag(rows, "broker_known") & ~_flag(rows, "hosted")


def is_not_hosted(rows):
    return ~_flag(rows, "hosted")


def is_in_sync(rows):
    # An offline broker can stay in the ISR (the last member of a partition that lost its leader): it is
    # not serving anything, so it is not "in sync".
    return _flag(rows, "in_isr") & _flag(rows, "destination_alive") & ~_flag(rows, "intra_broker")


def behind(numerator, denominator, progress):
    """'Behind: N bytes (x%)' for each row, from the core's progress so that x = 100 - the report's %
    column (an empty leader log, denominator 1, is 0 bytes behind); BEHIND_UNKNOWN where a number is
    null (the core sets progress 1.0 for any ISR member, even one whose broker did not answer)."""
    numerator, denominator, progress = (np.asarray(v, dtype="float64") for v in (numerator, denominator, progress))
    missing = (1.0 - progress) * denominator
    return [BEHIND_UNKNOWN if np.isnan(n) or np.isnan(m) else f"{BEHIND}: {round(m)} bytes ({100 * (1 - p):.1f}%)"
            for n, m, p in zip(numerator, missing, progress)]


def statuses(rows):
    """The KIP-179 status of each row. Order is precedence: the first rule that holds wins. What the
    cluster does not know comes first (nothing else can be said about it), then whether the broker holds
    the partition at all, then ISR membership, and what is left is a replica still catching up."""
    rules = [
        (is_unknown_topic(rows), UNKNOWN_TOPIC),
        (is_unknown_partition(rows), UNKNOWN_PARTITION),
        (is_unknown_broker(rows), UNKNOWN_BROKER),
        (is_not_hosted(rows), NOT_HOSTED),
        (is_in_sync(rows), IN_SYNC),
    ]
    fallback = np.array(behind(*(rows[c].to_numpy(dtype="float64", na_value=np.nan)
                                 for c in ("numerator", "denominator", "progress"))), dtype=object)
    chosen = np.select([np.asarray(mask, dtype=bool) for mask, _ in rules], [text for _, text in rules],
                       default=fallback)
    return pd.Series(chosen, index=rows.index, dtype="object")


def ongoing_replicas(snapshot):
    """Every move under way (replicas being added, future logs), with state and status."""
    rows = with_states(replica_progress(snapshot))
    reassigning = _pairs_in(rows, _partition_keys(snapshot["reassignments"]))
    rows = rows.assign(topic_known=True, partition_known=True, broker_known=True, hosted=True,
                       reassigning=reassigning, moving=True)
    rows["status"] = statuses(rows)
    return rows[ROW_COLUMNS]


def _partition_keys(frame):
    return set(zip(frame["topic"], frame["partition"].astype(int)))


def _replica_keys(frame, list_column):
    return {(t, int(p), int(b)) for t, p, brokers in zip(frame["topic"], frame["partition"], frame[list_column])
            for b in brokers}


def _pairs_in(rows, keys):
    return np.array([(t, int(p)) in keys for t, p in zip(rows["topic"], rows["partition"])], dtype=bool)


def _triples_in(rows, keys):
    return np.array([(t, int(p), int(b)) in keys for t, p, b in zip(rows["topic"], rows["partition"], rows["broker"])],
                    dtype=bool)


def listed(moves):
    """One (topic, partition, broker) row per replica a reassignment file lists, in file order."""
    rows = [{"topic": m.topic, "partition": m.partition, "broker": b} for m in moves for b in m.replicas]
    return pd.DataFrame(rows, columns=["topic", "partition", "broker"]).astype({"partition": "int32", "broker": "int32"})


def _facts(replicas, snapshot):
    partitions, reassignments = snapshot["partitions"], snapshot["reassignments"]
    # During a reassignment Metadata's replica set already holds the adding brokers; the reassignment
    # row is read too so that a poll whose Metadata lags by a moment still sees them.
    hosts = (_replica_keys(partitions, "replicas") | _replica_keys(reassignments, "replicas")
             | _replica_keys(reassignments, "adding"))
    return replicas.assign(
        topic_known=replicas["topic"].isin(set(partitions["topic"])).to_numpy(),
        partition_known=_pairs_in(replicas, _partition_keys(partitions)),
        broker_known=replicas["broker"].isin(set(snapshot["brokers"]["broker"])).to_numpy(),
        hosted=_triples_in(replicas, hosts),
        reassigning=_pairs_in(replicas, _partition_keys(reassignments)),
    )


def _progress_as_if_adding(hosted, snapshot):
    """Progress facts of hosted listed replicas. The core measures replicas being added, so it is run on a
    copy of the snapshot that lists every hosted replica as being added: the same numerator (the broker's
    log), denominator (the leader's log) and ISR rule, for replicas that move and replicas that stay."""
    adding = {}
    for t, p, b in zip(hosted["topic"], hosted["partition"], hosted["broker"]):
        adding.setdefault((t, int(p)), []).append(int(b))
    as_adding = [{"topic": t, "partition": p, "replicas": [], "adding": sorted(brokers), "removing": []}
                 for (t, p), brokers in adding.items()]
    widened = replace(snapshot, tables={**snapshot.tables, "reassignments": table("reassignments", as_adding)})
    progress = replica_progress(widened)
    listed_keys = {(t, int(p), int(b)) for t, p, b in zip(hosted["topic"], hosted["partition"], hosted["broker"])}
    progress = progress.loc[_triples_in(progress, listed_keys)]
    # A listed replica with a future log is moving between log dirs: that move is its row.
    intra = progress.loc[progress["intra_broker"]]
    intra_keys = {(t, int(p), int(b)) for t, p, b in zip(intra["topic"], intra["partition"], intra["broker"])}
    inter = progress.loc[~progress["intra_broker"]]
    return pd.concat([inter.loc[~_triples_in(inter, intra_keys)], intra], ignore_index=True)


def listed_replicas(moves, snapshot):
    """One row per replica the file lists (file order), with progress facts where the broker holds the
    partition, state and status."""
    facts = _facts(listed(moves), snapshot)
    hosted = facts.loc[facts["hosted"] & facts["partition_known"]]
    progress = _progress_as_if_adding(hosted, snapshot)
    adding = _replica_keys(snapshot["reassignments"], "adding")
    reassigning = _partition_keys(snapshot["reassignments"])
    progress["moving"] = _triples_in(progress, adding) | progress["intra_broker"].to_numpy()
    # A replica that is not moving, of a partition no longer reassigning, is a finished move: COMPLETED.
    progress["still_reassigning"] = _pairs_in(progress, reassigning)
    progress["finished"] = ~progress["still_reassigning"].to_numpy() & ~progress["moving"].to_numpy()
    progress["in_replica_set"] = True
    progress = with_states(progress)
    rows = facts.merge(progress, on=["topic", "partition", "broker"], how="left")
    rows["intra_broker"] = rows["intra_broker"].astype("boolean").fillna(False).astype(bool)
    rows["moving"] = rows["moving"].astype("boolean").fillna(False).astype(bool)
    rows["status"] = statuses(rows)
    return rows[ROW_COLUMNS]
