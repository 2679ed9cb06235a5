"""Plans as a duty: one step of every running or paused plan whose lease this job holds
(streaming.control.plans.advancer), at most once a second; what each step did, logged when it changes."""

from streaming.vocabulary.kafka_apis import READ


class Plans:
    """`advancer`: streaming.control.plans.advancer.PlanAdvancer; `say(line)`: the controller's log."""

    def __init__(self, advancer, metrics, clock, say):
        self.advancer, self.metrics, self.clock, self.say = advancer, metrics, clock, say
        self._lines = {}  # request_id -> the last line logged about it
        self._read_s = None  # when the plans were last read

    @property
    def statuses(self):
        """The active plans' PlanStatus as of the last round: a dict the advancer replaces whole, never mutates, so it
        is safe to read from another thread (the batch's records)."""
        return self.advancer.statuses

    def reported(self, request_ids):
        """The plans whose `plan` records a batch wrote (the advancer shows their reports)."""
        self.advancer.reported(request_ids)

    def due(self, listed, owned, now_s, trigger_interval_s):
        """Something moves or is owned, a plan is active, or a trigger passed since the plans were last read."""
        return bool(listed or owned or self.advancer.statuses or self._read_s is None
                    or now_s - self._read_s >= trigger_interval_s)

    def step(self, now_wall):
        try:
            statuses = self.advancer.tick(self.clock(), now_wall * 1000)
            self._read_s = self.clock()
        except Exception as error:  # the ledger could not be read: retried next tick
            self.metrics.poll_errors.labels(api=READ).inc()
            self.say(f"reading plans failed: {error}")
            return
        for request_id, status in statuses.items():
            step = status.step
            # A plan's step sweeps: what it removed counts like the controller's own sweeps.
            for action in step.throttle_actions if step is not None else ():
                self.metrics.throttle_actions.labels(scope=action.scope, action=action.action).inc()
            if step is not None and (step.submitted or step.cancelled or step.refused):
                self.say(f"plan {request_id}: submitted {len(step.submitted)}, refused {len(step.refused)}, "
                         f"cancelled {len(step.cancelled)}; " +
                         ", ".join(f"{state} {n}" for state, n in sorted(step.counts.items())))
            line = (f"plan {request_id} {status.state}: not advanced: {status.not_advanced}" if status.not_advanced
                    else f"plan {request_id} {status.state}: advanced by {status.advanced_by}")
            if self._lines.get(request_id) != line:
                self.say(line)
                self._lines[request_id] = line
