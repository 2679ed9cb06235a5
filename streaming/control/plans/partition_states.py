"""What each partition of a plan is now, pure: `classify(move, submitted, current, ongoing, refusal) -> (state,
reason)`.

The rules are named predicates in the one order `classify` applies them; the first that holds decides:

1. `at_target`       not reassigning, its replicas are the plan's target and each is in the log dir the plan
   names for it, with no future log copying (streaming.control.placement): DONE (submitted or not).
2. `gone`            the partition no longer exists (its topic was deleted, before or while it moved): FAILED
   (it can never reach its target). A step acts on it only once the topic is unknown when asked by name,
   not merely hidden from the principal (streaming.control.plans.advance.confirm_gone).
3. `moving_for_us`   reassigning to our target after this plan submitted it: IN_FLIGHT.
   `moving_between_dirs` submitted, at its target, and a replica not yet in its named log dir (its future log
   copies, or the step is about to start it): IN_FLIGHT.
4. `moving_for_others` reassigning, but not submitted by this plan or to another target: LEFT_ALONE
   (someone else reassigns it; never overwritten).
5. `finishing`       submitted, not reassigning any more, and its replicas still the reassignment's union of
   target and sources: the metadata the poll read lags the controller that finished the move (seen at the
   end of a 300-partition plan: three partitions counted cancelled in its last record). IN_FLIGHT until the
   metadata catches up; a cancel reverts to the sources, which this never is.
6. `reverted`        submitted, not reassigning, not at the target: CANCELLED (cancelled by us or by
   someone else; never submitted again).
7. `refused_for_good` never accepted, and AlterPartitionReassignments refused its submission with an error
   that no retry changes (streaming.vocabulary.errors.FINAL_REASSIGNMENT_REFUSALS: a target broker that is
   not registered any more, a topic or partition unknown to the controller): FAILED, never submitted again.
   Any other refusal leaves it PENDING: it is submitted again when a slot frees.
8. `moved_by_others` not submitted, its replicas are no longer the plan's sources: LEFT_ALONE.
9. otherwise PENDING.

FAILED and LEFT_ALONE sit side by side: a failed partition is one the plan cannot move (Kafka says so, or it
is gone), a left-alone one is one someone else moves or moved (never overwritten). Neither blocks the plan:
it is done once nothing is pending or in flight (`settled`), and it ended with partitions not moved when any
is not DONE (`not_moved`: `execute --wait` exits 3).

`submitted` is what the plan's started waves record (streaming.control.submission): a partition whose wave died
before AlterPartitionReassignments was confirmed is decided from the cluster (streaming.control.plans.step).
`refusal`: the error of its latest refused submission recorded in a wave (None: never refused).
"""

from streaming.vocabulary.errors import FINAL_REASSIGNMENT_REFUSALS
from streaming.vocabulary.states import PlanPartitionState



def ongoing_target(row):
    """The target of an ongoing reassignment: its replicas without those being removed."""
    return frozenset(b for b in row["replicas"] if b not in set(row["removing"]))


def at_target(move, submitted, current, ongoing, refusal, misplaced):
    if ongoing is None and current is not None and tuple(current) == tuple(move.target) and not misplaced:
        return "at its target"
    return None


def gone(move, submitted, current, ongoing, refusal, misplaced):
    return "no longer exists (its topic was deleted)" if current is None and ongoing is None else None


def moving_for_us(move, submitted, current, ongoing, refusal, misplaced):
    if ongoing is not None and submitted and ongoing_target(ongoing) == frozenset(move.target):
        return "reassigning"
    return None


def moving_between_dirs(move, submitted, current, ongoing, refusal, misplaced):
    if submitted and ongoing is None and current is not None and tuple(current) == tuple(move.target) and misplaced:
        return f"moving between log dirs on broker {','.join(map(str, sorted(misplaced)))}"
    return None


def moving_for_others(move, submitted, current, ongoing, refusal, misplaced):
    if ongoing is None:
        return None
    target = ",".join(map(str, sorted(ongoing_target(ongoing))))
    return f"reassigned by someone else (to {target})" if not submitted else f"its target was changed to {target}"


def finishing(move, submitted, current, ongoing, refusal, misplaced):
    if (submitted and ongoing is None and set(move.target) < set(current)
            and set(current) == set(move.target) | set(move.sources) != set(move.sources)):
        return "finishing (the metadata still shows the reassignment's replicas)"
    return None


def reverted(move, submitted, current, ongoing, refusal, misplaced):
    if submitted and ongoing is None:
        return f"cancelled: replicas {','.join(map(str, current))}"
    return None


def final_refusal(error):
    """Whether a refusal of AlterPartitionReassignments for one partition is one no retry changes."""
    return error in FINAL_REASSIGNMENT_REFUSALS


def refusal_reason(error):
    return f"refused by Kafka: {error}"


def refused_for_good(move, submitted, current, ongoing, refusal, misplaced):
    if not submitted and final_refusal(refusal):
        return refusal_reason(refusal)
    return None


def moved_by_others(move, submitted, current, ongoing, refusal, misplaced):
    if not submitted and tuple(current) != tuple(move.sources):
        return f"moved by someone else (replicas {','.join(map(str, current))})"
    return None


RULES = ((at_target, PlanPartitionState.DONE), (gone, PlanPartitionState.FAILED),
         (moving_for_us, PlanPartitionState.IN_FLIGHT), (moving_between_dirs, PlanPartitionState.IN_FLIGHT),
         (moving_for_others, PlanPartitionState.LEFT_ALONE),
         (finishing, PlanPartitionState.IN_FLIGHT), (reverted, PlanPartitionState.CANCELLED),
         (refused_for_good, PlanPartitionState.FAILED), (moved_by_others, PlanPartitionState.LEFT_ALONE))


def classify(move, submitted, current, ongoing, refusal=None, misplaced=frozenset()):
    """(state, reason) of `move` (streaming.control.ownership.records.Move). `current`: its replicas now (None: gone);
    `ongoing`: its ListPartitionReassignments row {"replicas", "adding", "removing"} or None; `refusal`: the
    error name of its latest refused submission, or None; `misplaced`: the brokers whose replica is not yet in
    the log dir the move names (streaming.control.placement.misplaced)."""
    for rule, state in RULES:
        reason = rule(move, submitted, current, ongoing, refusal, misplaced)
        if reason:
            return state, reason
    return PlanPartitionState.PENDING, "waiting for a slot"


def settled(counts):
    """A plan with these partition counts (state -> number) is done: nothing pending or in flight. Failed,
    cancelled and left-alone partitions never hold it."""
    return not counts.get(PlanPartitionState.PENDING) and not counts.get(PlanPartitionState.IN_FLIGHT)


def not_moved(counts):
    """{state: n} of the partitions a finished plan did not move (every state but DONE): `execute --wait`
    exits 3 when there is any (a cancelled plan exits 0)."""
    return {state: n for state, n in counts.items() if state != PlanPartitionState.DONE and n}
