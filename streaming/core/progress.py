"""The progress core: snapshot tables in, replica / partition / reassignment progress out. Pure.

DESIGN.md "Progress semantics" made executable, vectorized with pandas so that the one-shot CLI and
the streaming job (inside its bucketed stateful operator) run the same code on one replica or 100k.

Replica rows are keyed by (topic, partition, broker, intra_broker). `numerator` / `denominator` are
nullable Int64 (null = not known in this poll), `progress` and the estimates float64 with NaN = null.
"""

import numpy as np
import pandas as pd

from streaming.core.classify import classify
from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.replica_row import CORE_FACTS, KEY, PARTITION_KEY, pandas_dtypes
from streaming.vocabulary.states import FINISHED_STATES, NAME_OF, SEVERITY, ReplicaState

REPLICA_COLUMNS = KEY + ["numerator", "denominator", "progress", "in_isr", "leader", "offset_lag",
                         "messages_behind_estimate"] + list(CORE_FACTS)


def _pairs(frame, list_column, as_name):
    """(topic, partition, <as_name>) for every element of a list column."""
    exploded = frame[PARTITION_KEY + [list_column]].explode(list_column).dropna(subset=[list_column])
    return exploded.rename(columns={list_column: as_name}).astype({as_name: "int32"})


def _member(pairs, candidates, column):
    """Whether each candidate's (topic, partition, <column>) appears in `pairs`."""
    marked = pairs.drop_duplicates().assign(_hit=True)
    joined = candidates[PARTITION_KEY + [column]].merge(marked, on=PARTITION_KEY + [column], how="left")
    return joined["_hit"].notna().to_numpy()


def _current_log_sizes(snapshot):
    """Bytes of each broker's current (not future) log of each partition, from brokers that answered."""
    logs = snapshot["log_dirs"]
    current = logs.loc[~logs["is_future"]]
    return current.groupby(["topic", "partition", "broker"], as_index=False)["size"].sum()


def _moving_inter_broker(snapshot):
    moves = _pairs(snapshot["reassignments"], "adding", "broker")
    moves["intra_broker"] = False
    sizes = _current_log_sizes(snapshot)
    moves = moves.merge(sizes.rename(columns={"size": "numerator"}), on=["topic", "partition", "broker"], how="left")
    meta = snapshot["partitions"][PARTITION_KEY + ["leader"]]
    moves = moves.merge(meta, on=PARTITION_KEY, how="left")
    moves["leader"] = moves["leader"].fillna(-1).astype("int32")
    leader_sizes = sizes.rename(columns={"broker": "leader", "size": "leader_size"})
    moves = moves.merge(leader_sizes, on=["topic", "partition", "leader"], how="left")
    moves["in_isr"] = _member(_pairs(snapshot["partitions"], "isr", "broker"), moves, "broker")
    moves["offset_lag"] = pd.NA
    return moves


def _moving_intra_broker(snapshot):
    logs = snapshot["log_dirs"]
    future = logs.loc[logs["is_future"], ["topic", "partition", "broker", "size", "offset_lag"]]
    future = future.rename(columns={"size": "numerator"})
    future["intra_broker"] = True
    sizes = _current_log_sizes(snapshot).rename(columns={"size": "leader_size"})
    future = future.merge(sizes, on=["topic", "partition", "broker"], how="left")
    future["leader"] = future["broker"].astype("int32")
    future["in_isr"] = False
    return future


