"""The one model of the replication budgets that moves share, and when each move finishes. Pure.

Kafka throttles replication per broker and direction (docs/progress.md "Kafka's replication throttle"): the
leader-side rate caps what a broker sends for the throttled replicas moving out of it, the follower-side
rate what a broker fetches for the throttled replicas moving into it, and the alter-log-dirs rate what a
broker copies between its own log dirs. Each is ONE budget shared by every move that uses it.

    budgets, moves, clock in  ->  finish time (and share, binding budget) per move out

- A budget's effective rate (`budget_rate`) is its throttle rate, never below the throttle's floor (one
  fetch per quota window gets through however low the rate: THROTTLE_FLOOR_BYTES_PER_S), or less when its moves
  measure it alone and copy less; for an unthrottled budget, the observed total throughput of the moves using
  it (their smoothed copy rates).
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

import numpy as np

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


def budget_rate(throttle, observed_total, measured_alone, floor=THROTTLE_FLOOR_BYTES_PER_S):
    """A budget's effective rate (None: unknown). A throttled budget (`throttle`: its configured rate) runs at its
    effective throttle, or at its moves' observed total when that is less and they measure the budget alone (each
    uses no other budget and has a rate): Kafka's alter-log-dirs throttle copied 1.78-1.85 MB/s of a configured
    2 MB/s on an idle broker and about 1.55 on a loaded one, so the throttle alone made those ETAs 10-25 % early. An
    unthrottled budget (`throttle` None) runs at the observed total; None when that is unknown or 0."""
    known = observed_total is not None and observed_total > 0
    if throttle is None:
        return observed_total if known else None
    rate = effective_throttle(throttle, floor)
    return min(rate, observed_total) if measured_alone and known else rate


def budget_rates(throttles, moves, floor=THROTTLE_FLOOR_BYTES_PER_S):
    """{BudgetKey: effective rate (`budget_rate`)} for every budget the moves use. `throttles`: {BudgetKey:
    configured rate} of the throttled budgets."""
    observed, alone = {}, {}  # alone: every budget the moves use -> whether they measure it alone
    for move in moves:
        seen = move.observed is not None and move.observed > 0
        for budget in move.budgets:
            alone[budget] = alone.get(budget, True) and seen and len(move.budgets) == 1
            if seen:
                observed[budget] = observed.get(budget, 0.0) + move.observed
    return {budget: budget_rate(throttles.get(budget) if budget.throttled else None, observed.get(budget),
                                measured_alone, floor)
            for budget, measured_alone in alone.items()}


def _reshare_below(n):
    """The users a budget of n users falls to before its shares are handed out again: RESHARE_STEP of them, one at
    least (exact for small budgets; for a budget of thousands of moves a freed share a little late, never early)."""
    return n - max(1.0, RESHARE_STEP * n)


class _Class:
    """Moves with the same known budgets, one share each, in finishing order (`members`: their indices, with
    `remaining` and `growth`, also as Python lists for the one-at-a-time path). The bytes delivered to each
    member grow at `share` from `intercept` (delivered = intercept + share x t, t the simulation's clock);
    `next` is the first unfinished member, `since` the time of the class's last finish or reshare."""
    __slots__ = ("index", "budgets", "members", "members_list", "remaining", "growth", "remaining_list",
                 "growth_list", "next", "share", "intercept", "since", "version")

    def __init__(self, index, budgets, members, remaining, growth):
        self.index, self.budgets, self.members, self.members_list = index, budgets, members, members.tolist()
        self.remaining, self.growth = remaining, growth
        self.remaining_list, self.growth_list = remaining.tolist(), growth.tolist()
        self.next, self.share, self.intercept, self.since, self.version = 0, 0.0, 0.0, 0.0, 0

    def reshare(self, t_s, share):
        """The share from `t_s` on (the bytes delivered until then at the old one kept)."""
        delivered = self.intercept + self.share * t_s
        self.share, self.intercept, self.since = share, delivered - share * t_s, t_s
        self.version += 1

    def finish(self, member, after_s):
        """When member number `member` finishes at the current share, not before `after_s`: once the bytes
        delivered reach its remaining bytes plus its growth since 0 (inf: not at this share)."""
        growth = self.growth_list[member]
        if self.share <= growth:
            return math.inf
        at_s = (self.remaining_list[member] - self.intercept) / (self.share - growth)
        return at_s if at_s > after_s else after_s

    def finishes(self, first, end, after_s):
        """finish() of members first..end-1 one after the other, at once (inf from the first that cannot on)."""
        growth = self.growth[first:end]
        with np.errstate(divide="ignore", invalid="ignore"):
            at_s = np.where(self.share > growth, (self.remaining[first:end] - self.intercept) / (self.share - growth),
                            np.inf)
        return np.maximum.accumulate(np.maximum(at_s, after_s))


# A run of one class's finishes longer than this is taken with numpy; shorter ones one by one.
_ONE_BY_ONE = 8


def run(remaining, growth, budget_sets, set_of_move, rates, now_s):
    """The simulation over arrays: moves' `remaining` bytes and leader `growth` (bytes/s), the index into
    `budget_sets` (tuples of budget indices, each sorted) of the budgets each uses, and each budget's effective
    `rates` (NaN: unknown). Returns (finish time or NaN - never or unknown -, share now or NaN, binding budget
    index or -1, never, users of each budget now), one value per move (the last: per budget).

    A move with nothing remaining finishes now and takes no share; a move none of whose budgets has a known rate
    has an unknown finish and takes no share either. Events are finishes in time order (ties: the class made
    first); a run of one class's finishes that nothing else comes between is taken at once."""
    n = len(remaining)
    at_s, share_now = np.full(n, np.nan), np.full(n, np.nan)
    binding_now, never = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool)
    known_rate = ~np.isnan(rates) & (rates > 0)
    known_sets = [tuple(b for b in budgets if known_rate[b]) for budgets in budget_sets]
    set_known = np.array([bool(budgets) for budgets in known_sets] + [False], dtype=bool)[set_of_move]
    done = remaining <= 0
    at_s[done] = now_s
    live = np.flatnonzero(~done & set_known)
    users = [0] * len(rates)
    if not len(live):
        return at_s, share_now, binding_now, never, np.array(users, dtype=np.int64)
    # A class per distinct set of known budgets, in the order the moves first use them.
    class_of_known, set_class = {}, np.full(len(budget_sets), -1, dtype=np.int64)
    first_use = np.full(len(budget_sets), n, dtype=np.int64)
    np.minimum.at(first_use, set_of_move[live], np.arange(len(live)))
    used = np.flatnonzero(first_use < n)
    for set_index in used[np.argsort(first_use[used])].tolist():
        set_class[set_index] = class_of_known.setdefault(known_sets[set_index], len(class_of_known))
    class_budgets = list(class_of_known)
    class_of = set_class[set_of_move[live]]
    sizes = np.bincount(class_of, minlength=len(class_budgets))
    for budgets, size in zip(class_budgets, sizes.tolist()):
        for b in budgets:
            users[b] += size
    initial_users = np.array(users, dtype=np.int64)
    rate = rates.tolist()
    positive_growth = np.where(growth > 0, growth, 0.0)
    classes, on_budget = [], {}
    groups = np.argsort(class_of, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)))
    for c, budgets in enumerate(class_budgets):
        members = live[groups[starts[c]:starts[c + 1]]]
        ratios = [rate[b] / users[b] for b in budgets]
        share = min(ratios)
        member_growth, member_remaining = positive_growth[members], remaining[members].astype(np.float64)
        flowing = share > member_growth
        with np.errstate(divide="ignore", invalid="ignore"):
            first = np.where(flowing, member_remaining / (share - member_growth), 0.0)
        # Finishing order at the first share: those that finish, soonest first; then by growth, then bytes.
        order = np.lexsort((np.where(flowing, 0.0, member_remaining), np.where(flowing, 0.0, member_growth),
                            first, ~flowing))
        members = members[order]
        share_now[members], binding_now[members] = share, budgets[ratios.index(share)]
        cls = _Class(c, budgets, members, member_remaining[order], member_growth[order])
        cls.share = share
        classes.append(cls)
        for b in budgets:
            on_budget.setdefault(b, []).append(cls)
    reshare_at = [0.0] * len(rates)
    for b in on_budget:
        reshare_at[b] = _reshare_below(users[b])
    events, finished_members, finished_at, run_members, run_at = [], [], [], [], []
    push, pop = heapq.heappush, heapq.heappop

    def reshare(touched, t_s, finishing=None):
        """The classes' shares from the budgets' users now; a class whose share is the same keeps its next finish
        (`finishing`, the class whose finish this is, has none left: its next is pushed)."""
        for cls in touched:
            if cls.next >= len(cls.members):
                continue
            share = min(rate[b] / users[b] for b in cls.budgets)
            if share == cls.share and cls is not finishing:
                continue
            cls.reshare(t_s, share)
            head = cls.finish(cls.next, t_s)
            if head < math.inf:
                push(events, (head, cls.index, cls.version))

    for cls in classes:
        head = cls.finish(0, 0.0)
        if head < math.inf:
            push(events, (head, cls.index, cls.version))
    last_s = 0.0
    while events:
        while events:
            t_s, i, version = pop(events)
            last_s = t_s
            cls = classes[i]
            if version != cls.version:
                continue
            while events and events[0][2] != classes[events[0][1]].version:  # the next event that still holds
                last_s = pop(events)[0]
            limit_s, limit_class = events[0][:2] if events else (math.inf, math.inf)
            # This class's finishes before the next event of any other class (at an equal time, the one made
            # first), up to the one after which one of its budgets hands out its shares again.
            cap = min(len(cls.members) - cls.next, min(math.ceil(users[b] - reshare_at[b]) for b in cls.budgets))
            count, end_s = 1, t_s
            one_by_one = [t_s]
            while count < min(cap, _ONE_BY_ONE):
                at = cls.finish(cls.next + count, end_s)
                if at == math.inf or at > limit_s or (at == limit_s and i > limit_class):
                    break
                one_by_one.append(at)
                count, end_s = count + 1, at
            else:
                if count < cap:  # a long run: the rest of it at once
                    times = cls.finishes(cls.next + count, cls.next + cap, end_s)
                    taken = min(int(np.searchsorted(times, math.inf)),
                                int(np.searchsorted(times, limit_s, side="right" if i < limit_class else "left")))
                    if taken:
                        run_members.append(cls.members[cls.next + count:cls.next + count + taken])
                        run_at.append(times[:taken])
                        count, end_s = count + taken, float(times[taken - 1])
            finished_members.extend(cls.members_list[cls.next:cls.next + len(one_by_one)])
            finished_at.extend(one_by_one)
            cls.next += count
            cls.since = end_s
            last_s = max(last_s, end_s)
            due = []
            for b in cls.budgets:
                users[b] -= count
                if users[b] <= reshare_at[b]:
                    reshare_at[b] = _reshare_below(users[b])
                    due.append(b)
            if not due:  # only this class's next member is due: its share stands
                if cls.next < len(cls.members):
                    head = cls.finish(cls.next, end_s)
                    if head < math.inf:
                        push(events, (head, i, cls.version))
                continue
            touched = {c.index: c for b in due for c in on_budget[b]}
            touched[i] = cls
            reshare(touched.values(), end_s, finishing=cls)
        # No finish left at the current shares: hand out every share freed since, once.
        for b in on_budget:
            reshare_at[b] = _reshare_below(users[b])
        reshare(classes, last_s)
    at_s[np.array(finished_members, dtype=np.int64)] = now_s + np.array(finished_at, dtype=np.float64)
    if run_members:
        at_s[np.concatenate(run_members)] = now_s + np.concatenate(run_at)
    unfinished = np.flatnonzero(np.isnan(at_s[live]))
    never[live[unfinished]] = True
    return at_s, share_now, binding_now, never, initial_users


