"""The throttle janitor as a duty (streaming.control.duties.janitor), alone, on plain data: what a sweep decides on a
read (the claims given up, the actions due, the records as they are then), what a batch's poll makes it do, and
why a tick sweeps - one table each. It reads nothing and writes nothing; the one writer carries its decision out
(streaming.control.applier.Applier.apply_sweep), checked last on the in-memory cluster."""

import pytest

from streaming.control.applier import applier_of
from streaming.control.duties.janitor import Janitor, why_it_sweeps
from streaming.control.ownership.store import MemoryLedger
from streaming.vocabulary import throttle_actions as ta
from streaming.vocabulary.states import OwnershipState
from tests.fake_cluster import FakeCluster
from tests.test_throttle_removal import A, A_ALL_REMOVED, A_RATES, A_SET, F, L, MB, brief, cluster, owned

CHANGED = {**A_RATES, (1, L): 7 * MB}  # someone set broker 1's leader rate to their own value since
A_LEFT = A_ALL_REMOVED[:1] + A_ALL_REMOVED[2:]  # ... so that rate is not removed
HELD = owned("H", moves=[("t", 0)], entries=A_SET, auto_remove=False)

# id: (the read, the ledger's records, the policy) -> (records given up, the actions due)
SWEEPS = {
    "finished-move-removed": (cluster(topics=A_SET, rates=A_RATES), [A], ta.Policy(), [], A_ALL_REMOVED),
    "still-moving-nothing-due": (cluster(reassigning=[("t", 0, [1, 2], [2])], topics=A_SET, rates=A_RATES), [A],
                                 ta.Policy(), [], []),
    "changed-rate-given-up-not-removed": (cluster(topics=A_SET, rates=CHANGED), [A], ta.Policy(), ["A"], A_LEFT),
    "dry-run-gives-nothing-up": (cluster(topics=A_SET, rates=CHANGED), [A], ta.Policy(dry_run=True), [],
                                 [(*a[:3], ta.DRY_RUN, a[4]) for a in A_LEFT]),
    "held-by-no-auto-remove": (cluster(topics=A_SET), [HELD], ta.Policy(), [], []),
    "released-by-verify": (cluster(topics=A_SET), [HELD], ta.Policy(release=frozenset({"H"})), [],
                           [("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")]),
    "all-clears-what-is-not-ours": (cluster(topics={("u", L): "*"}, rates={(3, F): MB}), [], ta.Policy(cleanup=ta.ALL),
                                    [], [("broker", "3", F, "removed", "delete"), ("topic", "u", L, "removed", "*")]),
}


@pytest.mark.parametrize("fresh, records, policy, given_up, actions", SWEEPS.values(), ids=SWEEPS.keys())
def test_a_sweep_decides_on_the_read_it_is_handed(fresh, records, policy, given_up, actions):
    decided = Janitor(policy).sweep(fresh, records)
    assert [r.request_id for r in decided.given_up] == given_up
    assert brief(decided.actions) == actions
    assert [r.request_id for r in decided.records] == [r.request_id for r in records]
    # the records as they are once the given-up ones are written back: the changed rate is claimed no more
    rewritten = {r.request_id: r for r in decided.given_up}
    assert all(rewritten.get(r.request_id, r) == r for r in decided.records)
    assert all((1, L) not in {(c.broker, c.kind) for c in r.rates} for r in decided.given_up)


# id: (the batch's poll, the records, the policy) -> (sweeps now, the due actions as dry runs to report)
BATCHES = {
    "nothing-due": (cluster(reassigning=[("t", 0, [1, 2], [2])], topics=A_SET, rates=A_RATES), [A], ta.Policy(),
                    False, 0),
    "removal-due": (cluster(topics=A_SET, rates=A_RATES), [A], ta.Policy(), True, 0),
    "a-claim-given-up": (cluster(reassigning=[("t", 0, [1, 2], [2])], topics=A_SET, rates=CHANGED), [A], ta.Policy(),
                         True, 0),
    "a-record-settled": (cluster(), [A], ta.Policy(), True, 0),
    "dry-run-reports": (cluster(topics=A_SET, rates=A_RATES), [A], ta.Policy(dry_run=True), False, 6),
    "off-reports": (cluster(topics=A_SET, rates=A_RATES), [A], ta.Policy(cleanup=ta.OFF), False, 6),
}


