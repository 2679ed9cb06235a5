"""Throttles observed appearing together with a reassignment another tool started (streaming.control.throttles.adoption)."""

import time

import pytest

from streaming.vocabulary import throttle_entries as te
from streaming.control.throttles import view as tv
from streaming.control.ownership.records import EntryClaim, Origin, Ownership, RateClaim
from streaming.control.ownership.store import MemoryLedger
from tests.fake_cluster import FakeCluster
from tests.test_janitor import janitor, request, throttled
from tests.test_throttle_removal import cluster
from streaming.control.throttles.adoption import observe
from streaming.vocabulary.states import OwnershipState

MB = 1_000_000
L, F = "leader", "follower"
MOVE = ("t", 0, [2, 3, 1], [3], [1])  # t-0: 1,2 -> 2,3


def views(*snapshots):
    return [tv.view_of(s) for s in snapshots]


def claims(record):
    if record is None:
        return None
    return (sorted(f"{c.topic}/{c.kind}/{c.partition}:{c.broker}" for c in record.entries),
            sorted((c.broker, c.kind, c.prior) for c in record.rates))


BEFORE = cluster(topics={("t", L): "5:1"}, rates={(4, L): MB})
STARTED_WITH = cluster(reassigning=[MOVE], topics={("t", L): "5:1,0:1,0:2", ("t", F): "0:3"},
                       rates={(4, L): MB, (1, L): MB, (3, F): MB})
EXECUTE_RECORD = Ownership("E", OwnershipState.STARTED, 0, 0, entries=(EntryClaim("t", L, 0, 1),), rates=(RateClaim(1, L, MB, None),))

CASES = [
    pytest.param([BEFORE], STARTED_WITH, [],
                 (["t/follower/0:3", "t/leader/0:1", "t/leader/0:2"], [(1, L, None), (3, F, None)]),
                 id="entries-and-rates-appearing-with-a-started-move"),
    pytest.param([BEFORE, cluster(topics={("t", L): "5:1,0:1,0:2", ("t", F): "0:3"}, rates={(4, L): MB, (1, L): MB, (3, F): MB})],
                 STARTED_WITH, [], (["t/follower/0:3", "t/leader/0:1", "t/leader/0:2"], [(1, L, None), (3, F, None)]),
                 id="throttles-set-one-poll-before-the-start"),
    pytest.param([cluster(topics={("t", L): "5:1,0:1,0:2", ("t", F): "0:3"}, rates={(4, L): MB, (1, L): MB, (3, F): MB})],
                 STARTED_WITH, [], None, id="already-there-before-is-not-taken"),
    pytest.param([BEFORE], STARTED_WITH, [EXECUTE_RECORD], (["t/follower/0:3", "t/leader/0:2"], [(3, F, None)]),
                 id="claimed-by-our-execute-is-not-taken-twice"),
    pytest.param([BEFORE], cluster(reassigning=[MOVE], topics={("t", L): "5:1,0:4,1:1"}, rates={(4, L): MB, (4, F): MB}),
                 [], None, id="entries-of-other-partitions-or-brokers-and-rates-of-unused-brokers-not-taken"),
    pytest.param([BEFORE], cluster(reassigning=[MOVE], topics={("t", L): "*"}, rates={(4, L): MB}), [], None,
                 id="star-never-taken"),
    pytest.param([cluster(rates={(1, L): 5 * MB})], cluster(reassigning=[MOVE], rates={(1, L): MB, (1, F): MB}), [],
                 ([], [(1, F, None), (1, L, 5 * MB)]), id="per-key-appeared-deleted-overwritten-restored"),
    pytest.param([cluster(), cluster(rates={(1, L): 5 * MB})], cluster(reassigning=[MOVE], rates={(1, L): MB}), [],
                 ([], [(1, L, 5 * MB)]), id="value-set-between-the-two-polls-before-is-restored"),
    pytest.param([cluster(rates={(1, L): 5 * MB}), cluster(rates={(1, L): MB})],
                 cluster(reassigning=[MOVE], rates={(1, L): MB}), [], ([], [(1, L, 5 * MB)]),
                 id="rate-set-one-poll-before-the-start-restores-the-value-before-it"),
    pytest.param([cluster(rates={(1, L): MB})], cluster(reassigning=[MOVE], rates={(1, L): 3 * MB}), [EXECUTE_RECORD],
                 ([], [(1, L, None)]), id="overwriting-our-value-carries-our-prior"),
    pytest.param([cluster(rates={(1, L): 5 * MB})], cluster(reassigning=[MOVE], rates={(1, L): MB}),
                 [Ownership("E", OwnershipState.STARTED, 0, 0, rates=(RateClaim(1, L, MB, 5 * MB),))], None,
                 id="value-our-execute-set-is-not-taken"),
    pytest.param([cluster(dead=(1,))], cluster(reassigning=[MOVE], rates={(1, L): MB}), [], None,
                 id="broker-offline-before-its-configs-unknown"),
    pytest.param([cluster(reassigning=[MOVE])], STARTED_WITH, [], None, id="move-already-running-before"),
    pytest.param([], STARTED_WITH, [], None, id="no-history-after-start"),
    pytest.param([cluster(errors=("DescribeConfigs",))], STARTED_WITH, [], None, id="gap-in-history"),
]


