"""`--throttle auto` as a duty: the rates the job owns moved as a batch's findings say
(streaming.control.throttles.steering). It decides; the scheduler applies through the one writer and tells it what
was done (`applied`), which starts each changed broker's interval."""

from streaming.control.throttles.steering import changed_brokers, followed, steer
from streaming.control.throttles.view import view_of

STEERING_PREFIX = "throttle auto: "


class Steering:
    """`bounds`: the job's Steering (streaming.control.ownership.records), None: no steering; `guard`: a callable
    (streaming.control.throttles.guard), or None."""

    def __init__(self, bounds, throttle_interval_s, guard):
        self.bounds, self.throttle_interval_s, self.guard = bounds, throttle_interval_s, guard
        self._last_change_s = {}  # broker -> wall seconds of its last change

    def steers(self, findings):
        """Whether a batch's findings are steered on: steering is on and its poll read every throttle."""
        return self.bounds is not None and view_of(findings.snapshot).complete

    def decide(self, findings, records, now_s):
        """(actions, steered) for one batch's findings (`steers`) and the ledger's `records`, read after them."""
        return steer(view_of(findings.snapshot), records, self.bounds, self.throttle_interval_s, findings.falling_behind,
                     findings.throttles_binding, findings.snapshot["partitions"], self.guard, now_s,
                     self._last_change_s)

    def applied(self, done, steered, now_s):
        """What the applier did of the actions decided; the ownership records that follow it."""
        for broker, _ in changed_brokers(done):
            self._last_change_s[broker] = now_s
        return list(followed(done, steered, now_s * 1000))
