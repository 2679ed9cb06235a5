"""The budget model (streaming.core.budget) applied to replica rows: which budgets each move uses, read from
a poll's throttle tables, and every ETA - replica, partition, request, cluster - from one simulation. Pure.

A move of partition p into broker b, led by broker L, uses:
- the leader budget of L when L has a leader throttle rate and the topic's leader throttled replicas list
  p:L (or `*`), and the follower budget of b when b has a follower rate and the topic's follower throttled
  replicas list p:b (or `*`): Kafka limits and counts only the replicas listed;
- an intra-broker (log dir) move: the alter-log-dirs budget of its broker (every future log counts);
- a move no configured rate applies to: the unthrottled budget of its destination, which runs at the
  observed total rate of the moves into it.
Without throttle tables (`progress` reads no throttle configs) every budget is an unthrottled one. The rows are
columns (streaming.vocabulary.columns): the batch's 100k moves are placed on their budgets at once.
"""

from dataclasses import dataclass

import numpy as np

from streaming.core.budget import (ALTER_LOG_DIRS, DIRECTIONS, FOLLOWER, LEADER, BudgetKey, Move, budget_rate,
                                   run)
from streaming.vocabulary.columns import (bytes_left, finished, from_rows, lookup, member, partition_ids, replica_keys,
                                         unique, unique_inverse)
from streaming.vocabulary.throttle_entries import is_all, parse

_DIRECTION_RANK = {direction: rank for rank, direction in enumerate(sorted(DIRECTIONS))}
NO_BUDGET = -1


def _budget_code(direction, broker, throttled):
    """A budget as one int64, ordered as BudgetKey sorts (direction, broker, throttled)."""
    return (np.int64(_DIRECTION_RANK[direction]) << 34) | (np.asarray(broker, np.int64) << 1) | np.asarray(
        throttled, np.int64)


def _budget_key(code):
    code = int(code)
    return BudgetKey(sorted(DIRECTIONS)[code >> 34], (code >> 1) & ((1 << 33) - 1), bool(code & 1))


class Throttles:
    """Which budget a replica move uses, from the snapshot tables `topic_throttles` and `broker_throttles`."""

    def __init__(self, topic_throttles=(), broker_throttles=()):
        # The cluster default (broker -1) is not read (docs/ownership.md "Limits"); a rate of 0 or less is none.
        self.rates = {BudgetKey(row["kind"], row["broker"], True): float(row["rate"]) for row in broker_throttles
                      if row["broker"] is not None and row["broker"] >= 0 and (row["rate"] or 0) > 0}
        self._every = {kind: {row["topic"] for row in topic_throttles if row["kind"] == kind and is_all(row["value"])}
                       for kind in (LEADER, FOLLOWER)}
        self._entries = {kind: [(row["topic"], partition, broker) for row in topic_throttles if row["kind"] == kind
                                for partition, broker in sorted(parse(row["value"]))] for kind in (LEADER, FOLLOWER)}

    def _throttled(self, direction, brokers):
        rated = np.array(sorted(key.broker for key in self.rates if key.direction == direction), dtype=np.int64)
        return member(rated, brokers)

    def _listed(self, kind, rows, brokers):
        """Whether the topic's `kind` throttled replicas list each row's (partition, broker), or `*`."""
        every = self._every[kind]
        listed = np.fromiter((topic in every for topic in rows["topic"].tolist()), bool, len(rows)) if every \
            else np.zeros(len(rows), bool)
        entries = self._entries[kind]
        if entries:
            topics = np.array([topic for topic, _, _ in entries], dtype=object)
            row_ids, entry_ids = partition_ids((rows["topic"], rows["partition"]),
                                               (topics, np.array([p for _, p, _ in entries], dtype=np.int64)))
            listed |= member(replica_keys(entry_ids, np.array([b for _, _, b in entries], dtype=np.int64)),
                             replica_keys(row_ids, np.maximum(brokers, 0))) & (brokers >= 0)
        return listed

    def budgets(self, rows):
        """(first, second) budget codes of each row's move (second NO_BUDGET when it uses one)."""
        broker, leader, intra = rows["broker"], rows["leader"], rows["intra_broker"]
        leader_throttled = self._throttled(LEADER, leader) & self._listed(LEADER, rows, leader) & ~intra
        follower_throttled = self._throttled(FOLLOWER, broker) & self._listed(FOLLOWER, rows, broker) & ~intra
        log_dir = _budget_code(ALTER_LOG_DIRS, broker, self._throttled(ALTER_LOG_DIRS, broker))
        leader_code = _budget_code(LEADER, np.maximum(leader, 0), True)
        follower_code = _budget_code(FOLLOWER, broker, follower_throttled)
        first = np.where(intra, log_dir, np.where(leader_throttled, leader_code, follower_code))
        second = np.where(leader_throttled & follower_throttled, follower_code, NO_BUDGET)
        return first, second

    def budgets_of(self, row):
        """The BudgetKeys one replica row's move uses (a dict with broker, leader, intra_broker, topic, partition)."""
        first, second = self.budgets(from_rows([row]))
        return tuple(_budget_key(code) for code in (first[0], second[0]) if code != NO_BUDGET)


def is_copying(rows):
    """Moves the model runs: not finished, not in the ISR (they copy nothing more)."""
    return ~finished(rows["state"]) & ~rows["in_isr"]


def remaining_bytes(rows):
    """Bytes each move still has to copy; NaN where either count is unknown in this poll."""
    return bytes_left(rows["denominator"], rows["numerator"])


