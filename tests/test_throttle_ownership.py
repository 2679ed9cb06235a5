"""Ownership that never loses an operator's value, on the in-memory cluster: the janitor
(the job's controller: streaming.control.controller, streaming.control.sweep) with the very claims `execute` computes (streaming.control.throttles.claims). Overlapping
requests, manual edits between them, throttles another tool set with its move; then a property test over
generated interleavings of all of these."""

import time
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streaming.cluster.grant import WRITE_GRANT
from streaming.control.throttles import view as tv
from streaming.control.throttles.claims import throttle_setting
from streaming.control.ownership.records import Move, Ownership
from streaming.control.ownership.store import MemoryLedger
from tests.fake_cluster import FakeCluster
from tests.test_janitor import janitor
from streaming.vocabulary.states import OwnershipState

MB = 1_000_000
L, F = "leader", "follower"
OPERATOR = 5 * MB  # a value somebody else set by hand


@dataclass
class World:
    """The fake cluster, the ownership store and a janitor running on them, driven one step at a time."""
    cluster: FakeCluster = field(default_factory=lambda: FakeCluster(brokers={1: True, 2: True, 3: True}))
    store: MemoryLedger = field(default_factory=MemoryLedger)
    batches: int = 0
    requests: int = 0
    now_ms: int = 0

    def tick(self):
        """A clock that never repeats a millisecond, so records sort in the order things happened here, and runs
        a millisecond ahead of the wall clock the janitor stamps its own reads with (read_cluster): a poll taken
        after the janitor acted is later than the read it acted on, as on a real cluster, where a poll takes
        longer than a millisecond. (At the same millisecond the janitor skips observing that poll, and the
        property failed now and then for that alone.)"""
        self.now_ms = max(int(time.time() * 1000) + 1, self.now_ms + 1)
        return self.now_ms

    def __post_init__(self):
        self.janitor, self.logged = janitor(self.cluster, self.store)

    def execute(self, partition, source, destination, rate):
        """What `execute` does, in the order it does it: claims computed on a read of the cluster, the record
        written, the throttles set, the move started, the record marked started."""
        self.requests += 1
        move = Move("t", partition, (source,), (destination,))
        active = [r for r in self.store.records() if r.active]
        setting = throttle_setting((move,), tv.view_of(self.cluster.snapshot()), active, rate)
        now = self.tick()
        record = Ownership(f"R{self.requests:03d}", OwnershipState.STARTED, now, now, moves=(move,), entries=setting.entries,
                           rates=setting.rate_claims)
        self.store.put(record)
        for (broker, kind), value in setting.rates.items():
            self.cluster.rates[(broker, kind)] = value
        for (topic, kind), pairs in setting.appends.items():
            self.cluster.writer(WRITE_GRANT).alter_throttles([("topic", topic, kind, "append", ",".join(f"{p}:{b}" for p, b in pairs))])
        self.cluster.reassigning[("t", partition)] = ((destination, source), (destination,), (source,))

    def complete(self, partition):
        self.cluster.reassigning.pop(("t", partition), None)

    def batch(self):
        self.batches += 1
        return self.janitor.on_batch(self.cluster.snapshot(now_ms=self.tick()), self.batches)

    def settle(self):
        """Batches until nothing changes (the janitor converges in a few)."""
        for _ in range(4):
            self.batch()


def test_a_stale_records_delete_never_wins_over_the_newer_records_restore():
    """The defect: A claims broker 1's rate (nothing before); the rate is then changed by hand; B sets
    the same value and records the operator's value as its prior. At completion the operator's value returns."""
    world = World()
    world.execute(0, 1, 2, MB)
    world.cluster.rates[(1, L)] = OPERATOR  # by hand, while nobody's janitor runs
    world.execute(1, 1, 3, MB)
    world.complete(0)
    world.complete(1)
    world.settle()
    assert world.cluster.rates == {(1, L): OPERATOR}
    assert {r.state for r in world.store.records()} == {OwnershipState.DONE}


