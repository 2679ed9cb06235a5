"""The one model of the replication budgets that moves share, and when each move finishes. Pure.

Kafka throttles replication per broker and direction (docs/progress.md "Kafka's replication throttle"): the
leader-side rate caps what a broker sends for the throttled replicas moving out of it, the follower-side
rate what a broker fetches for the throttled replicas moving into it, and the alter-log-dirs rate what a
broker copies between its own log dirs. Each is ONE budget shared by every move that uses it.

    budgets, moves, clock in  ->  finish time (and share, binding budget) per move out

- A budget's effective rate (`budget_rates`) is its throttle rate, never below the throttle's floor (one
  fetch per quota window gets through however low the rate: THROTTLE_FLOOR_BYTES_PER_S), or, for an
  unthrottled budget, the observed total throughput of the moves using it (their smoothed copy rates).
- Each move gets an equal share of every budget it uses; the tightest one binds (min over its budgets of
  rate / moves using it). Shares of one budget never add up to more than its rate.
- `simulate` runs forward from `now_s` over the moves' remaining bytes, which grow at their leader's
  growth rate: at each finish the finished move's share goes to the others on its budgets. A move whose
  share stays at or below its growth never finishes (`Finish.never`, no time).

Cost: moves that use the same budgets form a class and share one share; one event per finishing move
updates its class, and the classes on its budgets once the budget's users fell by RESHARE_STEP (at every
finish on a budget of 20 moves or fewer): O(events x classes on a budget) at most, no per-move loop per
event. Within a class the members finish in the order of their finish times at the class's first share
(exact when their growth rates are equal, e.g. none); the finish time of each is exact for the class's
share over time.
"""

import heapq
import math
from dataclasses import dataclass, field
from typing import Hashable, NamedTuple

from streaming.vocabulary.kafka_limits import THROTTLE_FLOOR_BYTES_PER_S

LEADER, FOLLOWER, ALTER_LOG_DIRS = DIRECTIONS = ("leader", "follower", "alter_log_dirs")
RESHARE_STEP = 0.05  # of a budget's users: a freed share at most this late on a big budget (ETAs late by a few %)


class BudgetKey(NamedTuple):
    """One budget: a direction of one broker, throttled (a configured rate applies to the move) or not."""
    direction: str
    broker: int
    throttled: bool


class Move(NamedTuple):
    key: Hashable  # the caller's id of the move
    remaining: float  # bytes still to copy now
    growth: float = 0.0  # bytes/s the leader's log grows (a negative growth counts as none)
    observed: float | None = None  # the move's own smoothed copy rate, bytes/s (feeds unthrottled budgets)
    budgets: tuple = ()  # the BudgetKeys it uses


class Finish(NamedTuple):
    at_s: float | None  # when it finishes (the clock's seconds); None: never, or not known
    share: float | None  # bytes/s it gets now; None: none of its budgets has a known rate
    binding: BudgetKey | None  # the budget that sets its share now
    never: bool = False  # its share never exceeds its growth: it cannot finish

    def eta_s(self, now_s):
        return None if self.at_s is None else max(self.at_s - now_s, 0.0)


@dataclass(frozen=True)
class Outcome:
    finishes: dict  # move key -> Finish
    rates: dict  # BudgetKey -> effective rate (None: unknown)
    users: dict = field(default_factory=dict)  # BudgetKey -> moves using it now

    def last_finish_s(self, keys=None):
        """When the last of `keys` (default: every move) finishes: None when one never does or is unknown."""
        finishes = [self.finishes[k] for k in (self.finishes if keys is None else keys)]
        if any(f.at_s is None for f in finishes):
            return None
        return max((f.at_s for f in finishes), default=None)


def effective_throttle(rate, floor=THROTTLE_FLOOR_BYTES_PER_S):
    """What a configured throttle rate lets through: at least one fetch per quota window."""
    return max(float(rate), floor)