def _with_progress(moves, snapshot):
    answered = snapshot.answered_brokers()
    alive = snapshot.alive_brokers()
    destination_answered = moves["broker"].isin(answered)
    # A broker that answered but holds no log yet has copied 0 bytes; one that did not answer is unknown.
    moves["numerator"] = moves["numerator"].astype("Int64").where(~destination_answered | moves["numerator"].notna(), 0)
    moves.loc[~destination_answered, "numerator"] = pd.NA
    leader_known = moves["leader"].isin(answered) & moves["leader_size"].notna()
    leader_size = moves["leader_size"].astype("float64").where(leader_known)
    # Never 0: an empty leader log with a caught-up follower is progress 1.0 over a denominator of 1.
    moves["denominator"] = pd.array(np.maximum(leader_size, 1.0), dtype="Int64")
    numerator = moves["numerator"].astype("float64")
    ratio = np.where(numerator >= leader_size, 1.0, numerator / np.maximum(leader_size, 1.0))
    ratio = np.where(leader_size.isna() | numerator.isna(), np.nan, ratio)
    moves["progress"] = np.where(moves["in_isr"], 1.0, np.minimum(ratio, 1.0))
    # A broker killed a moment ago stays registered and unfenced until its session times out (9 s by
    # default) but answers nothing: it is offline for this poll, not "no bytes yet".
    moves["destination_alive"] = moves["broker"].isin(alive) & destination_answered
    moves["leader_alive"] = moves["leader"].isin(alive) & moves["leader"].isin(answered)
    moves["finished"] = False
    moves["in_replica_set"] = True
    moves["still_reassigning"] = True
    moves["being_removed"] = False
    offsets = snapshot["offsets"]
    moves = moves.merge(offsets, on=PARTITION_KEY, how="left")
    span = (moves["log_end"] - moves["log_start"]).astype("float64")
    moves["messages_behind_estimate"] = (1.0 - moves["progress"]) * span
    return moves


def replica_progress(snapshot):
    """One row per replica being added (inter-broker) and per future log (intra-broker), with progress
    and history-free facts. Columns: REPLICA_COLUMNS."""
    moves = pd.concat([_moving_inter_broker(snapshot), _moving_intra_broker(snapshot)], ignore_index=True)
    if moves.empty:
        return pd.DataFrame({c: pd.Series(dtype=_DTYPES.get(c, "object")) for c in REPLICA_COLUMNS})
    moves = _with_progress(moves, snapshot)
    return moves[REPLICA_COLUMNS].astype(_DTYPES).reset_index(drop=True)


_DTYPES = pandas_dtypes(REPLICA_COLUMNS)


def finished_replicas(tracked, snapshot, current=None):
    """Rows for tracked replica moves (KEY columns) that no longer move in this snapshot: marked
    `finished`, with what the cluster says now - `in_replica_set` (the partition's current replicas; a
    partition missing from the metadata, its topic deleted, holds no broker), `in_isr` (its ISR),
    `still_reassigning` (the partition still reassigns: the target changed in flight) and `being_removed`
    (the broker is in that reassignment's removing list). classify decides COMPLETED or CANCELLED from
    them. `current`, this snapshot's replica_progress when the caller has it already, saves computing it twice."""
    moving = (replica_progress(snapshot) if current is None else current)[KEY]
    gone = tracked[KEY].merge(moving.assign(_moving=True), on=KEY, how="left")
    gone = gone.loc[gone["_moving"].isna(), KEY].reset_index(drop=True)
    partitions = snapshot["partitions"]
    reassignments = snapshot["reassignments"]
    gone["in_replica_set"] = _member(_pairs(partitions, "replicas", "broker"), gone, "broker")
    gone["in_isr"] = _member(_pairs(partitions, "isr", "broker"), gone, "broker")
    gone["being_removed"] = _member(_pairs(reassignments, "removing", "broker"), gone, "broker")
    reassigning = reassignments[PARTITION_KEY].drop_duplicates().assign(_reassigning=True)
    gone["still_reassigning"] = gone[PARTITION_KEY].merge(reassigning, on=PARTITION_KEY, how="left")["_reassigning"] \
        .notna().to_numpy()
    gone["finished"] = True
    # The brokers' liveness no longer matters for a finished move; the numbers come from history.
    defaults = {"numerator": pd.NA, "denominator": pd.NA, "progress": np.nan, "leader": -1,
                "destination_alive": True, "leader_alive": True, "offset_lag": pd.NA,
                "messages_behind_estimate": np.nan}
    return gone.assign(**defaults)[REPLICA_COLUMNS].astype(_DTYPES)


