"""One advancer per plan (sinks.plans.lease): the replay that decides who holds a plan, as a table of cases,
and `claim` on the in-memory plan store."""

import pytest

from sinks.plans.lease import LEASE_MS, Lease, claim, holder_of, release
from sinks.plans.plan_store import MemoryPlanStore

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
    plans = MemoryPlanStore()
    assert claim(plans, "p", A, 0) == (True, at(A, 0))
    assert claim(plans, "p", A, 1000)[0] and len(plans.claims) == 1  # less than half used: no write
    assert claim(plans, "p", B, 2000) == (False, at(A, 0)) and len(plans.claims) == 1
    assert claim(plans, "p", A, LEASE_MS // 2 + 1)[0] and len(plans.claims) == 2  # renewed
    release(plans, "p", A, 9000)
    assert claim(plans, "p", B, 9000) == (True, at(B, 9000))