def budget_rates(throttles, moves, floor=THROTTLE_FLOOR_BYTES_PER_S):
    """{BudgetKey: effective rate} for every budget the moves use. `throttles`: {BudgetKey: configured rate}
    of the throttled budgets. An unthrottled budget runs at the sum of its moves' observed rates (None when
    none is known or it is 0: nothing says what it can do)."""
    observed, used = {}, set()
    for move in moves:
        used.add(move.budgets)
        if move.observed is not None and move.observed > 0:
            for budget in move.budgets:
                if not budget.throttled:
                    observed[budget] = observed.get(budget, 0.0) + move.observed
    rates = {}
    for budgets in used:
        for budget in budgets:
            if budget.throttled and budget in throttles:
                rates[budget] = effective_throttle(throttles[budget], floor)
            else:
                rates[budget] = observed.get(budget)
    return rates


class _Class:
    """Moves with the same known budgets: one share each, and the bytes delivered to each member so far
    (`delivered`, at `since_s`), growing at `share`. `members` in finishing order; `next` the first unfinished."""
    __slots__ = ("index", "budgets", "members", "next", "share", "delivered", "since_s", "version")

    def __init__(self, index, budgets, members):
        self.index, self.budgets, self.members = index, budgets, members
        self.next, self.share, self.delivered, self.since_s, self.version = 0, 0.0, 0.0, 0.0, 0

    def advance(self, t_s):
        self.delivered += self.share * (t_s - self.since_s)
        self.since_s = t_s

    def head_finish_s(self):
        """When the first unfinished member finishes at the current share (inf: not at this share)."""
        if self.next >= len(self.members):
            return math.inf
        _, remaining, growth = self.members[self.next]
        if self.share <= growth:
            return math.inf
        # delivered + share (t - since) = remaining + growth t, with remaining and growth as of t = 0.
        t = (remaining - self.delivered + self.share * self.since_s) / (self.share - growth)
        return max(t, self.since_s)  # ordered by the first share, a member may be due already: now


def _reshare(classes, rates, users, t_s, events):
    """The classes' shares from the budgets' users now, each class brought to `t_s` first; their next
    finishes pushed onto `events`."""
    for cls in classes:
        cls.advance(t_s)
        if cls.next < len(cls.members):
            cls.share = min(rates[b] / users[b] for b in cls.budgets)
        cls.version += 1
        finish_s = cls.head_finish_s()
        if finish_s < math.inf:
            heapq.heappush(events, (finish_s, cls.index, cls.version))


