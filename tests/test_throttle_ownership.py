"""Ownership that never loses an operator's value (issue 19, part 1), on the in-memory cluster: the janitor
(sinks.throttles.janitor) with the very claims `execute` computes (sinks.throttles.claims). Overlapping
requests, manual edits between them, throttles another tool set with its move; then a property test over
generated interleavings of all of these."""

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sinks.throttles import view as tv
from sinks.throttles.claims import throttle_setting
from sinks.throttles.ownership import DONE, STARTED, MemoryStore, Move, Ownership
from tests.fake_cluster import FakeCluster
from tests.test_janitor import janitor

MB = 1_000_000
L, F = "leader", "follower"
OPERATOR = 5 * MB  # a value somebody else set by hand


@dataclass
class World:
    """The fake cluster, the ownership store and a janitor running on them, driven one step at a time."""
    cluster: FakeCluster = field(default_factory=lambda: FakeCluster(brokers={1: True, 2: True, 3: True}))
    store: MemoryStore = field(default_factory=MemoryStore)
    batches: int = 0
    requests: int = 0

    def __post_init__(self):
        self.janitor, self.logged = janitor(self.cluster, self.store)

    def execute(self, partition, source, destination, rate):
        """What `execute` does, in the order it does it: claims computed on a read of the cluster, the record
        written, the throttles set, the move started, the record marked started."""
        self.requests += 1
        move = Move("t", partition, (source,), (destination,))
        active = [r for r in self.store.records() if r.active]
        setting = throttle_setting((move,), tv.view_of(self.cluster.snapshot()), active, rate)
        # created_ms in request order (ids sort in creation order): a real clock may repeat a millisecond
        record = Ownership(f"R{self.requests:03d}", STARTED, self.requests, self.requests, moves=(move,),
                           entries=setting.entries, rates=setting.rate_claims)
        self.store.put(record)
        for (broker, kind), value in setting.rates.items():
            self.cluster.rates[(broker, kind)] = value
        for (topic, kind), pairs in setting.appends.items():
            self.cluster._alter("topic", topic, kind, "append", ",".join(f"{p}:{b}" for p, b in pairs))
        self.cluster.reassigning[("t", partition)] = ((destination, source), (destination,), (source,))

    def complete(self, partition):
        self.cluster.reassigning.pop(("t", partition), None)

    def batch(self):
        self.batches += 1
        return self.janitor.on_batch(self.cluster.snapshot(), self.batches)

    def settle(self):
        """Batches until nothing changes (the janitor converges in a few)."""
        for _ in range(4):
            self.batch()


def test_a_stale_records_delete_never_wins_over_the_newer_records_restore():
    """Issue 19's defect: A claims broker 1's rate (nothing before); the rate is then changed by hand; B sets
    the same value and records the operator's value as its prior. At completion the operator's value returns."""
    world = World()
    world.execute(0, 1, 2, MB)
    world.cluster.rates[(1, L)] = OPERATOR  # by hand, while nobody's janitor runs
    world.execute(1, 1, 3, MB)
    world.complete(0)
    world.complete(1)
    world.settle()
    assert world.cluster.rates == {(1, L): OPERATOR}
    assert {r.state for r in world.store.records()} == {DONE}


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
    assert {r.state for r in world.store.records()} == {DONE}
