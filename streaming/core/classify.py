"""Which state a replica move is in: one named predicate per state, and one function that orders them.

Predicates work on a whole DataFrame of replica rows at once (vectorized: the streaming job classifies
thousands of replicas per bucket in one call). A row carries the facts of DESIGN.md's progress
semantics; history columns (`stalled_seconds`, `copy_rate`, `leader_rate`, `observed_seconds`) are
absent for a one-shot report, and then the history rules cannot fire.
"""

import numpy as np
import pandas as pd

from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.states import ReplicaState


def _column(rows, name, default):
    return rows[name] if name in rows.columns else pd.Series(default, index=rows.index)


def _flag(rows, name, default):
    # Explicitly boolean: `~` on an object column of Python bools would give -1/-2, both true.
    return _column(rows, name, default).fillna(default).astype(bool)


def is_completed(rows):
    """The move left the reassignment with the broker kept as a full replica: the reassignment ended with
    the broker in the replica set (Kafka ends it only once every adding replica joined the ISR), or the
    target changed in flight and kept the broker, which had joined the ISR (now, or IN_SYNC before)."""
    kept = _flag(rows, "finished", False) & _flag(rows, "in_replica_set", False)
    joined = _flag(rows, "in_isr", False) | _flag(rows, "was_in_sync", False)
    still = _flag(rows, "still_reassigning", False)
    return kept & (~still | (joined & ~_flag(rows, "being_removed", False)))


def is_cancelled(rows):
    """The move left the reassignment any other way: cancelled, its target changed to drop the broker
    (being removed), the topic deleted, or made a plain replica before it caught up. Never a success."""
    return _flag(rows, "finished", False) & ~is_completed(rows)


def is_broker_offline(rows):
    """The destination or the leader broker is not alive, or did not answer this poll (killed and not yet
    fenced): nothing can be copied."""
    return ~_flag(rows, "destination_alive", True) | ~_flag(rows, "leader_alive", True)


def is_in_sync(rows):
    """The destination broker joined the ISR while the partition still reassigns."""
    return _flag(rows, "in_isr", False)


def is_stalled(rows, stall_after_s):
    """Not in the ISR and the copied bytes have not grown for `stall_after_s`."""
    stalled = _column(rows, "stalled_seconds", np.nan).astype("float64")
    return (stalled >= stall_after_s).fillna(False)


def is_falling_behind(rows, rate_window_s):
    """Over a full rate window the leader grew at least as fast as the copy: it cannot finish."""
    copy_rate = _column(rows, "copy_rate", np.nan).astype("float64")
    leader_rate = _column(rows, "leader_rate", np.nan).astype("float64")
    observed = _column(rows, "observed_seconds", 0.0).astype("float64")
    return ((observed >= rate_window_s) & (leader_rate > 0) & (copy_rate <= leader_rate)).fillna(False)


def is_pending(rows):
    """No bytes on the destination yet (known to be none: an unknown count is not zero)."""
    return (_column(rows, "numerator", 0).astype("float64") <= 0).fillna(False).astype(bool)


def classify(rows, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    """The state of every row, as state names. Order is precedence: the first rule that holds wins.

    Finished moves first (nothing else matters once the partition left the reassignment); then a dead
    broker (it explains any stall); then ISR membership (a replica in sync is done copying, whatever
    its byte counts say); then the history rules; then whether any byte arrived.
    """
    rules = [
        (is_completed(rows), ReplicaState.COMPLETED),
        (is_cancelled(rows), ReplicaState.CANCELLED),
        (is_broker_offline(rows), ReplicaState.BROKER_OFFLINE),
        (is_in_sync(rows), ReplicaState.IN_SYNC),
        (is_stalled(rows, stall_after_s), ReplicaState.STALLED),
        (is_falling_behind(rows, rate_window_s), ReplicaState.FALLING_BEHIND),
        (is_pending(rows), ReplicaState.PENDING),
    ]
    names = np.select([np.asarray(mask, dtype=bool) for mask, _ in rules], [state.name for _, state in rules],
                      default=ReplicaState.COPYING.name)
    return pd.Series(names, index=rows.index, dtype="object")
