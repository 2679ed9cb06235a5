"""The throttle janitor's decision, pure: `decide(snapshot, owned_records, policy) -> [ThrottleAction]`.

No I/O and no clock: the cluster comes in as a Snapshot (or the ClusterView made of it, streaming.control.throttles.view),
ownership as `streaming.control.ownership.records.Ownership` records, "now" is the snapshot's `ts_ms`.
`streaming.control.sweep` reads the cluster and applies the actions through the one writer (streaming.control.applier).

The rules of docs/ownership.md, by name, and where each lives here:

- "Still reassigning": an entry `p:b` stays while partition p of its topic reassigns: `partition_still_reassigning`.
- "Broker in use": a broker rate stays while any ongoing reassignment has the broker as a source or destination
  (any broker in replicas/adding/removing of a reassigning partition; for the alter-log-dirs rate also
  while the broker holds a future log or its log dirs are unknown): `broker_still_moving`; and while the
  broker is not alive: `broker_unreachable`.
- "Surgical": only entries some record claims are candidates, removed with SUBTRACT; `*` is never an
  entry and foreign entries are never claimed. A broker rate someone changed after us is theirs.
- "Restore the prior" and "Newest claim": the newest holder's prior is restored instead of deleted (`prior_of`).
- "Policy": `owned` (claims of records whose owner lets go: `owner_still_needs`), `all` (every
  throttle once nothing reassigns, like `kafka-reassign-partitions --verify`), `off` (report only:
  the owned plan as dry-run actions); `--dry-run`: the same plan with every action turned into `dry_run`.
- "Recorded first", "Idempotent and reported": ownership lives in Kafka (streaming.control.ownership.store);
  every plan is recomputed from the cluster, so applying it twice is harmless: once applied, nothing it
  removed is there to remove again.

Topic and broker throttles each go through one loop over their kinds (leader and follower alike).
Broker rates are per broker only (the cluster default `""` cannot be described with our clients).
`plan` refuses to decide (returns []) on a poll that missed an API it depends on: a missing
reassignment list would otherwise read as "nothing moves".
"""

from dataclasses import replace

from streaming.vocabulary import throttle_entries as te
from streaming.vocabulary.throttle_actions import ALL, ALTER_LOG_DIRS, DRY_RUN, REMOVED, RESTORED, Policy, ThrottleAction
from streaming.control.ownership.records import entry_owners, holders, prior_of, rate_owners
from streaming.control.throttles.view import view_of
from streaming.vocabulary.config_keys import BROKER, BROKER_THROTTLE_KEYS, DELETE, SET, SUBTRACT, TOPIC, TOPIC_THROTTLE_KEYS
from streaming.vocabulary.states import OwnershipState


# ---- the rules: each returns why a throttle must stay (a one-line reason), or None ----

def being_executed(record, view, policy):
    """A `pending` record younger than the grace period: its `execute` may still be setting throttles."""
    return record.state == OwnershipState.PENDING and view.now_ms - record.created_ms < policy.pending_grace_ms


def owner_lets_go(record, view, policy):
    """None when `record` no longer needs its throttles kept for its own sake, else why (docs/ownership.md
    "Policy")."""
    if being_executed(record, view, policy):
        return f"request {record.request_id} is still being executed"
    if not record.auto_remove and record.state != OwnershipState.ABORTED and record.request_id not in policy.release:
        return f"request {record.request_id} was executed with --no-auto-remove-throttle"
    return None


def owner_still_needs(view, owners, policy):
    for record in owners:
        reason = owner_lets_go(record, view, policy)
        if reason:
            return reason
    return None


def partition_still_reassigning(view, topic, partition):  # docs/ownership.md "Still reassigning"
    if (topic, partition) in view.reassigning:
        return f"{topic}-{partition} is still reassigning"
    return None


def broker_still_moving(view, broker, kind):  # docs/ownership.md "Broker in use"
    if broker in view.moving_brokers:
        return f"broker {broker} is a source or destination of an ongoing reassignment"
    if kind == ALTER_LOG_DIRS:
        if broker not in view.log_dirs_known:
            return f"log dirs of broker {broker} unknown"
        if broker in view.future_log_brokers:
            return f"broker {broker} is moving a replica between log dirs"
    return None