@dataclass(frozen=True)
class BudgetModel:
    """One batch's simulation over some replica rows, with what the reasons and the rollups read of it: per row
    (NaN, -1 where the model did not run the move: finished, in sync, bytes unknown) when it finishes, its share
    now, the budget that binds it (an index into `budgets`) and whether it never finishes; per budget its key,
    effective rate, configured throttle (NaN: none) and users now."""
    now_s: float
    copying: np.ndarray
    finish_s: np.ndarray
    share: np.ndarray
    binding: np.ndarray
    never: np.ndarray
    budgets: tuple  # BudgetKey per budget index
    rates: np.ndarray
    throttles: np.ndarray
    users: np.ndarray

    @property
    def any_never(self):
        """Whether some move never finishes at its share (most batches: none)."""
        return bool(self.never.any())

    def eta_seconds(self):
        """Seconds until each row's move finishes: 0 once it copies nothing more, NaN when it never finishes at
        its share or its bytes or budgets are unknown."""
        return np.where(self.copying, np.maximum(self.finish_s - self.now_s, 0.0), 0.0)

    def throttles_binding(self):
        """Brokers whose configured leader or follower throttle sets some move's share now: more rate there
        would finish that move sooner (what `--throttle auto` raises additively)."""
        bound = unique(self.binding[self.binding >= 0]).tolist()
        return frozenset(self.budgets[b].broker for b in bound
                         if self.budgets[b].throttled and self.budgets[b].direction in (LEADER, FOLLOWER))


def model(rows, topic_throttles, broker_throttles, now_ms):
    """The BudgetModel of some replica rows (history report columns with a state) at `now_ms`."""
    throttles = Throttles(topic_throttles, broker_throttles)
    n = len(rows)
    remaining = remaining_bytes(rows)
    copying = is_copying(rows)
    moving = np.flatnonzero(copying & ~np.isnan(remaining))
    first, second = throttles.budgets(rows.select(["topic", "partition", "broker", "leader", "intra_broker"]).take(
        moving))
    codes = unique(np.concatenate([first, second[second != NO_BUDGET]]))
    budgets = tuple(_budget_key(code) for code in codes.tolist())
    first_at, _ = lookup(codes, first)
    second_at, has_second = lookup(codes, second)
    # The budgets of a move as one number (first, second + 1; 0: none), and the distinct ones.
    sets, set_of_move = unique_inverse(first_at * (len(codes) + 1) + np.where(has_second, second_at + 1, 0))
    budget_sets = [tuple(sorted(b for b in (code // (len(codes) + 1), code % (len(codes) + 1) - 1) if b >= 0))
                   for code in sets.tolist()]
    # Per budget: its moves' observed total, and whether they measure it alone (budget.budget_rate).
    observed = rows["copy_rate"][moving] if "copy_rate" in rows else np.full(len(moving), np.nan)
    flowing = np.where(~np.isnan(observed) & (observed > 0), observed, 0.0)

    def per_budget(values):
        return np.bincount(first_at, weights=values, minlength=len(codes)) + np.bincount(
            np.where(has_second, second_at, 0), weights=np.where(has_second, values, 0.0), minlength=len(codes))

    summed = per_budget(flowing)
    alone = per_budget(((flowing == 0) | has_second).astype(np.float64)) == 0
    configured = np.array([throttles.rates.get(key, np.nan) for key in budgets], dtype=np.float64)
    rates = np.array([np.nan if rate is None else rate for rate in (
        budget_rate(throttles.rates.get(key) if key.throttled else None, total, measured_alone)
        for key, total, measured_alone in zip(budgets, summed.tolist(), alone.tolist()))], dtype=np.float64)
    growth = rows["leader_rate"][moving] if "leader_rate" in rows else np.zeros(len(moving))
    at_s, share, binding, never, users = run(remaining[moving], np.nan_to_num(growth, nan=0.0), budget_sets,
                                             set_of_move, rates, now_ms / 1000.0)

    def per_row(values, otherwise):
        out = np.full(n, otherwise, dtype=values.dtype)
        out[moving] = values
        return out

    return BudgetModel(now_ms / 1000.0, copying, per_row(at_s, np.nan), per_row(share, np.nan),
                       per_row(binding, NO_BUDGET), per_row(never, False), budgets, rates, configured, users)


def moves_of(rows, throttles):
    """A budget.Move per copying row whose bytes are known (key: the row's key), for simulations of their own
    (a plan's ETA: streaming.control.plans.report)."""
    remaining = remaining_bytes(rows)
    moving = np.flatnonzero(is_copying(rows) & ~np.isnan(remaining))
    taken = rows.take(moving)
    first, second = throttles.budgets(taken)
    nothing = np.full(len(taken), np.nan)
    growth = np.nan_to_num(taken.get("leader_rate", nothing), nan=0.0)
    observed = taken.get("copy_rate", nothing)
    keys = zip(taken["topic"].tolist(), taken["partition"].tolist(), taken["broker"].tolist(),
               taken["intra_broker"].tolist())
    return [Move(key, left, leader_rate, None if rate != rate else rate,
                 tuple(_budget_key(code) for code in (a, b) if code != NO_BUDGET))
            for key, left, leader_rate, rate, a, b in zip(keys, remaining[moving].tolist(), growth.tolist(),
                                                          observed.tolist(), first.tolist(), second.tolist())]