def simulate(moves, rates, now_s):
    """Outcome of running the moves (budget.Move) forward from `now_s` (seconds) at their shares of the budgets'
    `rates` ({BudgetKey: rate or None}): `run` over them."""
    catalog = sorted({b for m in moves for b in m.budgets} | set(rates))
    index = {b: i for i, b in enumerate(catalog)}
    budget_sets = sorted({tuple(sorted(index[b] for b in m.budgets)) for m in moves})
    set_index = {s: i for i, s in enumerate(budget_sets)}
    set_of_move = np.array([set_index[tuple(sorted(index[b] for b in m.budgets))] for m in moves], dtype=np.int64)
    rate = np.array([np.nan if rates.get(b) is None else float(rates[b]) for b in catalog], dtype=np.float64)
    at_s, share, binding, never, users = run(np.array([float(m.remaining) for m in moves]),
                                             np.array([float(m.growth) for m in moves]), budget_sets, set_of_move,
                                             rate, now_s)
    finishes = {}
    for i, m in enumerate(moves):
        finishes[m.key] = Finish(None if np.isnan(at_s[i]) else float(at_s[i]),
                                 None if np.isnan(share[i]) else float(share[i]),
                                 catalog[binding[i]] if binding[i] >= 0 else None, bool(never[i]))
    return Outcome(finishes, dict(rates), {catalog[b]: int(u) for b, u in enumerate(users.tolist()) if u})


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
