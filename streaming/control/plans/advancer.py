"""The job advances plans: from its controller (streaming.control.controller.Controller.tick), at most once per
PLAN_STEP_INTERVAL_S, one `advance_once` step (streaming.control.plans.step) for every plan that is RUNNING or
PAUSED in the ownership topic, under the plan's lease (streaming.control.ownership.leases: one advancer per plan; a
plan that `execute|resume --wait` holds is reported as advanced by it and not stepped here). Its writes go through
the controller's one writer and ledger.

A step that fails - a principal without Alter on the Cluster (ClusterError: refused), a poll missing an
answer a decision needs - leaves the plan as it was and is reported: `PlanStatus.not_advanced` says why,
the job goes on, releases the plan's lease and tries again RETRY_AFTER_S later. So does a job that must not change anything (`--dry-run`, `--throttle-cleanup off`).

Runs on the driver only, in the controller's thread; nothing here is pickled. The clock is an argument of `tick`.
"""

from dataclasses import dataclass, field

from streaming.control.ownership import leases as lease
from streaming.control.plans.step import advance_once, observe
from streaming.vocabulary.states import PlanState

# A step polls the plan's topics and every broker's log dirs: about the controller's period, not more often.
PLAN_STEP_INTERVAL_S = 1.0
# After a failed step the job lets go of the plan this long: a refused wave sets and removes its throttles and
# writes an aborted ownership record each time, and the released lease lets `resume --wait` take the plan.
RETRY_AFTER_S = 60.0
ADVANCED_STATES = (PlanState.RUNNING, PlanState.PAUSED)
# Why a job does not step plans at all (its janitor policy does not act).
MONITORING_ONLY = "the job changes nothing (--dry-run or --throttle-cleanup off)"


@dataclass(frozen=True)
class PlanStatus:
    """What the job knows of one active plan after a tick."""
    request_id: str
    state: str
    counts: dict = field(default_factory=dict)  # partition state -> number (empty when not stepped yet)
    advanced_by: str | None = None  # the lease holder that steps it (this job or a foreground executor)
    not_advanced: str | None = None  # why this job did not step it, when it should have
    step: object = None  # the streaming.control.plans.step.Step this tick took, or None
    plan: object = None  # the streaming.control.ownership.plans.Plan as last read
    seen: object = None  # the last Step taken or observed (its states and sizes feed the plan's report)


class PlanAdvancer:
    """`admin`: the driver's door (reads); `applier`: the controller's one writer, with the ledger the plans are
    in; `read(topics) -> Snapshot` raising when a decision API failed (streaming.cluster.poller.strict_poll);
    `acts`: whether the job may change the cluster."""

    def __init__(self, admin, applier, read, timeout_s, acts=True, me=None,
                 interval_s=PLAN_STEP_INTERVAL_S, retry_after_s=RETRY_AFTER_S):
        self.admin, self.applier, self.read = admin, applier, read
        self.timeout_s, self.acts, self.interval_s, self.retry_after_s = timeout_s, acts, interval_s, retry_after_s
        self._failed_s = {}  # request_id -> when its last step failed
        self.me = me or lease.holder_name("job")
        self._stepped_s = None
        # request_id -> PlanStatus of the active plans as of the last step round, and of plans that finished
        # (done, cancelled) until a batch reported them (`reported`): their last record says how they ended.
        self.statuses = {}
        self._reported = set()

    def tick(self, now_s, now_ms):
        """Step every active plan when a round is due; the statuses of the active plans (after the round)."""
        if self._stepped_s is not None and now_s - self._stepped_s < self.interval_s:
            return self.statuses
        self._stepped_s = now_s
        ledger = self.applier.ledger
        ledger.refresh()
        statuses = {plan.request_id: self._advance(plan, now_s, now_ms) for plan in ledger.plans()
                    if plan.state in ADVANCED_STATES}
        finished = {request_id: status for request_id, status in self.statuses.items()
                    if request_id not in statuses and status.state not in ADVANCED_STATES
                    and request_id not in self._reported}
        self._reported &= {request_id for request_id, s in statuses.items() if s.state not in ADVANCED_STATES}
        # Replaced whole, never mutated: the batch's thread reads it (Controller.plan_statuses).
        self.statuses = {**finished, **statuses}
        return self.statuses

    def reported(self, request_ids):
        """A batch wrote the records of these plans: the finished ones among them are dropped next round."""
        self._reported |= {request_id for request_id in request_ids
                           if request_id in self.statuses and self.statuses[request_id].state not in ADVANCED_STATES}

    def _advance(self, plan, now_s, now_ms):
        previous = self.statuses.get(plan.request_id)
        counts = previous.counts if previous else {}
        failed_s = self._failed_s.get(plan.request_id)
        if failed_s is not None and now_s - failed_s < self.retry_after_s:
            return previous  # let go of it for a while (RETRY_AFTER_S): reported as the failed step left it
        try:
            if not self.acts:
                return self._observed(plan, not_advanced=MONITORING_ONLY)
            claimed, holder = lease.claim(self.applier, plan.request_id, self.me, now_ms)
            if not claimed:
                return self._observed(plan, advanced_by=holder.holder)
            step = advance_once(self.admin, self.read, self.applier, plan.request_id, now_ms, self.timeout_s)
        except Exception as error:  # refused (no Alter on the Cluster), or a poll without a needed answer
            self._failed_s[plan.request_id] = now_s
            self._let_go(plan.request_id, now_ms)
            return PlanStatus(plan.request_id, plan.state, counts, not_advanced=f"{type(error).__name__}: {error}",
                              plan=plan, seen=previous.seen if previous else None)
        self._failed_s.pop(plan.request_id, None)
        return PlanStatus(plan.request_id, step.plan.state, step.counts, advanced_by=self.me, step=step,
                          plan=step.plan, seen=step)

    def _let_go(self, request_id, now_ms):
        try:
            lease.release(self.applier, request_id, self.me, now_ms)
        except Exception:  # the lease then runs out by itself (LEASE_MS)
            pass

    def _observed(self, plan, **why):
        """A plan this job does not step: its state as read (the report still shows its progress)."""
        seen = observe(self.read, self.applier.ledger, plan.request_id)
        return PlanStatus(plan.request_id, seen.plan.state, seen.counts, plan=seen.plan, seen=seen, **why)
