"""After the fact, pure: whether the cluster shows an action carried out (`confirmed`, the read-back after
apply), which rate claims the cluster no longer backs (`given_up`, then the records are rewritten without
them) and whether an ownership record has nothing left to remove (`settled`, then it is marked `done`)."""

from dataclasses import replace

from streaming.vocabulary import throttle_entries as te
from streaming.vocabulary.throttle_actions import Policy
from streaming.control.ownership.records import rate_owners
from streaming.control.throttles.removal import being_executed, owner_lets_go
from streaming.control.throttles.view import view_of
from streaming.vocabulary.config_keys import DELETE, TOPIC
from streaming.vocabulary.states import OwnershipState


def confirmed(action, snapshot):
    """Whether the cluster shows `action` carried out (the read-back after apply)."""
    view = view_of(snapshot)
    if action.scope == TOPIC:
        value = view.topic_values.get((action.name, action.kind))
        if action.op == DELETE:
            return not (value or "").strip()
        return not (te.parse(value) & {te.parse_entry(e) for e in action.entries})
    current = view.broker_rates.get((int(action.name), action.kind))
    return current is None if action.op == DELETE else current == int(action.restored_value)


def settled(snapshot, record, owned_records, policy=Policy()):
    """True when `record` has nothing left to remove: its owner lets go, none of its partitions moves, and
    none of its claims is still in place (removed, restored, or since changed by someone else)."""
    view = view_of(snapshot)
    if not view.complete or record.state == OwnershipState.DONE or owner_lets_go(record, view, policy):
        return False
    if any((m.topic, m.partition) in view.reassigning for m in record.moves):
        return False
    if any((c.partition, c.broker) in te.parse(view.topic_values.get((c.topic, c.kind))) for c in record.entries):
        return False
    owners = rate_owners([r for r in owned_records if r.state != OwnershipState.DONE])
    for claim in record.rates:
        if claim.broker not in view.registered:
            continue  # the broker left the cluster: nothing of it to restore
        if claim.broker not in view.alive:
            return False
        current = view.broker_rates.get((claim.broker, claim.kind))
        if current is not None and current != claim.prior and current in {c.rate for _, c in owners[(claim.broker, claim.kind)]}:
            return False
    return True


def stale_claims(view, record, policy):
    """The rate claims of `record` whose value the cluster no longer holds (someone changed or deleted it, or
    a later request or our own restore replaced it), on brokers whose configs `view` read. None for a record
    whose execute may still be setting its throttles."""
    if record.state == OwnershipState.DONE or being_executed(record, view, policy):
        return ()
    return tuple(c for c in record.rates if c.broker in view.alive and view.broker_rates.get((c.broker, c.kind)) != c.rate)


def given_up(snapshot, records, policy=Policy()):
    """The records that give up claims, rewritten without them (empty on an incomplete poll). A value the
    cluster stopped holding is no longer ours even if the same number comes back later: set by hand, it
    would otherwise be deleted as ours at completion."""
    view = view_of(snapshot)
    if not view.complete:
        return []
    out = []
    for record in records:
        stale = stale_claims(view, record, policy)
        if stale:
            out.append(replace(record, rates=tuple(c for c in record.rates if c not in stale), updated_ms=view.now_ms))
    return out
