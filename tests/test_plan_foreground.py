"""A plan advanced in the foreground (streaming.control.plans.foreground): under its lease, a step at a time, told to
the command; on the one admin fake and an in-memory ledger, with the clock and the pause as arguments."""

from dataclasses import replace

import pytest

from streaming.control.ownership.leases import Lease, holder_of
from streaming.control.plans import foreground
from streaming.vocabulary.states import PlanState
from tests.test_plan_advance import PLAN_ID, setup, writer

ME, OTHER = "resume --wait h:1", "job h:2"


class Told:
    def __init__(self):
        self.lines = []

    def advanced_by(self, holder, wait):
        self.lines.append(("advanced by", holder, wait))

    def finished_by_another(self, state):
        self.lines.append(("finished", str(state)))

    def stepped(self, step):
        self.lines.append(("stepped", str(step.plan.state)))


def run(fake, ledger, wait, leased=True, steps=None):
    """(last step or None, what was told, pauses taken) of foreground.advance on the fake at a fixed clock."""
    from streaming.cluster.poller import strict_poll
    from streaming.control.plans.step import advance_once

    applier, told, pauses = writer(fake, ledger), Told(), []

    def take_step():
        result = advance_once(fake, lambda topics: strict_poll(fake, topics), applier, PLAN_ID, 1000, 1.0)
        if steps is not None:
            steps.append(result)
            for started in fake.starts:  # what a step submitted is at its target before the next one
                for key, target in started.items():
                    fake.partitions[key] = {"replicas": list(target), "isr": list(target), "leader": target[0]}
        return result
    last = foreground.advance(applier, take_step, PLAN_ID, ME, wait, told, leased, wall_ms=lambda: 1000,
                              pause=pauses.append)
    return last, told.lines, pauses


def test_one_step_then_the_lease_is_let_go():
    fake, ledger = setup()
    last, told, pauses = run(fake, ledger, wait=False)
    assert last.submitted and told == [("stepped", "running")] and pauses == []
    assert holder_of(ledger.leases(PLAN_ID)).until_ms == 1000  # released: the job carries the plan on


@pytest.mark.parametrize("wait, finished_by_then, told", [
    (False, False, [("advanced by", OTHER, False)]),
    (True, True, [("advanced by", OTHER, True), ("finished", "done")]),
], ids=["without-wait-it-says-who-advances-it", "wait-until-the-other-finished-it"])
def test_another_holder_steps_it(wait, finished_by_then, told):
    fake, ledger = setup()
    ledger.put_lease(Lease(PLAN_ID, OTHER, 0, 10**15))
    if finished_by_then:
        ledger.put_plan(replace(ledger.plans()[0], state=PlanState.DONE))
    assert run(fake, ledger, wait) == (None, told, [])
    assert fake.starts == []


def test_wait_steps_until_the_plan_is_finished_pausing_between_steps():
    fake, ledger = setup()
    steps = []
    last, told, pauses = run(fake, ledger, wait=True, steps=steps)
    assert last.finished and len(pauses) == len(steps) - 1
    assert all(p == foreground.PLAN_STEP_INTERVAL_S for p in pauses)
    assert told[0] == ("stepped", "running") and told[-1] == ("stepped", "done")
