"""Which state a replica move is in: one named predicate per state, and one function that orders them.

Each predicate reads the facts of many moves at once (a Columns of replica rows, streaming.vocabulary.columns) and
says for each whether it holds: a numpy bool array. The facts are the progress semantics (docs/progress.md): yes/no facts
(`finished`, `in_replica_set`, `in_isr`, ... ; a fact the rows lack reads as its default in FLAG_DEFAULTS) and
numbers (`numerator`, and the history columns `stalled_seconds`, `copy_rate`, `leader_rate`,
`observed_seconds`). A number the rows lack or do not know (NaN) makes a rule on it not fire: a one-shot report
has no history, and then the history rules cannot fire.
"""

import numpy as np

from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.states import ReplicaState

# A yes/no fact the rows do not carry reads as this.
FLAG_DEFAULTS = {"finished": False, "in_replica_set": False, "still_reassigning": False, "being_removed": False,
                 "in_isr": False, "was_in_sync": False, "destination_alive": True, "leader_alive": True,
                 "destination_unobserved": False, "leader_unobserved": False}


def _flag(facts, name):
    values = facts.get(name)
    return np.full(len(facts), FLAG_DEFAULTS[name], dtype=bool) if values is None else values


def _number(facts, name):
    """A number per row; NaN (unknown) where the rows do not carry it."""
    values = facts.get(name)
    return np.full(len(facts), np.nan) if values is None else values


def is_completed(facts):
    """The move left the reassignment with the broker kept as a full replica: the reassignment ended with
    the broker in the replica set (Kafka ends it only once every adding replica joined the ISR), or the
    target changed in flight and kept the broker, which had joined the ISR (now, or IN_SYNC before)."""
    joined = _flag(facts, "in_isr") | _flag(facts, "was_in_sync")
    return (_flag(facts, "finished") & _flag(facts, "in_replica_set")
            & (~_flag(facts, "still_reassigning") | (joined & ~_flag(facts, "being_removed"))))


def is_cancelled(facts):
    """The move left the reassignment any other way: cancelled, its target changed to drop the broker
    (being removed), the topic deleted, or made a plain replica before it caught up. Never a success."""
    return _flag(facts, "finished") & ~is_completed(facts)


def is_broker_offline(facts):
    """The destination or the leader broker is not alive by Kafka's view, or its connection was refused or closed
    this poll (killed and not yet fenced): nothing can be copied."""
    return ((~_flag(facts, "destination_alive") & ~_flag(facts, "destination_unobserved"))
            | (~_flag(facts, "leader_alive") & ~_flag(facts, "leader_unobserved")))


def is_unobserved(facts):
    """Here, after the offline rule: the destination or the leader did not answer the job this poll while Kafka lists
    it alive (hung and not yet fenced, or cut off from the job and not from the other brokers). Its bytes are not
    seen; Kafka does not call it down, and the move may well go on (docs/progress.md "Unobserved replicas")."""
    return ~_flag(facts, "destination_alive") | ~_flag(facts, "leader_alive")


def is_in_sync(facts):
    """The destination broker is alive and in the partition's ISR: it serves the partition. (An offline broker can
    stay in the ISR - the last member of a partition that lost its leader - and serves nothing.) Here, where the
    finished and offline rules come first, a move in sync joined the ISR while the partition still reassigns;
    streaming.core.kip179 reads the same rule."""
    return _flag(facts, "in_isr") & _flag(facts, "destination_alive")


def is_stalled(facts, stall_after_s):
    """Not in the ISR and the copied bytes have not grown for `stall_after_s`."""
    return _number(facts, "stalled_seconds") >= stall_after_s


def is_falling_behind(facts, rate_window_s):
    """Over a full rate window the leader grew at least as fast as the copy: it cannot finish."""
    copy_rate, leader_rate = _number(facts, "copy_rate"), _number(facts, "leader_rate")
    observed = facts.get("observed_seconds")
    observed = np.zeros(len(facts)) if observed is None else observed
    return (observed >= rate_window_s) & (leader_rate > 0) & (copy_rate <= leader_rate)


def is_pending(facts):
    """No bytes on the destination yet (known to be none: an unknown count is not zero)."""
    return _number(facts, "numerator") <= 0


# The order of the rules, defined once: the first that holds wins. Each is (predicate, state); every predicate
# takes (facts, stall_after_s, rate_window_s) here so that the table is one shape.
RULES = (
    (lambda facts, stall_after_s, rate_window_s: is_completed(facts), ReplicaState.COMPLETED),
    (lambda facts, stall_after_s, rate_window_s: is_cancelled(facts), ReplicaState.CANCELLED),
    (lambda facts, stall_after_s, rate_window_s: is_broker_offline(facts), ReplicaState.BROKER_OFFLINE),
    (lambda facts, stall_after_s, rate_window_s: is_unobserved(facts), ReplicaState.UNOBSERVED),
    (lambda facts, stall_after_s, rate_window_s: is_in_sync(facts), ReplicaState.IN_SYNC),
    (lambda facts, stall_after_s, rate_window_s: is_stalled(facts, stall_after_s), ReplicaState.STALLED),
    (lambda facts, stall_after_s, rate_window_s: is_falling_behind(facts, rate_window_s), ReplicaState.FALLING_BEHIND),
    (lambda facts, stall_after_s, rate_window_s: is_pending(facts), ReplicaState.PENDING),
)
OTHERWISE = ReplicaState.COPYING  # when no rule holds


def classify(facts, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    """The state of each row, as ReplicaState values (int8). Order is precedence (RULES): the first rule that
    holds wins.

    Finished moves first (nothing else matters once the partition left the reassignment); then a dead
    broker (it explains any stall); then one the job cannot see (its bytes are unknown); then ISR membership (a
    replica in sync is done copying, whatever its byte counts say); then the history rules; then whether any byte
    arrived.
    """
    holds = [rule(facts, stall_after_s, rate_window_s) for rule, _ in RULES]
    return np.select(holds, [state.value for _, state in RULES], OTHERWISE.value).astype(np.int8)