@pytest.mark.parametrize("history, now, records, expected", CASES)
def test_observe(history, now, records, expected):
    found = observe(views(*history), tv.view_of(now), records, "X", 5)
    assert claims(found) == expected
    if found is not None:
        assert found.origin == Origin.OBSERVED and found.state == OwnershipState.STARTED and found.auto_remove
        assert [(m.topic, m.partition, m.sources, m.target) for m in found.moves] == [("t", 0, (2, 1), (2, 3))]


def test_janitor_removes_observed_throttles_when_the_foreign_move_completes():
    fake = FakeCluster(topics={("t", L): "5:1"}, rates={(2, L): 3 * MB})
    store = MemoryLedger()
    j, _ = janitor(fake, store)
    assert j.on_batch(fake.snapshot(), 1) == []
    # Another tool (kafka-reassign-partitions) throttles and starts t-0: 1 -> 3.
    fake.topics.update({("t", L): "5:1,0:1", ("t", F): "0:3"})
    fake.rates.update({(1, L): MB, (3, F): MB})
    fake.reassigning[("t", 0)] = ((3, 1), (3,))
    assert j.on_batch(fake.snapshot(), 2) == []
    [record] = store.records()
    assert record.origin == Origin.OBSERVED and {(c.partition, c.broker) for c in record.entries} == {(0, 1), (0, 3)}
    del fake.reassigning[("t", 0)]
    actions = j.on_batch(fake.snapshot(), 3)
    assert sorted((a.scope, a.name, a.kind) for a in actions) == [
        ("broker", "1", L), ("broker", "3", F), ("topic", "t", F), ("topic", "t", L)]
    assert fake.topics[("t", L)] == "5:1" and fake.rates == {(2, L): 3 * MB}
    assert te.parse(fake.topics[("t", F)]) == frozenset()


def foreign_throttled_move(fake):
    """Another tool (kafka-reassign-partitions) throttles and starts t-0: 1 -> 3."""
    fake.topics.update({("t", L): "5:1,0:1", ("t", F): "0:3"})
    fake.rates.update({(1, L): MB, (3, F): MB})
    fake.reassigning[("t", 0)] = ((3, 1), (3,))


def test_polls_a_gap_apart_observe_nothing():
    """The job runs no batch while nothing moves: a throttle set during such a gap is not one set with the
    next reassignment, whatever the two polls around the gap show."""
    fake = FakeCluster(topics={("t", L): "5:1"})
    store = MemoryLedger()
    j, _ = janitor(fake, store)  # a 10 s trigger: views more than 60 s apart are a gap
    assert j.on_batch(fake.snapshot(now_ms=1_000_000), 1) == []
    foreign_throttled_move(fake)
    assert j.on_batch(fake.snapshot(now_ms=1_000_000 + 61_000), 2) == []
    assert store.records() == []


def test_a_poll_older_than_the_last_removal_observes_nothing():
    """A batch whose poll predates a removal the controller made on a fresher read shows `execute`'s throttles,
    since removed and their record done: they must not come back as an observed record."""
    fake = FakeCluster()
    store = MemoryLedger()
    j, _ = janitor(fake, store)
    assert j.on_batch(fake.snapshot(), 1) == []  # idle
    executed = throttled(moving=True)  # `execute` recorded R1, throttled and started t-0: 1 -> 2
    fake.topics, fake.rates, fake.reassigning = executed.topics, executed.rates, executed.reassigning
    store.put(request())
    in_flight = fake.snapshot(now_ms=int(time.time() * 1000) - 1000)  # the poll of a batch still running
    del fake.reassigning[("t", 0)]
    assert j.sweep()  # the controller, on a fresh read
    assert [r.state for r in store.records()] == [OwnershipState.DONE]
    assert j.on_batch(in_flight, 2) == []
    assert [r.request_id for r in store.records()] == [request().request_id]

from hypothesis import given  # noqa: E402

from streaming.control.ownership.records import holders, rate_owners  # noqa: E402
from tests.test_throttle_removal import PROPERTY, states  # noqa: E402


@PROPERTY
@given(states(), states())
def test_observed_claims_only_what_newly_appeared_and_is_nobodys(before, now):
    (previous, _, _), (current, records, _) = before, now
    found = observe([tv.view_of(previous)], tv.view_of(current), records, "X", 0)
    if found is None:
        return
    old, new = tv.view_of(previous), tv.view_of(current)
    active = [r for r in records if r.state != OwnershipState.DONE]
    for claim in found.entries:
        value = new.topic_values[(claim.topic, claim.kind)]
        assert not te.is_all(value)
        assert (claim.partition, claim.broker) not in te.parse(old.topic_values.get((claim.topic, claim.kind)))
        assert (claim.topic, claim.partition) in new.reassigning and (claim.topic, claim.partition) not in old.reassigning
        assert not any((c.topic, c.kind, c.partition, c.broker) == (claim.topic, claim.kind, claim.partition, claim.broker)
                       for r in active for c in r.entries)
    for claim in found.rates:  # per key: what changed with the move, never a value our records hold
        key, owned = (claim.broker, claim.kind), rate_owners(active).get((claim.broker, claim.kind), ())
        assert claim.broker in new.moving_brokers and claim.broker in old.alive
        assert new.broker_rates[key] == claim.rate != old.broker_rates.get(key)
        assert not holders(owned, claim.rate)
        assert claim.prior == (old.broker_rates.get(key) if not holders(owned, old.broker_rates.get(key))
                               else owned[-1][1].prior)