def with_states(replicas, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    out = replicas.copy()
    out["state"] = classify(out, stall_after_s, rate_window_s)
    return out


def eta_seconds(remaining, copy_rate, leader_rate):
    """The one ETA rule (replica, partition, topic and cluster alike): remaining bytes over the copy rate
    net of the leader's growth; 0 when nothing remains; null when the net rate is not positive or unknown."""
    remaining = np.asarray(remaining, dtype="float64")
    net = np.asarray(copy_rate, dtype="float64") - np.nan_to_num(np.asarray(leader_rate, dtype="float64"), nan=0.0)
    eta = np.where(net > 0, remaining / np.where(net > 0, net, 1.0), np.nan)
    return np.where(remaining <= 0, 0.0, eta)


# Per-replica facts carried into a rollup when the rows have them (history columns): how each combines.
ROLLUP_EXTRAS = {"in_isr": "min", "copy_rate": "sum", "leader_rate": "max", "stalled_seconds": "max"}
ROLLUP_COLUMNS = ["replicas", "bytes_done", "bytes_total", "progress", "state"]


def _with_rollup_facts(grouped):
    grouped["progress"] = np.where(grouped["bytes_total"] > 0, grouped["bytes_done"] / grouped["bytes_total"], np.nan)
    grouped["state"] = grouped.pop("_worst").map(NAME_OF)
    if "copy_rate" in grouped:
        grouped["eta_seconds"] = eta_seconds(grouped["bytes_total"] - grouped["bytes_done"], grouped["copy_rate"],
                                             grouped["leader_rate"])
    return grouped


def partition_rollup(replicas):
    """The one rollup of replica rows, per partition: bytes done / total over its moving replicas (a replica
    in the ISR counts whole; a null denominator adds nothing), the worst replica state, and with history
    columns the summed copy rate, the leader's growth, the longest stall, ISR membership of all, the ETA.
    Records, metrics and the CLI report all read it."""
    if replicas.empty:
        return pd.DataFrame(columns=PARTITION_KEY + ROLLUP_COLUMNS)
    rows = replicas.assign(
        _total=replicas["denominator"].astype("float64"),
        _done=np.minimum(replicas["numerator"].astype("float64"), replicas["denominator"].astype("float64")),
        _severity=replicas["state"].map(SEVERITY),
    )
    rows.loc[replicas["in_isr"], "_done"] = rows.loc[replicas["in_isr"], "_total"]
    extras = {c: (c, how) for c, how in ROLLUP_EXTRAS.items() if c in rows}
    grouped = rows.groupby(PARTITION_KEY, as_index=False).agg(
        replicas=("broker", "size"), bytes_done=("_done", "sum"), bytes_total=("_total", "sum"),
        _worst=("_severity", "max"), **extras)
    return _with_rollup_facts(grouped)


def topic_rollup(partitions):
    """Partition rollups summed per topic (the same rule one level up: leader growth adds up across partitions)."""
    if partitions.empty:
        return pd.DataFrame(columns=["topic"] + ROLLUP_COLUMNS)
    extras = {c: (c, "sum" if c == "leader_rate" else how) for c, how in ROLLUP_EXTRAS.items() if c in partitions}
    grouped = partitions.assign(_severity=partitions["state"].map(SEVERITY)).groupby("topic", as_index=False).agg(
        replicas=("replicas", "sum"), bytes_done=("bytes_done", "sum"), bytes_total=("bytes_total", "sum"),
        _worst=("_severity", "max"), **extras)
    return _with_rollup_facts(grouped)


def reassignment_rollup(partitions, copy_rate=None, leader_rate=None):
    """One summary over some partition rollups: partitions total / completed (finished: COMPLETED or
    CANCELLED) / in sync, bytes total / remaining, and, given the summed copy and leader growth rates,
    the rate and ETA (the one rule of `eta_seconds`)."""
    states = partitions["state"] if not partitions.empty else pd.Series(dtype="object")
    bytes_total = float(partitions["bytes_total"].sum()) if not partitions.empty else 0.0
    bytes_done = float(partitions["bytes_done"].sum()) if not partitions.empty else 0.0
    remaining = max(bytes_total - bytes_done, 0.0)
    eta = None if copy_rate is None else float(eta_seconds(remaining, copy_rate, leader_rate or 0.0))
    return {
        "partitions_total": int(len(partitions)),
        "partitions_completed": int(states.isin([s.name for s in FINISHED_STATES]).sum()),
        "partitions_in_sync": int((states == ReplicaState.IN_SYNC.name).sum()),
        "bytes_total": int(bytes_total),
        "bytes_remaining": int(remaining),
        "rate_bytes_per_sec": copy_rate,
        "eta_seconds": None if eta is None or np.isnan(eta) else eta,
    }