def broker_unreachable(view, broker):
    if broker not in view.alive:
        return f"broker {broker} is not alive"
    return None


def entry_blocker(view, topic, partition, owners, policy):
    """The order in which an owned topic entry's rules are asked; the first reason wins."""
    return (partition_still_reassigning(view, topic, partition)
            or owner_still_needs(view, owners, policy))


def rate_blocker(view, broker, kind, owners, policy):
    """The order in which an owned broker rate's rules are asked; the first reason wins."""
    return (broker_still_moving(view, broker, kind)
            or broker_unreachable(view, broker)
            or owner_still_needs(view, owners, policy))


# ---- plans ----

def _ids(records):
    return tuple(sorted({r.request_id for r in records}))


def _plan_owned(view, records, policy):
    actions = []
    for (topic, kind), claimed in sorted(entry_owners(records).items()):
        value = view.topic_values.get((topic, kind))
        present = te.parse(value)
        removable = {pb: owners for pb, owners in claimed.items()
                     if pb in present and not entry_blocker(view, topic, pb[0], owners, policy)}
        if removable:
            partitions = sorted({p for p, _ in removable})
            actions.append(ThrottleAction(
                TOPIC, topic, kind, REMOVED, SUBTRACT, entries=tuple(te.entry_strings(removable)), value=value,
                reason=f"no longer reassigning: {', '.join(f'{topic}-{p}' for p in partitions)}",
                request_ids=_ids(r for owners in removable.values() for r in owners)))
    for (broker, kind), owned in sorted(rate_owners(records).items()):
        current = view.broker_rates.get((broker, kind))
        owners = [record for record, _ in holders(owned, current)]
        if not owners:
            continue  # gone, or changed by someone else since we set it: not ours to touch
        if rate_blocker(view, broker, kind, owners, policy):
            continue
        prior = prior_of(owned, current)  # the newest holder's: the value before any of our requests set it
        reason = f"no ongoing reassignment uses broker {broker}"
        if prior is None:
            actions.append(ThrottleAction(BROKER, str(broker), kind, REMOVED, DELETE, value=str(current),
                                          reason=reason, request_ids=_ids(owners)))
        elif prior != current:
            actions.append(ThrottleAction(BROKER, str(broker), kind, RESTORED, SET, value=str(current),
                                          restored_value=str(prior), reason=f"{reason}; restoring the value it had before",
                                          request_ids=_ids(owners)))
    return actions


def execute_in_flight(view, records, policy):
    return any(being_executed(r, view, policy) for r in records)


def _plan_all(view, records, policy):
    if view.reassigning or execute_in_flight(view, records, policy):
        return []
    reason = "nothing is reassigning (--throttle-cleanup all)"
    actions = []
    for (topic, kind), value in sorted(view.topic_values.items()):
        if kind in TOPIC_THROTTLE_KEYS and (value or "").strip():
            entries = ("*",) if te.is_all(value) else tuple(te.entry_strings(te.parse(value)))
            actions.append(ThrottleAction(TOPIC, topic, kind, REMOVED, DELETE, entries=entries, value=value, reason=reason))
    for (broker, kind), rate in sorted(view.broker_rates.items()):
        if kind in BROKER_THROTTLE_KEYS and not (broker_still_moving(view, broker, kind) or broker_unreachable(view, broker)):
            actions.append(ThrottleAction(BROKER, str(broker), kind, REMOVED, DELETE, value=str(rate), reason=reason))
    return actions


def as_dry_run(action):
    verb = {SUBTRACT: f"subtract {','.join(action.entries)}", DELETE: "delete it",
            SET: f"restore {action.restored_value}"}[action.op]
    return replace(action, action=DRY_RUN, reason=f"dry run, would {verb}: {action.reason}")


def decide(snapshot, owned_records, policy=Policy()):
    """The throttle actions due now. Pure; `snapshot` is a Snapshot or a ClusterView."""
    view = view_of(snapshot)
    if not view.complete:
        return []
    active = [r for r in owned_records if r.state != OwnershipState.DONE]
    actions = (_plan_all if policy.cleanup == ALL else _plan_owned)(view, active, policy)
    return actions if policy.acts else [as_dry_run(a) for a in actions]