@pytest.mark.parametrize("poll, records, policy, sweeps, dry_runs", BATCHES.values(), ids=BATCHES.keys())
def test_a_batchs_poll_makes_it_sweep_or_report(poll, records, policy, sweeps, dry_runs):
    janitor = Janitor(policy)
    swept, _, reported = janitor.batch(poll, records)
    assert (swept, len(reported)) == (sweeps, dry_runs)
    assert janitor.batch(poll, records)[2] == []  # a dry run is reported once while it stays due


# id: (left, unseen, brokers whose moves between log dirs ended, a tick listed since start) -> the line's start
WHY = {
    "left": ([("t", 0)], [], [], True, "1 owned partition(s) left the reassignment list (t-0): "),
    "left-and-unseen": ([("t", 0)], [("u", 1)], [], True,
                        "1 owned partition(s) left the reassignment list; 1 move(s) of ours came and went between "
                        "two looks (t-0, ...): "),
    "unseen": ([], [("u", 1)], [], True, "1 move(s) of ours came and went between two looks (u-1): "),
    "log-dirs": ([], [], [1, 2], True, "the moves between log dirs on broker(s) 1, 2 ended: "),
    "at-start": ([], [], [], False, "ownership records are active at start: "),
    "after-a-failure": ([], [], [], True, "running the throttle janitor again (its last run failed)"),
}


@pytest.mark.parametrize("left, unseen, log_dirs, started, line", WHY.values(), ids=WHY.keys())
def test_why_a_tick_sweeps(left, unseen, log_dirs, started, line):
    assert why_it_sweeps(left, unseen, log_dirs, started).startswith(line)


@pytest.mark.parametrize("left, unseen, due, owned_now, sweeps", [
    ((), (), True, {("t", 0)}, True), ((), (), True, set(), False), ((), (), False, {("t", 0)}, False),
    ({("t", 0)}, (), False, set(), True), ((), {("t", 0): None}, False, set(), True),
], ids=["due-and-owned", "due-nothing-owned", "not-due", "left", "unseen"])
def test_when_a_tick_sweeps(left, unseen, due, owned_now, sweeps):
    janitor = Janitor(ta.Policy())
    janitor.due = due
    assert janitor.sweeps_after(left, unseen, owned_now) == sweeps


def test_a_failed_sweep_or_an_unread_ledger_makes_a_sweep_due_and_a_settled_ledger_does_not():
    janitor = Janitor(ta.Policy())
    janitor.swept(failed=True)
    assert janitor.due
    janitor.settled(frozenset(), unread=True)  # the ledger was not read: still due
    assert janitor.due
    janitor.settled(frozenset(), unread=False)
    assert not janitor.due
    janitor.unread()  # a request written while the ledger could not be read is swept once it reads
    assert janitor.due


def test_the_applier_carries_a_decision_out_and_settles_on_its_read_back():
    fake = FakeCluster(topics=dict(A_SET), rates=dict(CHANGED))
    ledger = MemoryLedger.of(A)
    decided = Janitor(ta.Policy()).sweep(fake.snapshot(), ledger.records())
    swept = applier_of(fake, ledger, readback_timeout_s=0.5).apply_sweep(decided, {})
    assert brief(swept.actions) == A_LEFT and set(swept.steps) == {"alter", "read_back", "records"}
    assert fake.rates == {(1, L): 7 * MB}  # someone else's value stays
    assert ledger.latest["A"].state == OwnershipState.DONE and (1, L) not in {
        (c.broker, c.kind) for c in ledger.latest["A"].rates}
