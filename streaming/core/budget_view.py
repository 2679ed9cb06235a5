"""The budget model (streaming.core.budget) applied to replica rows: which budgets each move uses, read from
a poll's throttle tables, and every ETA - replica, partition, request, cluster - from one simulation. Pure.

A move of partition p into broker b, led by broker L, uses:
- the leader budget of L when L has a leader throttle rate and the topic's leader throttled replicas list
  p:L (or `*`), and the follower budget of b when b has a follower rate and the topic's follower throttled
  replicas list p:b (or `*`): Kafka limits and counts only the replicas listed;
- an intra-broker (log dir) move: the alter-log-dirs budget of its broker (every future log counts);
- a move no configured rate applies to: the unthrottled budget of its destination, which runs at the
  observed total rate of the moves into it.
Without throttle tables (`progress` reads no throttle configs) every budget is an unthrottled one.
"""

from dataclasses import dataclass

from streaming.core.budget import ALTER_LOG_DIRS, FOLLOWER, LEADER, BudgetKey, Move, Outcome, budget_rates, simulate
from streaming.vocabulary.replica_row import key_of, partition_of
from streaming.vocabulary.states import FINISHED_STATES
from streaming.vocabulary.throttle_entries import is_all, parse

_EVERY_REPLICA = "*"
_FINISHED_NAMES = frozenset(state.name for state in FINISHED_STATES)


class Throttles:
    """Which budget a replica move uses, from the snapshot tables `topic_throttles` and `broker_throttles`."""

    def __init__(self, topic_throttles=(), broker_throttles=()):
        # The cluster default (broker -1) is not read (docs/ownership.md "Limits"); a rate of 0 or less is none.
        self.rates = {BudgetKey(row["kind"], row["broker"], True): float(row["rate"]) for row in broker_throttles
                      if row["broker"] is not None and row["broker"] >= 0 and (row["rate"] or 0) > 0}
        self._throttled = {(key.direction, key.broker): key for key in self.rates}
        self._unthrottled = {}  # one BudgetKey object per budget: 100k moves share a few dozen
        self._listed = {(row["topic"], row["kind"]): _EVERY_REPLICA if is_all(row["value"]) else parse(row["value"])
                        for row in topic_throttles}

    def _lists(self, topic, kind, partition, broker):
        listed = self._listed.get((topic, kind))
        return listed == _EVERY_REPLICA or (listed is not None and (partition, broker) in listed)

    def _unthrottled_key(self, direction, broker):
        key = self._unthrottled.get((direction, broker))
        if key is None:
            key = self._unthrottled[(direction, broker)] = BudgetKey(direction, broker, False)
        return key

    def budgets_of(self, row):
        """The BudgetKeys a replica row's move uses."""
        broker = row["broker"]
        if row["intra_broker"]:
            key = self._throttled.get((ALTER_LOG_DIRS, broker))
            return (key or self._unthrottled_key(ALTER_LOG_DIRS, broker),)
        topic, partition, leader = row["topic"], row["partition"], row["leader"]
        used = ()
        leader_key = self._throttled.get((LEADER, leader))
        if leader_key is not None and self._lists(topic, LEADER, partition, leader):
            used = (leader_key,)
        follower_key = self._throttled.get((FOLLOWER, broker))
        if follower_key is not None and self._lists(topic, FOLLOWER, partition, broker):
            used += (follower_key,)
        return used or (self._unthrottled_key(FOLLOWER, broker),)


def is_copying(row):
    """A move the model runs: not finished, not in the ISR (it copies nothing more)."""
    return row["state"] not in _FINISHED_NAMES and not row["in_isr"]


def remaining_bytes(row):
    """Bytes a row's move still has to copy; None when either count is unknown in this poll."""
    if row["numerator"] is None or row["denominator"] is None:
        return None
    return max(float(row["denominator"] - row["numerator"]), 0.0)


def moves_of(rows, throttles):
    """A budget.Move per copying row whose bytes are known (key: the row's key)."""
    moves = []
    for row in rows:
        remaining = remaining_bytes(row) if is_copying(row) else None
        if remaining is not None:
            moves.append(Move(key_of(row), remaining, row.get("leader_rate") or 0.0, row.get("copy_rate"),
                              throttles.budgets_of(row)))
    return moves


@dataclass(frozen=True)
class BudgetModel:
    """One batch's simulation, with what the reasons and the rollups read of it."""
    outcome: Outcome
    now_s: float
    throttles: Throttles

    def finish(self, row):
        """The row's budget.Finish; None for a move the model did not run (finished, in sync, bytes unknown)."""
        return self.outcome.finishes.get(key_of(row))

    @property
    def any_never(self):
        """Whether some move never finishes at its share (most batches: none, and no row need be asked)."""
        return any(finish.never for finish in self.outcome.finishes.values())

    def eta_seconds(self, row):
        """Seconds until the row's move finishes: 0 once it copies nothing more, None when it never finishes
        at its share or its bytes or budgets are unknown."""
        if not is_copying(row):
            return 0.0
        finish = self.finish(row)
        return None if finish is None else finish.eta_s(self.now_s)

    def rate(self, budget):
        return self.outcome.rates.get(budget)

    def throttles_binding(self):
        """Brokers whose configured leader or follower throttle sets some move's share now: more rate there
        would finish that move sooner (what `--throttle auto` raises additively)."""
        return frozenset(f.binding.broker for f in self.outcome.finishes.values()
                         if f.binding is not None and f.binding.throttled and f.binding.direction in (LEADER, FOLLOWER))

    def users(self, budget):
        return self.outcome.users.get(budget, 0)


def model(rows, topic_throttles, broker_throttles, now_ms):
    """The BudgetModel of some replica rows (streaming.core.history report columns) at `now_ms`."""
    throttles = Throttles(topic_throttles, broker_throttles)
    moves = moves_of(rows, throttles)
    rates = budget_rates(throttles.rates, moves)
    return BudgetModel(simulate(moves, rates, now_ms / 1000.0), now_ms / 1000.0, throttles)


def last_eta(etas):
    """The ETA of a set of moves: the last finish; None when one of them has none; 0 for no moves."""
    etas = list(etas)
    return None if any(eta is None for eta in etas) else max(etas, default=0.0)


def partition_etas(rows):
    """{(topic, partition): ETA} over rows that carry the model's ETA: each partition's last replica finish."""
    grouped = {}
    for row in rows:
        grouped.setdefault(partition_of(row), []).append(row["eta_seconds"])
    return {key: last_eta(etas) for key, etas in grouped.items()}
