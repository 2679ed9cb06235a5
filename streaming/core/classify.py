"""Which state a replica move is in: one named predicate per state, and one function that orders them.

Each predicate reads one replica row (a dict; null is None). A row carries the facts of the progress
semantics (docs/progress.md); history columns (`stalled_seconds`, `copy_rate`, `leader_rate`, `observed_seconds`)
are absent for a one-shot report, and then the history rules cannot fire.

Beside each predicate, its column form (`..._in_columns`), for the job's stateful step, which classifies a
bucket's rows at once (streaming.spark.history_columns): the same rule over `facts`, where a yes/no fact is a
numpy bool array (its default already applied where null) and a number is (values, known) arrays, a null's
value unspecified. They use only operators, so this module imports no numpy (the one-shot `progress` loads it
without); tests/test_history_columns.py proves each agrees with its predicate on generated rows.
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


def is_completed_in_columns(facts, stall_after_s, rate_window_s):
    joined = facts["in_isr"] | facts["was_in_sync"]
    return (facts["finished"] & facts["in_replica_set"]
            & (~facts["still_reassigning"] | (joined & ~facts["being_removed"])))


def is_cancelled(row):
    """The move left the reassignment any other way: cancelled, its target changed to drop the broker
    (being removed), the topic deleted, or made a plain replica before it caught up. Never a success."""
    return _flag(row, "finished", False) and not is_completed(row)


def is_cancelled_in_columns(facts, stall_after_s, rate_window_s):
    return facts["finished"] & ~is_completed_in_columns(facts, stall_after_s, rate_window_s)


def is_broker_offline(row):
    """The destination or the leader broker is not alive, or did not answer this poll (killed and not yet
    fenced): nothing can be copied."""
    return not _flag(row, "destination_alive", True) or not _flag(row, "leader_alive", True)


def is_broker_offline_in_columns(facts, stall_after_s, rate_window_s):
    return ~facts["destination_alive"] | ~facts["leader_alive"]


def is_in_sync(row):
    """The destination broker joined the ISR while the partition still reassigns."""
    return _flag(row, "in_isr", False)


def is_in_sync_in_columns(facts, stall_after_s, rate_window_s):
    return facts["in_isr"]


def is_stalled(row, stall_after_s):
    """Not in the ISR and the copied bytes have not grown for `stall_after_s`."""
    stalled = row.get("stalled_seconds")
    return _known(stalled) and stalled >= stall_after_s


def is_stalled_in_columns(facts, stall_after_s, rate_window_s):
    stalled, known = facts["stalled_seconds"]
    return known & (stalled >= stall_after_s)


def is_falling_behind(row, rate_window_s):
    """Over a full rate window the leader grew at least as fast as the copy: it cannot finish."""
    copy_rate, leader_rate = row.get("copy_rate"), row.get("leader_rate")
    observed = row.get("observed_seconds", 0.0)
    return (_known(copy_rate, leader_rate, observed) and observed >= rate_window_s and leader_rate > 0
            and copy_rate <= leader_rate)


def is_falling_behind_in_columns(facts, stall_after_s, rate_window_s):
    (copy_rate, copy_known), (leader_rate, leader_known) = facts["copy_rate"], facts["leader_rate"]
    observed, observed_known = facts["observed_seconds"]
    return (copy_known & leader_known & observed_known & (observed >= rate_window_s) & (leader_rate > 0)
            & (copy_rate <= leader_rate))


def is_pending(row):
    """No bytes on the destination yet (known to be none: an unknown count is not zero)."""
    numerator = row.get("numerator", 0)
    return _known(numerator) and numerator <= 0


def is_pending_in_columns(facts, stall_after_s, rate_window_s):
    numerator, known = facts["numerator"]
    return known & (numerator <= 0)


# The order of the rules, defined once: the first that holds wins. Each is (predicate, its column form, state);
# the predicates take (row, stall_after_s, rate_window_s) here so the table is built once, not once per row
# (100,000 rows a batch in the job).
RULES = (
    (lambda row, stall_after_s, rate_window_s: is_completed(row), is_completed_in_columns, ReplicaState.COMPLETED),
    (lambda row, stall_after_s, rate_window_s: is_cancelled(row), is_cancelled_in_columns, ReplicaState.CANCELLED),
    (lambda row, stall_after_s, rate_window_s: is_broker_offline(row), is_broker_offline_in_columns,
     ReplicaState.BROKER_OFFLINE),
    (lambda row, stall_after_s, rate_window_s: is_in_sync(row), is_in_sync_in_columns, ReplicaState.IN_SYNC),
    (lambda row, stall_after_s, rate_window_s: is_stalled(row, stall_after_s), is_stalled_in_columns,
     ReplicaState.STALLED),
    (lambda row, stall_after_s, rate_window_s: is_falling_behind(row, rate_window_s), is_falling_behind_in_columns,
     ReplicaState.FALLING_BEHIND),
    (lambda row, stall_after_s, rate_window_s: is_pending(row), is_pending_in_columns, ReplicaState.PENDING),
)
_RULE_NAMES = tuple((holds, state.name) for holds, _, state in RULES)
OTHERWISE = ReplicaState.COPYING.name  # when no rule holds


def classify(row, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    """The state of one row, as a state name. Order is precedence (RULES): the first rule that holds wins.

    Finished moves first (nothing else matters once the partition left the reassignment); then a dead
    broker (it explains any stall); then ISR membership (a replica in sync is done copying, whatever
    its byte counts say); then the history rules; then whether any byte arrived.
    """
    for holds, name in _RULE_NAMES:
        if holds(row, stall_after_s, rate_window_s):
            return name
    return OTHERWISE


def classify_in_columns(facts, stall_after_s=STALL_AFTER_S, rate_window_s=RATE_WINDOW_S):
    """classify over columns (`facts`, as the column forms read them): the state name of each row, a list.
    The same RULES in the same order: each row takes the first rule whose column form holds for it."""
    states = [OTHERWISE] * len(facts["finished"])
    for _, holds_in_columns, state in reversed(RULES):  # a row's first rule is the one assigned last
        for i in holds_in_columns(facts, stall_after_s, rate_window_s).nonzero()[0].tolist():
            states[i] = state.name
    return states
