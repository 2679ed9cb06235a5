"""A plan advanced in the foreground, without Spark: `execute --max-partitions-in-flight ... [--wait]`,
`resume [--wait]` and `cancel --request-id`. Steps (streaming.control.plans.step) are taken under the plan's lease
(streaming.control.ownership.leases: one advancer per plan), one every PLAN_STEP_INTERVAL_S, until the plan is finished
(`wait`) or after one step; without `wait` the lease is released after that step, so the job (`run`) carries the
plan on from its next tick, while a killed `--wait` holds it until it runs out (LEASE_MS). The command says what
happened through a `Telling` (streaming.commands.plan_execute prints it); the clock and the pause are arguments.
"""

import time
from typing import Protocol

from streaming.control.ownership import leases as lease
from streaming.control.ownership.store import find_plan
from streaming.control.plans.advancer import PLAN_STEP_INTERVAL_S
from streaming.vocabulary.states import PlanState

FINISHED = (PlanState.DONE, PlanState.CANCELLED)


class Telling(Protocol):
    def advanced_by(self, holder: str, wait: bool) -> None: ...  # another advancer holds the plan's lease
    def finished_by_another(self, state: PlanState) -> None: ...  # `wait`: it finished under the other advancer
    def stepped(self, step) -> None: ...  # a step that changed something (streaming.control.plans.step.Step)


def advance(applier, take_step, request_id, holder, wait, telling, leased=True, wall_ms=None, pause=time.sleep):
    """Steps of the plan `request_id` by `take_step()` under its lease held as `holder`, through `applier` (the one
    writer, with the ownership topic's ledger), telling `telling` each step that changed something. Returns the last
    step taken, or None when another advancer holds the plan (`wait`: until that one finished it).
    `leased=False` (cancel): the step is taken whoever holds the plan's lease - a cancelled plan's step only cancels
    and sweeps, and a step that submitted while the cancel was written cancels its own wave
    (streaming.control.plans.step), so it needs no exclusivity; the job steps only running and paused plans."""
    wall_ms = wall_ms or (lambda: time.time() * 1000)
    last = waiting_for = None
    while True:
        claimed, current = lease.claim(applier, request_id, holder, wall_ms()) if leased else (True, None)
        if not claimed:
            if current.holder != waiting_for:
                telling.advanced_by(current.holder, wait)
                waiting_for = current.holder
            state = find_plan(applier.ledger, request_id).state
            if not wait or state in FINISHED:
                if wait:
                    telling.finished_by_another(state)
                return None
            pause(PLAN_STEP_INTERVAL_S)
            continue
        waiting_for = None
        step = take_step()
        shown = (step.plan.state, tuple(sorted(step.counts.items())))
        if shown != last or step.submitted or step.throttle_actions or step.refused or step.cancelled:
            telling.stepped(step)
            last = shown
        if not wait or step.finished:
            break
        pause(PLAN_STEP_INTERVAL_S)
    if not wait and leased:
        lease.release(applier, request_id, holder, wall_ms())  # the job carries it on from its next tick
    return step
