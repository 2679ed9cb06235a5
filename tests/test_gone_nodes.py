"""A node whose connection was closed or refused is held as gone for one deadline (streaming.cluster.gone)
and reported not alive by every poll and janitor read (streaming.vocabulary.snapshot.without_gone): plain
data, the clock an argument. The real kill is in tests/test_faults_broker_cluster.py."""

import pytest

from streaming.control.throttles.read import read_cluster
from streaming.cluster.gone import GoneNodes
from streaming.cluster.poller import poll
from streaming.vocabulary.snapshot import without_gone
from tests.fake_cluster import FakeCluster

HOLD_S = 5.0

GONE_CASES = [
    # id, marks [(nodes, at)], asked at, held then, whether the last mark was new
    ("nothing-marked", [], 0.0, set(), None),
    ("marked-held", [({1}, 0.0)], 1.0, {1}, True),
    ("hold-ends", [({1}, 0.0)], HOLD_S, set(), True),
    ("marked-again-while-held-is-not-new", [({1}, 0.0), ({1}, 2.0)], 3.0, {1}, False),
    ("marked-again-extends-the-hold", [({1}, 0.0), ({1}, 2.0)], HOLD_S + 1.0, {1}, False),
    ("marked-again-after-the-hold-is-new", [({1}, 0.0), ({1}, HOLD_S + 1.0)], HOLD_S + 2.0, {1}, True),
    ("another-node-is-new", [({1}, 0.0), ({1, 2}, 1.0)], 2.0, {1, 2}, True),
    ("empty-mark-is-not-new", [({1}, 0.0), (set(), 1.0)], 2.0, {1}, False),
]


@pytest.mark.parametrize("marks, at, held, last_new", [pytest.param(*c[1:], id=c[0]) for c in GONE_CASES])
def test_gone_nodes(marks, at, held, last_new):
    gone = GoneNodes(HOLD_S)
    answers = [gone.mark(nodes, now) for nodes, now in marks]
    assert gone.held(at) == held
    assert (answers[-1] if answers else None) == last_new


@pytest.mark.parametrize("alive, gone, expected", [
    pytest.param({1: True, 2: True}, set(), {1: True, 2: True}, id="none-gone"),
    pytest.param({1: True, 2: True}, {2}, {1: True, 2: False}, id="gone-is-not-alive"),
    pytest.param({1: True, 2: False}, {2}, {1: True, 2: False}, id="fenced-and-gone"),
    pytest.param({1: True}, {7}, {1: True}, id="unknown-gone-node-adds-nothing"),
])
def test_without_gone(alive, gone, expected):
    rows = [{"broker": b, "alive": a} for b, a in alive.items()]
    assert {r["broker"]: r["alive"] for r in without_gone(rows, gone)} == expected


def moving_to_2():
    """A move of t-0 from broker 1 to broker 2, broker 2 held as gone by the door: Kafka still has it
    registered and unfenced (its session has not timed out yet)."""
    return FakeCluster(partitions={("t", 0): {"replicas": [1, 2], "isr": [1], "leader": 1}},
                       reassigning={("t", 0): ([1, 2], [2])}, sizes={("t", 0, 1): 100, ("t", 0, 2): 40},
                       gone={2})


def test_a_poll_reports_a_gone_broker_not_alive():
    snapshot = poll(moving_to_2(), now_ms=1, all_partitions=True)
    assert snapshot.alive_brokers() == {1, 3}
    assert not snapshot.errors


def test_a_janitor_read_reports_a_gone_broker_not_alive():
    # The janitor never removes a rate of a broker that is not alive: its configs were not read.
    assert read_cluster(moving_to_2(), ["t"]).alive_brokers() == {1, 3}
