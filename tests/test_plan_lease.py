"""One advancer per plan (streaming.control.ownership.leases): the replay that decides who holds a plan, as a table of
cases, and `claim` through the one writer on the in-memory ledger."""

import pytest

from streaming.control.ownership.leases import LEASE_MS, Lease, claim, holder_of, release
from streaming.control.applier import Applier
from streaming.control.ownership.store import MemoryLedger
from streaming.vocabulary.states import PlanState

A, B = "job h:1", "execute --wait h:2"


def at(holder, claimed_ms, until_ms=None):
    return Lease("p", holder, claimed_ms, claimed_ms + LEASE_MS if until_ms is None else until_ms)


@pytest.mark.parametrize("leases, holder", [
    ([], None),
    ([at(A, 0)], A),
    ([at(A, 0), at(B, 1)], A),  # B claimed while A's lease ran: ignored, whatever B read back
    ([at(A, 0), at(B, 0)], A),  # simultaneous claims: the first in the log wins
    ([at(A, 0), at(B, LEASE_MS)], B),  # A's lease ran out: taken over
    ([at(A, 0), at(A, 5000), at(B, LEASE_MS)], A),  # A renewed in time
    ([at(A, 0), at(A, 5000, 5000), at(B, 5001)], B),  # A released it
], ids=["none", "one", "second-ignored", "simultaneous-first-wins", "expired-taken-over", "renewed", "released"])
def test_holder_of(leases, holder):
    current = holder_of(leases)
    assert (current.holder if current else None) == holder


def test_claim_writes_only_when_due_and_refuses_while_another_holds():
    ledger = MemoryLedger()
    writer = Applier(None, None, ledger)
    assert claim(writer, "p", A, 0) == (True, at(A, 0))
    assert claim(writer, "p", A, 1000)[0] and len(ledger.claims) == 1  # less than half used: no write
    assert claim(writer, "p", B, 2000) == (False, at(A, 0)) and len(ledger.claims) == 1
    assert claim(writer, "p", A, LEASE_MS // 2 + 1)[0] and len(ledger.claims) == 2  # renewed
    release(writer, "p", A, 9000)
    assert claim(writer, "p", B, 9000) == (True, at(B, 9000))


@pytest.mark.parametrize("leased, cancels", [(True, []), (False, [[("t", 0), ("t", 1)]])],
                         ids=["a-step-waits-for-the-holder", "cancel-steps-anyway"])
def test_cancel_steps_a_plan_whoever_holds_its_lease(leased, cancels):
    """The job holds the plan's lease; `cancel --request-id` still cancels what is in flight (the job steps only
    running and paused plans, so nobody else would)."""
    from dataclasses import replace
    from types import SimpleNamespace

    from streaming.commands.plan_execute import advance
    from tests.test_plan_advance import PLAN_ID, setup, step, writer

    fake, ledger = setup()
    step(fake, ledger)  # t-0 and t-1 submitted
    fake.reassigning.update({("t", 0): ([2, 1], [2], [1]), ("t", 1): ([2, 1], [2], [1])})
    ledger.put_lease(Lease(PLAN_ID, A, 0, 10**15))
    ledger.put_plan(replace(ledger.plans()[0], state=PlanState.CANCELLED))
    args = SimpleNamespace(timeout=1.0, output="table", command="cancel")
    assert advance(args, fake, writer(fake, ledger), PLAN_ID, wait=False, leased=leased) == 0
    assert fake.cancels == cancels
