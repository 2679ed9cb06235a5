"""Rule 4, second half, pure: throttles observed appearing together with a reassignment the job saw start.

`observe(history, view, records, request_id, now_ms)` compares the job's current poll with the previous
complete ones (the janitor keeps the last two, driver side):
- a move "started" when its partition reassigns now and did not in the previous poll;
- an entry `p:b` is attributed to it when it is new in its topic's throttled-replicas list since the
  oldest poll of the history (throttles are usually set just before the reassignment starts, so they may
  land one poll earlier), p is that partition and b one of its replicas (current, adding or removing);
- a broker rate is attributed when the key had no value in the oldest poll and now has one, on a
  broker the started moves use. A rate that only changed value is not taken (restoring would be a guess).
Nothing already claimed by an active record of ours (an `execute` request) is taken, `*` never is, and
a history with a gap (an incomplete poll, a restart) observes nothing: missing facts never become claims.
The result is an `observed` Ownership record (auto-removal on), handled by the plan like any other.
Limit: a reassignment started and finished between two polls is never observed.
"""

from sinks.throttles import entries as te
from sinks.throttles.ownership import (DONE, OBSERVED, STARTED, EntryClaim, Move, Ownership, RateClaim, entry_owners,
                                       rate_owners)


def started_moves(previous, view):
    moves = []
    for (topic, partition), (replicas, adding, removing) in sorted(view.ongoing.items()):
        if (topic, partition) not in previous.reassigning:
            sources = tuple(b for b in replicas if b not in adding)
            target = tuple(b for b in replicas if b not in removing)
            moves.append((Move(topic, partition, sources, target), frozenset(replicas) | set(adding) | set(removing)))
    return moves


def observe(history, view, records, request_id, now_ms):
    """An `observed` Ownership for throttles that appeared with newly started moves, or None."""
    if not history or not view.complete or not all(v.complete for v in history):
        return None
    started = started_moves(history[-1], view)
    if not started:
        return None
    oldest = history[0]
    active = [r for r in records if r.state != DONE]
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
    used = frozenset().union(*(brokers for _, brokers in started))
    rates = [RateClaim(broker, kind, rate, None) for (broker, kind), rate in sorted(view.broker_rates.items())
             if broker in used and (broker, kind) not in oldest.broker_rates and (broker, kind) not in claimed_rates]
    if not entries and not rates:
        return None
    return Ownership(request_id=request_id, state=STARTED, created_ms=int(now_ms), updated_ms=int(now_ms),
                     auto_remove=True, origin=OBSERVED, moves=tuple(m for m, _ in started),
                     entries=tuple(entries), rates=tuple(rates),
                     note="throttles observed appearing together with these reassignments")
