"""Which state a replica move is in: one named predicate per state, and one function that orders them.

Each predicate reads one replica row (a dict; null is None). A row carries the facts of DESIGN.md's
progress semantics; history columns (`stalled_seconds`, `copy_rate`, `leader_rate`, `observed_seconds`)
are absent for a one-shot report, and then the history rules cannot fire.
"""

from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.states import ReplicaState


def _flag(row, name, default):
    """A yes/no fact; missing or null reads as `default`."""
    value = row.get(name)
    return default if value is None else bool(value)


def _known(*values):
    """Whether every number a rule compares is known: a rule on an unknown number does not fire."""
    return all(value is not None for value in values)


def is_completed(row):
    """The move left the reassignment with the broker kept as a full replica: the reassignment ended with
    the broker in the replica set (Kafka ends it only once every adding replica joined the ISR), or the
    target changed in flight and kept the broker, which had joined the ISR (now, or IN_SYNC before)."""
    if not (_flag(row, "finished", False) and _flag(row, "in_replica_set", False)):
        return False  # most rows: still moving (asked first, it spares them the other facts)
    if not _flag(row, "still_reassigning", False):
        return True
    joined = _flag(row, "in_isr", False) or _flag(row, "was_in_sync", False)
    return joined and not _flag(row, "being_removed", False)


def is_cancelled(row):
    """The move left the reassignment any other way: cancelled, its target changed to drop the broker
    (being removed), the topic deleted, or made a plain replica before it caught up. Never a success."""
    return _flag(row, "finished", False) and not is_completed(row)


def is_broker_offline(row):
    """The destination or the leader broker is not alive, or did not answer this poll (killed and not yet
    fenced): nothing can be copied."""
    return not _flag(row, "destination_alive", True) or not _flag(row, "leader_alive", True)


def is_in_sync(row):
    """The destination broker joined the ISR while the partition still reassigns."""
    return _flag(row, "in_isr", False)


def is_stalled(row, stall_after_s):
    """Not in the ISR and the copied bytes have not grown for `stall_after_s`."""
    stalled = row.get("stalled_seconds")
    return _known(stalled) and stalled >= stall_after_s


def is_falling_behind(row, rate_window_s):
    """Over a full rate window the leader grew at least as fast as the copy: it cannot finish."""
    copy_rate, leader_rate = row.get("copy_rate"), row.get("leader_rate")
    observed = row.get("observed_seconds", 0.0)
    return (_known(copy_rate, leader_rate, observed) and observed >= rate_window_s and leader_rate > 0
            and copy_rate <= leader_rate)


def is_pending(row):
    """No bytes on the destination yet (known to be none: an unknown count is not zero)."""
    numerator = row.get("numerator", 0)
    return _known(numerator) and numerator <= 0


# The order of the rules, defined once: the first that holds wins. Each takes (row, stall_after_s, rate_window_s)
# so the table is built once, not once per row (100,000 rows a batch in the job).
RULES = (
    (lambda row, stall_after_s, rate_window_s: is_completed(row), ReplicaState.COMPLETED),
    (lambda row, stall_after_s, rate_window_s: is_cancelled(row), ReplicaState.CANCELLED),
    (lambda row, stall_after_s, rate_window_s: is_broker_offline(row), ReplicaState.BROKER_OFFLINE),
    (lambda row, stall_after_s, rate_window_s: is_in_sync(row), ReplicaState.IN_SYNC),
    (lambda row, stall_after_s, rate_window_s: is_stalled(row, stall_after_s), ReplicaState.STALLED),
    (lambda row, stall_after_s, rate_window_s: is_falling_behind(row, rate_window_s), ReplicaState.FALLING_BEHIND),
    (lambda row, stall_after_s, rate_window_s: is_pending(row), ReplicaState.PENDING),
)
_RULE_NAMES = tuple((holds, state.name) for holds, state in RULES)
_OTHERWISE = ReplicaState.COPYING.name


def classify(row, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    """The state of one row, as a state name. Order is precedence (RULES): the first rule that holds wins.

    Finished moves first (nothing else matters once the partition left the reassignment); then a dead
    broker (it explains any stall); then ISR membership (a replica in sync is done copying, whatever
    its byte counts say); then the history rules; then whether any byte arrived.
    """
    for holds, name in _RULE_NAMES:
        if holds(row, stall_after_s, rate_window_s):
            return name
    return _OTHERWISE
