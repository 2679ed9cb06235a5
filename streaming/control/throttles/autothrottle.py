"""`--throttle auto`: the next replication rate of each broker, decided from signals. Pure; the clock is an argument.

    decide(rates, signals, stress, bounds, now_s, last_change_s) -> {broker: Change(old, new, signal)}

Per broker whose rate the job owns (`rates`: broker -> the rate set now, leader and follower alike), in
this order, the first rule that applies decides (`rule_for`):
1. `stress` (cluster-wide: a partition that is NOT moving dropped out of its ISR, a broker a move uses is
   offline, the operator's guard query returned a result or could not be evaluated): cut multiplicatively
   (x CUT_FACTOR), never below the floor. A stress signal never raises a rate.
2. a rate above its ceiling (`--throttle-max`, lowered by a schedule window in force): down to the ceiling.
3. a rate below the floor (`--throttle-min`): up to the floor.
4. a move through the broker is FALLING_BEHIND (its share is below its leader's growth: it can never finish
   at this rate): raise multiplicatively (x RAISE_FACTOR) toward the ceiling.
5. healthy and the throttle binds (moves through the broker would finish sooner with more rate): raise
   additively by `bounds.step`, up to the ceiling.
Otherwise the rate stays. No flapping: apart from the ceiling and the floor (bounds hold at once) a change smaller than
HYSTERESIS of the current rate is not made, nor one sooner than `bounds.min_interval_s` after the broker's
last change.

`Schedule` windows ("22:00-06:00=200MB", UTC) are ceilings: the lowest window in force caps the rate.
"""

from dataclasses import dataclass
from typing import NamedTuple

from streaming.vocabulary.throttle_actions import Signal

HYSTERESIS = 0.10
CUT_FACTOR = 0.5
RAISE_FACTOR = 2.0
DEFAULT_MIN_INTERVAL_S = 30.0
DAY_MINUTES = 24 * 60

STRESS, CEILING, FLOOR, FALLING_BEHIND, BINDS = SIGNALS = tuple(Signal)


@dataclass(frozen=True)
class Window:
    """From `start_minute` (inclusive) to `end_minute` (exclusive) of the UTC day; wraps past midnight when
    end <= start. `ceiling` in bytes/s."""
    start_minute: int
    end_minute: int
    ceiling: int

    def covers(self, minute):
        if self.start_minute < self.end_minute:
            return self.start_minute <= minute < self.end_minute
        return minute >= self.start_minute or minute < self.end_minute


@dataclass(frozen=True)
class Bounds:
    floor: int  # --throttle-min, bytes/s
    ceiling: int  # --throttle-max, bytes/s
    schedule: tuple = ()  # Windows
    min_interval_s: float = DEFAULT_MIN_INTERVAL_S

    @property
    def step(self):
        """The additive raise: a tenth of the span, at least 10 % of the floor (so it clears the hysteresis)."""
        return max((self.ceiling - self.floor) // 10, -(-self.floor // 10), 1)

    def ceiling_at(self, now_s):
        minute = int(now_s // 60) % DAY_MINUTES
        return min([self.ceiling] + [w.ceiling for w in self.schedule if w.covers(minute)])


class BrokerSignals(NamedTuple):
    falling_behind: bool = False  # a move through the broker is FALLING_BEHIND
    binds: bool = False  # the throttle limits moves through the broker: more rate, sooner finish


class Change(NamedTuple):
    old: int
    new: int
    signal: Signal
    reason: str  # one line with the number behind it


# ---- the rules: each returns (new rate, signal, reason) or None ----

def under_stress(rate, signals, stress, bounds, ceiling):
    if stress:  # never up: not to the floor either when a rate is below it
        return min(rate, max(bounds.floor, min(int(rate * CUT_FACTOR), ceiling))), STRESS, stress
    return None


def above_ceiling(rate, signals, stress, bounds, ceiling):
    if rate > ceiling:
        return ceiling, CEILING, f"above the ceiling {ceiling} B/s in force"
    return None


def below_floor(rate, signals, stress, bounds, ceiling):
    if rate < bounds.floor:
        return bounds.floor, FLOOR, f"below the floor {bounds.floor} B/s"
    return None


def move_falling_behind(rate, signals, stress, bounds, ceiling):
    if signals.falling_behind and rate < ceiling:
        return min(int(rate * RAISE_FACTOR), ceiling), FALLING_BEHIND, "a move through this broker is falling behind its leader"
    return None


def throttle_binds(rate, signals, stress, bounds, ceiling):
    if signals.binds and rate < ceiling:
        return min(rate + bounds.step, ceiling), BINDS, "healthy, and moves through this broker would finish sooner"
    return None


RULES = (under_stress, above_ceiling, below_floor, move_falling_behind, throttle_binds)
BOUND_SIGNALS = frozenset({CEILING, FLOOR})  # these hold at once: neither hysteresis nor the interval delays them


def rule_for(rate, signals, stress, bounds, ceiling):
    for rule in RULES:
        decided = rule(rate, signals, stress, bounds, ceiling)
        if decided is not None:
            return decided
    return None


def too_small(old, new):
    return abs(new - old) < HYSTERESIS * old


def too_soon(broker, now_s, last_change_s, bounds):
    last = last_change_s.get(broker)
    return last is not None and now_s - last < bounds.min_interval_s


def decide(rates, signals, stress, bounds, now_s, last_change_s):
    """{broker: Change} for the brokers whose rate changes now. `rates`: broker -> current rate (owned);
    `signals`: broker -> BrokerSignals (absent: none); `stress`: None or one line saying why the cluster is
    under stress; `last_change_s`: broker -> clock seconds of its last change."""
    ceiling = bounds.ceiling_at(now_s)
    changes = {}
    for broker, rate in sorted(rates.items()):
        decided = rule_for(rate, signals.get(broker, BrokerSignals()), stress, bounds, ceiling)
        if decided is None:
            continue
        new, signal, reason = decided
        if new == rate:
            continue
        if signal not in BOUND_SIGNALS and (too_small(rate, new) or too_soon(broker, now_s, last_change_s, bounds)):
            continue
        changes[broker] = Change(rate, new, signal, reason)
    return changes