def test_a_record_whose_rate_was_changed_by_hand_gives_up_its_claim():
    """A claims broker 1's rate; the operator clears it and later sets the same number by hand: it is the
    operator's now (the janitor saw the clearing), so completion leaves it."""
    world = World()
    world.execute(0, 1, 2, MB)
    world.batch()
    del world.cluster.rates[(1, L)]
    world.batch()  # sees A's value gone: A no longer claims broker 1's leader rate
    world.cluster.rates[(1, L)] = MB
    world.complete(0)
    world.settle()
    assert world.cluster.rates == {(1, L): MB}
    assert {r.state for r in world.store.records()} == {OwnershipState.DONE}


def test_a_throttle_another_tool_overwrote_is_restored_and_one_it_added_is_deleted():
    """Kafka's own --execute --throttle over a broker that already held someone else's leader rate: the leader
    rate is adopted with that value as its prior, the follower rate with none; completion leaves exactly
    what was there before the move."""
    world = World()
    world.cluster.rates[(1, L)] = OPERATOR
    world.batch()
    world.batch()
    world.tool_move(0, 1, 2, TOOL_RATE)
    world.batch()
    world.complete(0)
    world.settle()
    assert world.cluster.rates == {(1, L): OPERATOR}
    assert not any(world.cluster.topics.values())


# ---- the property: generated interleavings of requests, another tool's moves, manual edits, completions ----

OURS = (MB, 2 * MB, 3 * MB)  # what our `execute` sets
TOOL_RATE = 9 * MB  # what another tool sets with its moves
MANUAL = (None, OPERATOR, 7 * MB)  # what operators set by hand (None: deleted). Disjoint from the above: a hand
# edit of exactly the number we hold, made and undone between two polls, cannot be told from ours by anyone.
KEYS = [(b, k) for b in (1, 2, 3) for k in (L, F)]
PAIRS = [(s, d) for s in (1, 2, 3) for d in (1, 2, 3) if s != d]

steps = st.one_of(
    st.tuples(st.just("execute"), st.sampled_from(PAIRS), st.sampled_from(OURS)),
    st.tuples(st.just("tool"), st.sampled_from(PAIRS)),
    st.tuples(st.just("edit"), st.sampled_from(KEYS), st.sampled_from(MANUAL)),
    st.tuples(st.just("complete"), st.integers(0, 5)),
    st.tuples(st.just("batch")),
)


def _tool_move(self, partition, source, destination, rate):
    """kafka-reassign-partitions --execute --throttle: entries appended, both rates SET on every broker of the
    move, the move started; no ownership record."""
    for broker in (source, destination):
        for kind in (L, F):
            self.cluster.rates[(broker, kind)] = rate
    self.cluster.writer(WRITE_GRANT).alter_throttles([("topic", "t", L, "append", f"{partition}:{source}"),
                                                      ("topic", "t", F, "append", f"{partition}:{destination}")])
    self.cluster.reassigning[("t", partition)] = ((destination, source), (destination,), (source,))


World.tool_move = _tool_move


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(MANUAL[1:]), max_size=3), st.lists(steps, max_size=14))
def test_no_foreign_value_is_ever_lost_and_nothing_we_set_is_left_behind(initial, interleaving):
    """Whatever the order, once every move completed and the janitor ran, each broker rate is what the manual
    edits alone would have left (the initial values, then every edit in turn): no value somebody else set is
    lost, and nothing this tool set - or adopted from another tool's move - is left behind."""
    world = World()
    world.cluster.rates.update(initial)
    foreign = dict(initial)
    partitions = 0
    for step in interleaving:
        if step[0] == "execute":
            partitions += 1
            world.execute(partitions, *step[1], step[2])
        elif step[0] == "tool":  # observed only when the job polls just before and just after it starts
            partitions += 1
            world.batch()
            world.batch()
            world.tool_move(partitions, *step[1], TOOL_RATE)
            world.batch()
        elif step[0] == "edit":
            key, value = step[1], step[2]
            if value is None:
                world.cluster.rates.pop(key, None)
                foreign.pop(key, None)
            else:
                world.cluster.rates[key] = foreign[key] = value
        elif step[0] == "complete" and world.cluster.reassigning:
            world.complete(sorted(world.cluster.reassigning)[step[1] % len(world.cluster.reassigning)][1])
        elif step[0] == "batch":
            world.batch()
    for _, partition in list(world.cluster.reassigning):
        world.complete(partition)
    world.settle()
    assert world.cluster.rates == foreign, world.logged
    assert not any(world.cluster.topics.values())
    assert {r.state for r in world.store.records()} <= {OwnershipState.DONE}
