"""The controller's ticks as its own thread times them: each tick's steps and their seconds (said with a slow tick),
whether the last tick left its duties to the next one, and when the tick under way started (which the busy look
reads: streaming.control.controller `look_while_busy`)."""

import functools
from dataclasses import dataclass, field

TICK_INTERVAL_S = 1.0
# While no batch is wanted (nothing moves, nothing is owned), the controller looks once a trigger interval, as the
# batches would, and at most this long apart: its looks are the job's liveness, and KafkaReassignmentMonitorDown fires
# after 30 s without one. Each look costs the driver about 1 ms of CPU per cluster (kafka-python: a
# ListPartitionReassignments and the door's Metadata beside it); a look every second made an idle fleet of three
# clusters cost 1.85 times a job of one (bench/RESULTS.md "Fleet idle cost (bench/fleet.py idle)"). An `execute`'s
# ownership record wakes it at once (streaming.control.controller `_watching_ownership`): a move of ours is not
# noticed later, and its throttles' removal does not wait for the next look.
QUIET_TICK_S = 10.0
SLOW_TICK_S = 2 * TICK_INTERVAL_S  # a tick longer than this is logged with its steps' seconds
SLOW_TICK_LINE = "slow tick: "


@dataclass
class Round:
    """The controller thread's own bookkeeping of its ticks."""
    steps: dict = field(default_factory=dict)  # seconds of the current tick's steps (`step`)
    deferred: bool = False  # the last tick left its duties to this one (batch_rules.defers_the_rest)
    looked_s: float = 0.0  # the seconds of a look between ticks that ended the wait on a lapse or failure
    ticking_since_s: float | None = None  # when the tick under way started
    quiet: bool = False  # the last tick wanted no batch (`interval_s`)

    def interval_s(self, tick_interval_s, trigger_interval_s):
        """Seconds from one tick's start to the next's: while quiet, a trigger interval, at most QUIET_TICK_S."""
        return max(tick_interval_s, min(QUIET_TICK_S, trigger_interval_s)) if self.quiet else tick_interval_s

    def slow_tick_line(self, took_s):
        """The line said of a tick that took `took_s` seconds (None: not slow)."""
        if took_s <= SLOW_TICK_S:
            return None
        return f"{SLOW_TICK_LINE}{took_s:.1f} s ({', '.join(f'{name} {s:.2f}' for name, s in self.steps.items())})"


def step(name):
    """Adds the seconds a tick spent in the decorated method (of an object with `clock` and `round`) to the round's
    steps."""
    def decorate(method):
        @functools.wraps(method)
        def timed(self, *args, **kwargs):
            started = self.clock()
            try:
                return method(self, *args, **kwargs)
            finally:
                self.round.steps[name] = self.round.steps.get(name, 0.0) + self.clock() - started
        return timed
    return decorate
