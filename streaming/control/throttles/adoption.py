"""Adoption (docs/ownership.md "Adoption"), pure: throttles observed appearing together with a reassignment the job
saw start.

`observe(history, view, records, request_id, now_ms)` compares the job's current poll with the previous
complete ones (the janitor keeps the last two, driver side):
- a move "started" when its partition reassigns now and did not in the previous poll, and no active
  record of ours moves that partition (what changed with our own move is not another tool's);
- an entry `p:b` is attributed to it when it is new in its topic's throttled-replicas list since the
  oldest poll of the history (throttles are usually set just before the reassignment starts, so they may
  land one poll earlier), p is that partition and b one of its replicas (current, adding or removing);
- a broker rate is adopted per config key, on a broker the started moves use (and that was alive in the
  oldest poll, so its configs were read): a key that had no value before and now has one is claimed with no
  prior (deleted at completion); a key whose value changed is claimed with the value seen before as its
  prior (restored at completion), so neither is left behind. "Before" is the newest poll of the history that
  saw another value (`rate_before`): a value somebody set between the two polls is the one restored. When that earlier value
  was ours (an active claim holds it), the prior is carried over from our claim, as `execute` does.
Nothing our own records hold (the value an active `execute` record claims) is taken, `*` never is, and
a history with a gap (an incomplete poll, a restart) observes nothing: missing facts never become claims.
The result is an `observed` Ownership record (auto-removal on), handled by the plan like any other.
Limit: a reassignment started and finished between two polls is never observed.
"""

from streaming.vocabulary import throttle_entries as te
from streaming.control.ownership.records import EntryClaim, Move, Ownership, RateClaim, entry_owners, holders, prior_of, rate_owners
from streaming.control.ownership.records import Origin
from streaming.vocabulary.states import OwnershipState


def started_moves(previous, view, ours=frozenset()):
    """Moves reassigning in `view` and not in `previous`, except those of our own records (`ours`)."""
    moves = []
    for (topic, partition), (replicas, adding, removing) in sorted(view.ongoing.items()):
        if (topic, partition) not in previous.reassigning and (topic, partition) not in ours:
            sources = tuple(b for b in replicas if b not in adding)
            target = tuple(b for b in replicas if b not in removing)
            moves.append((Move(topic, partition, sources, target), frozenset(replicas) | set(adding) | set(removing)))
    return moves


def rate_before(history, broker, kind, rate):
    """The value a broker rate had before it became `rate`: that of the newest poll of the history that read
    the broker's configs and saw another value; `rate` itself when every poll saw it already. The newest, not
    the oldest: a value an operator set between the two polls before the move is theirs to get back."""
    for earlier in reversed(history):
        if broker in earlier.alive and earlier.broker_rates.get((broker, kind)) != rate:
            return earlier.broker_rates.get((broker, kind))
    return rate


def observe(history, view, records, request_id, now_ms):
    """An `observed` Ownership for throttles that appeared with newly started moves, or None."""
    if not history or not view.complete or not all(v.complete for v in history):
        return None
    active = [r for r in records if r.state != OwnershipState.DONE]
    started = started_moves(history[-1], view, {(m.topic, m.partition) for r in active for m in r.moves})
    if not started:
        return None
    oldest = history[0]
    claimed_entries, claimed_rates = entry_owners(active), rate_owners(active)
    brokers_of = {(m.topic, m.partition): brokers for m, brokers in started}
    entries = []
    for (topic, kind), value in sorted(view.topic_values.items()):
        if te.is_all(value):
            continue
        appeared = te.parse(value) - te.parse(oldest.topic_values.get((topic, kind)))
        for partition, broker in sorted(appeared):
            if broker in brokers_of.get((topic, partition), ()) and (partition, broker) not in claimed_entries.get((topic, kind), {}):
                entries.append(EntryClaim(topic, kind, partition, broker))
    used = frozenset().union(*(brokers for _, brokers in started)) & oldest.alive
    rates = []
    for (broker, kind), rate in sorted(view.broker_rates.items()):
        before, owned = rate_before(history, broker, kind, rate), claimed_rates.get((broker, kind), ())
        if broker in used and rate != before and not holders(owned, rate):
            rates.append(RateClaim(broker, kind, rate, prior_of(owned, before)))
    if not entries and not rates:
        return None
    return Ownership(request_id=request_id, state=OwnershipState.STARTED, created_ms=int(now_ms), updated_ms=int(now_ms),
                     auto_remove=True, origin=Origin.OBSERVED, moves=tuple(m for m, _ in started),
                     entries=tuple(entries), rates=tuple(rates),
                     note="throttles observed appearing together with these reassignments")
