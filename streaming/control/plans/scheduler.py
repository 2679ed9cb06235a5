"""Which pending partitions of a plan to submit now, pure: `schedule(pending, load, limits) -> keys`.

Pipelined: called every step with what moves now, it fills every slot a finished partition freed; it
never waits for a whole wave. The limits hold for everything that reassigns in the cluster, ours and
others' alike (they protect the cluster, not the plan):
- `partitions_in_flight`: partitions reassigning or moving between log dirs at once;
- `moves_per_broker`: moves a broker takes part in, as a source (a current replica), a destination, or the
  broker of a move between its log dirs;
- `bytes_in_flight`: bytes still to copy of the moves in flight (partition size x new replicas, plus the
  current log of each replica moving between log dirs). A partition larger than the limit alone goes when
  nothing else is in flight, or it would never go.
A limit already exceeded (by moves someone else started) blocks whatever it counts; nothing is
submitted that raises a count past its limit.

No starvation: candidates are walked in the plan's order. One held back by a busy broker reserves all
its brokers, so no later partition takes the slot it waits for; one held back by bytes stops the walk
until the bytes in flight drain. So a partition waits only for partitions before it in the order (and
for moves of others), each of which is submitted at most once.
"""

from collections import Counter
from dataclasses import dataclass, field

ORDERS = SMALLEST, LARGEST, FILE = ("smallest", "largest", "file")


@dataclass(frozen=True)
class Limits:
    partitions_in_flight: int
    moves_per_broker: int | None = None
    bytes_in_flight: int | None = None


@dataclass(frozen=True)
class Candidate:
    """A pending partition: the brokers its move involves (sources and destinations) and the bytes it copies."""
    key: tuple
    brokers: frozenset
    bytes: int = 0


@dataclass(frozen=True)
class Load:
    """What reassigns in the cluster now."""
    partitions: int = 0
    per_broker: Counter = field(default_factory=Counter)
    bytes: int = 0

    def plus(self, candidate):
        return Load(self.partitions + 1, self.per_broker + Counter(candidate.brokers), self.bytes + candidate.bytes)


def load_of(ongoing, sizes, still_throttled=frozenset(), between_dirs=None):
    """The Load of the ongoing reassignments and moves between log dirs. `ongoing`: (topic, partition) ->
    {"replicas", "adding", ...} (every replica of a reassigning partition is a source or a destination);
    `sizes`: (topic, partition) -> bytes of its log (unknown: counted as 0); `still_throttled`: partitions that
    finished but whose throttled-replicas entries are still set (the sweep reads before they finished). Each
    holds a slot of `partitions_in_flight` until its entries go, so the lists never name more partitions than
    that limit. `between_dirs`: (topic, partition) -> {broker: bytes of the log it copies} of the moves between
    log dirs (a future log, or a plan's move whose copy is about to start); a partition that also reassigns
    counts once, each of its brokers once."""
    between_dirs = between_dirs or {}
    brokers = {key: set(row["replicas"]) | set(row["adding"]) for key, row in ongoing.items()}
    for key, copying in between_dirs.items():
        brokers[key] = brokers.get(key, set()) | set(copying)
    per_broker = Counter(b for involved in brokers.values() for b in involved)
    copied = (sum(sizes.get(key, 0) * len(row["adding"]) for key, row in ongoing.items())
              + sum(sum(copying.values()) for copying in between_dirs.values()))
    return Load(len(set(brokers) | set(still_throttled)), per_broker, copied)


def ordered(candidates, order):
    """The walk order: the file's, or by bytes to copy (ties kept in file order)."""
    if order == FILE:
        return list(candidates)
    return sorted(candidates, key=lambda c: c.bytes, reverse=order == LARGEST)


# ---- the rules: each says whether the walk may take a candidate given the load so far ----

def cluster_full(load, limits):
    return load.partitions >= limits.partitions_in_flight


def broker_busy(candidate, load, limits):
    return limits.moves_per_broker is not None and any(
        load.per_broker[b] >= limits.moves_per_broker for b in candidate.brokers)


def nothing_in_flight(load):
    return load.partitions == 0 and load.bytes == 0


def bytes_exceeded(candidate, load, limits):
    """Over the bytes limit, unless nothing is in flight (a zero-byte partition in flight counts: the one
    that goes alone goes alone)."""
    return (limits.bytes_in_flight is not None and not nothing_in_flight(load)
            and load.bytes + candidate.bytes > limits.bytes_in_flight)


def schedule(pending, load, limits):
    """Keys of the `pending` candidates (in walk order) to submit now. See the module docstring."""
    chosen, reserved = [], set()
    for candidate in pending:
        if cluster_full(load, limits):
            break
        if candidate.brokers & reserved:
            continue  # an earlier partition waits for one of these brokers
        if broker_busy(candidate, load, limits):
            reserved |= candidate.brokers
            continue
        if bytes_exceeded(candidate, load, limits):
            break  # the bytes in flight drain before anything after it goes
        chosen.append(candidate.key)
        load = load.plus(candidate)
    return chosen
