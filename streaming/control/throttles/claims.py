"""What `execute` sets, pure: the KIP-179 throttles of a set of moves, merged with what is already set.

KIP-179 (as `kafka-reassign-partitions --execute --throttle` does it):
- topic `leader.replication.throttled.replicas` gets `p:b` for every source replica (the current replicas,
  or the original ones of a partition already reassigning) of each partition that gains a replica;
- topic `follower.replication.throttled.replicas` gets `p:b` for every destination (a target replica that
  is not a source);
- `leader.replication.throttled.rate` and `follower.replication.throttled.rate` are set on every source
  and destination broker; `replica.alter.log.dirs.io.max.bytes.per.second` on every broker that is
  asked to put a replica into a given log dir (with --replica-alter-log-dirs-throttle).
A partition that gains no replica (reordering, shrinking) copies nothing and gets no throttle.

Merging: entries are APPENDed (the broker merges lists atomically); one that is already there and not
claimed by an active record of ours is foreign: left as it is and not claimed, so it is never removed.
A topic whose value is `*` already throttles every replica: it is left alone and nothing is claimed.
A rate is SET; its claim remembers the prior value (carried over from the newest of our own claims of the
current value when it is ours), which the janitor restores when the broker no longer moves anything.
"""

from collections import defaultdict
from dataclasses import dataclass

from streaming.vocabulary import throttle_entries as te
from streaming.vocabulary.throttle_actions import ALTER_LOG_DIRS
from streaming.control.ownership.records import EntryClaim, Move, RateClaim, entry_owners, prior_of, rate_owners
from streaming.vocabulary.reassignment_file import ANY_LOG_DIR

LEADER, FOLLOWER = "leader", "follower"


@dataclass(frozen=True)
class ThrottleSetting:
    appends: dict  # (topic, kind) -> (p, b) pairs to APPEND
    rates: dict  # (broker, kind) -> rate to SET
    entries: tuple  # EntryClaim: what this request owns among the appends
    rate_claims: tuple  # RateClaim with the prior value
    foreign: dict  # (topic, kind) -> (p, b) pairs already there and not ours: left alone, not claimed
    all_replicas: tuple  # (topic, kind) whose value is `*`: left alone


def moves_for(file_moves, current_replicas, ongoing):
    """Move per file entry. `current_replicas`: (topic, partition) -> replicas; `ongoing`: (topic, partition) ->
    {"replicas", "adding"} of a reassignment in progress (its original replicas are the sources)."""
    moves = []
    for m in file_moves:
        key = (m.topic, m.partition)
        if key in ongoing:
            adding = set(ongoing[key]["adding"])
            sources = tuple(b for b in ongoing[key]["replicas"] if b not in adding)
        else:
            sources = tuple(current_replicas[key])
        named = m.log_dirs and any(d != ANY_LOG_DIR for d in m.log_dirs)
        moves.append(Move(m.topic, m.partition, sources, tuple(m.replicas), tuple(m.log_dirs) if named else ()))
    return tuple(moves)


def log_dir_moves(moves):
    """(topic, partition, broker) -> log dir, for every replica `moves` (Move) put into a named log dir."""
    return {(m.topic, m.partition, b): d for m in moves for b, d in m.named_dirs.items()}


def wanted_entries(moves):
    """(topic, kind) -> set of (partition, broker): leader = sources, follower = destinations."""
    wanted = defaultdict(set)
    for m in moves:
        if not m.destinations:
            continue
        wanted[(m.topic, LEADER)].update((m.partition, b) for b in m.sources)
        wanted[(m.topic, FOLLOWER)].update((m.partition, b) for b in m.destinations)
    return wanted


def throttle_brokers(moves):
    return sorted({b for m in moves if m.destinations for b in m.sources + m.destinations})


def throttle_setting(moves, view, active_records, throttle=None, log_dirs=None, log_dir_throttle=None):
    """The setting for `moves` given the cluster `view` (streaming.control.throttles.view.ClusterView) and our active
    ownership records. `throttle`/`log_dir_throttle` in bytes/s or None; `log_dirs` as log_dir_moves()."""
    appends, entries, foreign, stars = {}, [], {}, []
    rates = {}
    if throttle is not None:
        ours = entry_owners(active_records)
        for (topic, kind), pairs in sorted(wanted_entries(moves).items()):
            value = view.topic_values.get((topic, kind))
            if te.is_all(value):
                stars.append((topic, kind))
                continue
            present = te.parse(value)
            theirs = {pb for pb in pairs if pb in present and pb not in ours.get((topic, kind), {})}
            if theirs:
                foreign[(topic, kind)] = frozenset(theirs)
            mine = pairs - theirs
            if mine:
                appends[(topic, kind)] = frozenset(mine)
                entries += [EntryClaim(topic, kind, p, b) for p, b in sorted(mine)]
        for broker in throttle_brokers(moves):
            for kind in (LEADER, FOLLOWER):
                rates[(broker, kind)] = int(throttle)
    if log_dir_throttle is not None:
        for broker in sorted({b for (_, _, b) in (log_dirs or {})}):
            rates[(broker, ALTER_LOG_DIRS)] = int(log_dir_throttle)
    owners = rate_owners(active_records)
    claims = []
    for (broker, kind), rate in sorted(rates.items()):
        current = view.broker_rates.get((broker, kind))
        claims.append(RateClaim(broker, kind, rate, prior_of(owners.get((broker, kind), ()), current)))
    return ThrottleSetting(appends, rates, tuple(entries), tuple(claims), foreign, tuple(stars))