def simulate(moves, rates, now_s):
    """Outcome of running the moves forward from `now_s` (seconds) at their shares of the budgets' `rates`
    ({BudgetKey: rate or None}). A move with nothing remaining finishes now and takes no share; a move none
    of whose budgets has a known rate has an unknown finish and takes no share either."""
    finishes, by_budgets, known_of = {}, {}, {}
    for move in moves:
        known = known_of.get(move.budgets)
        if known is None:  # a few dozen distinct budget sets among 100k moves
            known = known_of[move.budgets] = tuple(sorted(
                b for b in move.budgets if rates.get(b) is not None and rates[b] > 0))
        if move.remaining <= 0:
            finishes[move.key] = Finish(now_s, None, None)
        elif not known:
            finishes[move.key] = Finish(None, None, None)
        else:
            growth = move.growth if move.growth > 0 else 0.0
            by_budgets.setdefault(known, []).append((move.key, float(move.remaining), float(growth)))
    users = {}
    for budgets, members in by_budgets.items():
        for budget in budgets:
            users[budget] = users.get(budget, 0) + len(members)
    initial_users = dict(users)

    classes, on_budget, now_of = [], {}, {}
    for budgets, members in by_budgets.items():
        share = min(rates[b] / users[b] for b in budgets)
        binding = min(budgets, key=lambda b: rates[b] / users[b])

        def order(member):
            _, remaining, growth = member
            return (0, remaining / (share - growth), 0.0) if share > growth else (1, growth, remaining)

        members.sort(key=order)
        cls = _Class(len(classes), budgets, members)
        cls.share = share
        fact = (share, binding)
        for member in members:
            now_of[member[0]] = fact
        classes.append(cls)
        for budget in budgets:
            on_budget.setdefault(budget, []).append(cls)

    # A budget's shares are handed out again once its users fell by RESHARE_STEP since the last time (and
    # by one at least): exact for small budgets, and for a budget of thousands of moves a freed share a
    # little late (never early) instead of every class on it updated at every finish.
    def reshare_below(n):  # the users a budget of n users falls to before its shares are handed out again
        return n - max(1.0, RESHARE_STEP * n)

    reshare_at = {budget: reshare_below(n) for budget, n in users.items()}
    finished_at = {}
    events = []
    _reshare(classes, rates, users, 0.0, events)
    t_s = 0.0
    pop, push = heapq.heappop, heapq.heappush
    while events:
        while events:
            t_s, i, version = pop(events)
            cls = classes[i]
            if version != cls.version:
                continue
            finished_at[cls.members[cls.next][0]] = now_s + t_s
            cls.next += 1
            due = None
            for budget in cls.budgets:
                left = users[budget] = users[budget] - 1
                if left <= reshare_at[budget]:
                    reshare_at[budget] = reshare_below(left)
                    due = (due or []) + [budget]
            if due is None:  # only this class's next member is due: its share stands (head_finish_s, inlined)
                cls.version += 1
                if cls.next < len(cls.members):
                    _, remaining, growth = cls.members[cls.next]
                    share = cls.share
                    if share > growth:
                        cls.delivered += share * (t_s - cls.since_s)
                        cls.since_s = t_s
                        finish_s = (remaining - cls.delivered + share * t_s) / (share - growth)
                        push(events, (finish_s if finish_s > t_s else t_s, i, cls.version))
                continue
            touched = {c.index: c for b in due for c in on_budget[b]}
            touched[cls.index] = cls
            _reshare(touched.values(), rates, users, t_s, events)
        # No finish left at the current shares: hand out every share freed since, once.
        reshare_at = {budget: reshare_below(n) for budget, n in users.items()}
        _reshare(classes, rates, users, t_s, events)
    for key, (share, binding) in now_of.items():
        at_s = finished_at.get(key)
        finishes[key] = Finish(at_s, share, binding, never=at_s is None)
    return Outcome(finishes, dict(rates), initial_users)


def simulate_admitted(running, pending, admit, rates, now_s, keys=None):
    """When the last of `keys` (default: every move) finishes if `pending` moves start as `admit` lets them
    (a plan's ETA): the same shares as `simulate`, the set of moves changing at each finish. `running`: the
    Moves copying now; `pending`: Moves not started, in the order they are offered (each with the budgets it
    will use once started); `admit(running_keys, pending_moves) -> keys` of pending moves that start now (the
    plan's scheduler under its limits). Returns the finish time (the clock's seconds; `now_s` when nothing
    is left), None when one of them has an unknown finish or none, or waits with nothing running (stuck).

    Between two finishes no share changes (shares change only when the set of moves does), so each round
    runs `simulate` on what copies, moves the clock to its first finish, takes the bytes each copied off
    and lets `admit` fill the freed slots: O(finishes x moves in flight)."""
    wanted = None if keys is None else set(keys)
    running, waiting, t_s, last_s = list(running), list(pending), now_s, now_s
    while True:
        chosen = set(admit([m.key for m in running], waiting)) if waiting else set()
        running += [m for m in waiting if m.key in chosen]
        waiting = [m for m in waiting if m.key not in chosen]
        if not running:
            return None if any(wanted is None or m.key in wanted for m in waiting) else last_s
        outcome = simulate(running, rates, t_s)
        finishes = [outcome.finishes[m.key] for m in running]
        if any(f.at_s is None and (wanted is None or m.key in wanted) for m, f in zip(running, finishes)):
            return None
        known = [f.at_s for f in finishes if f.at_s is not None]
        if not known:  # only moves nobody asked about are left, and none of them finishes
            return None if waiting else last_s
        first_s = min(known)
        elapsed = first_s - t_s
        left = []
        for move, finish in zip(running, finishes):
            if finish.at_s is not None and finish.at_s <= first_s:
                if wanted is None or move.key in wanted:
                    last_s = first_s
                continue
            growth = move.growth if move.growth > 0 else 0.0
            left.append(move._replace(remaining=move.remaining + (growth - (finish.share or 0.0)) * elapsed))
        running, t_s = left, first_s
