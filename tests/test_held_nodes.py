"""The door's rule for nodes that do not answer, on plain data with the clocks as arguments: which
failure holds which node and how (streaming.cluster.door.failure_hold), how long a hold lasts and what ends it
(streaming.cluster.held), the request deadline inside the call's budget (streaming.vocabulary.defaults), and a
held node reported not alive with since when it has not answered (streaming.vocabulary.snapshot.without_gone)
by every poll and janitor read. The real SIGKILLs and SIGSTOPs are in tests/test_faults_*_cluster.py."""

import contextlib
import threading
import time
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka import errors as kerrors

from streaming.control.throttles.read import read_cluster
from streaming.cluster.door import LAST_LIST_SERVED_S, Door, failure_hold
from streaming.cluster.held import CONTROLLER, GONE, UNRESPONSIVE, HeldNodes
from streaming.cluster.poller import poll
from streaming.vocabulary.defaults import REQUEST_DEADLINE_S, TIMEOUT_S, request_deadline_s
from streaming.vocabulary.errors import NodeGone
from streaming.vocabulary.kafka_apis import LIST_REASSIGNMENTS
from streaming.core.classify import classify
from streaming.core.measure import replica_progress
from streaming.core.snapshot_columns import from_snapshot
from streaming.vocabulary.snapshot import unobserved_brokers, without_gone
from streaming.vocabulary.states import ReplicaState
from tests.fake_cluster import FakeCluster

HOLD_S = 5.0
PROBE_S = 0.5

# What a failed request says about the node it was sent to (kafka-python's own errors, as its futures fail).
LAPSE = kerrors.RequestTimedOutError("Request timed out after 2500 ms")

FAILURE_CASES = [
    # id, error, the door closed that client itself, hold
    ("lapse-holds-unresponsive", LAPSE, False, UNRESPONSIVE),
    ("closed-connection-holds-gone", kerrors.KafkaConnectionError("Connection reset"), False, GONE),
    ("refused-connect-holds-gone", kerrors.KafkaConnectionError("unable to connect: refused"), False, GONE),
    # Nothing answered the connect (packets dropped on the way): not known to be down, Kafka may still see it.
    ("connect-timeout-holds-unresponsive", kerrors.KafkaConnectionError("Connection timed out"), False, UNRESPONSIVE),
    # kafka-python's own state, not the node's: the connect that failed before held it already.
    ("reconnect-backoff-holds-nothing", kerrors.NodeNotReadyError(3), False, None),
    ("paused-connection-holds-nothing", kerrors.NodeNotReadyError("Node paused: {'buffer'}"), False, None),
    ("write-to-closed-transport-holds-gone", RuntimeError("Transport closed for writes"), False, GONE),
    # Another node's silence: a drop of the whole client (after another node lapsed, or a stale picture)
    # fails every request it had in flight, on every node; none of those nodes did anything.
    ("door-dropped-the-client-mid-connect", kerrors.KafkaConnectionError(), True, None),
    ("door-dropped-the-client-in-flight", kerrors.Cancelled(), True, None),
    ("door-dropped-the-client-lapse", LAPSE, True, None),
    ("cancelled-holds-nothing", kerrors.Cancelled(), False, None),
    ("a-refusal-holds-nothing", kerrors.TopicAuthorizationFailedError(), False, None),
    ("a-transient-error-holds-nothing", kerrors.NotLeaderForPartitionError(), False, None),
    ("unknown-broker-holds-nothing", kerrors.UnknownBrokerIdError(), False, None),
    ("a-client-timeout-of-a-buffered-request-holds-nothing", kerrors.KafkaTimeoutError(), False, None),
]


@pytest.mark.parametrize("error, closed_by_door, hold", [pytest.param(*c[1:], id=c[0]) for c in FAILURE_CASES])
def test_failure_hold(error, closed_by_door, hold):
    assert failure_hold(error, closed_by_door) == hold


@pytest.mark.parametrize("collateral, hold", [(False, UNRESPONSIVE), (True, None)], ids=["the-lapse", "collateral"])
def test_a_request_failed_by_another_s_lapse_holds_nothing(collateral, hold):
    # kafka-python closes a connection when its oldest request lapses and fails every request in flight on it with
    # that error: only the first is the node's (or the controller's) silence; the rest waited behind it.
    assert failure_hold(LAPSE, False, collateral=collateral) == hold


def gone(node, now):
    return ("gone", node, now)


def forwarded(node, now, asked):
    """A request `node` forwards to the controller, sent at `asked`, lapsed at `now`."""
    return ("forwarded", node, now, asked)


def lapsed(node, now, asked):
    return ("lapsed", node, now, asked)


def answered(node, now):
    return ("answered", node, now)


def replay(events):
    nodes = HeldNodes(HOLD_S, PROBE_S)
    returned = []
    for kind, node, now, *asked in events:
        if kind == "forwarded":
            returned.append(nodes.forwarded_lapsed(node, now, asked_wall=1000.0 + asked[0]))
        elif kind == "answered-forwarded":
            returned.append(nodes.answered(node, now, forwarded=True) is not None)
        elif kind == "confirm":
            returned.append(nodes.confirm(node, now))
        elif kind == "gone":
            returned.append(nodes.gone(node, now, wall=1000.0 + now))
        elif kind == "lapsed":
            returned.append(nodes.lapsed(node, now, asked_wall=1000.0 + asked[0]))
        else:
            returned.append(nodes.answered(node, now) is not None)
    return nodes, returned


HOLD_CASES = [
    # id, events (`wall` = 1000 + monotonic), asked at, held then, {node: since wall} of the unresponsive, last return
    ("nothing-marked", [], 0.0, set(), {}, None),
    ("gone-held", [gone(1, 0.0)], 1.0, {1}, {}, True),
    ("gone-hold-ends", [gone(1, 0.0)], HOLD_S, set(), {}, True),
    ("gone-again-while-held-is-not-new", [gone(1, 0.0), gone(1, 2.0)], 3.0, {1}, {}, False),
    ("gone-again-extends-the-hold", [gone(1, 0.0), gone(1, 2.0)], HOLD_S + 1.0, {1}, {}, False),
    ("gone-again-after-the-hold-is-new", [gone(1, 0.0), gone(1, HOLD_S + 1.0)], HOLD_S + 2.0, {1}, {}, True),
    ("another-gone-node-is-new", [gone(1, 0.0), gone(2, 1.0)], 2.0, {1, 2}, {}, True),
    ("lapse-held", [lapsed(3, 2.5, 0.0)], 3.0, {3}, {3: 1000.0}, True),
    ("lapse-held-while-lapses-renew-it", [lapsed(3, 2.5, 0.0), lapsed(3, 5.0, 2.5), lapsed(3, 7.5, 5.0)],
     7.5 + HOLD_S - 0.1, {3}, {3: 1000.0}, False),
    ("unrenewed-hold-ends-an-idle-door-asks-again", [lapsed(3, 2.5, 0.0)], 2.5 + HOLD_S, set(), {}, True),
    ("a-fenced-node-s-probe-renews-it", [lapsed(3, 2.5, 0.0), ("confirm", 3, 6.0)], 6.0 + HOLD_S - 0.1, {3},
     {3: 1000.0}, None),
    ("a-refused-probe-renews-it", [lapsed(3, 2.5, 0.0), gone(3, 6.0)], 6.0 + HOLD_S - 0.1, {3}, {3: 1000.0}, False),
    ("answer-releases", [lapsed(3, 2.5, 0.0), answered(3, 4.0)], 4.0, set(), {}, True),
    ("answer-releases-a-gone-node", [gone(3, 0.0), answered(3, 1.0)], 1.0, set(), {}, True),
    ("an-answer-without-a-lapse-holds-nothing", [answered(3, 1.0)], 1.0, set(), {}, False),
    ("lapse-again-keeps-the-first-since", [lapsed(3, 2.5, 0.0), lapsed(3, 6.0, 3.5)], 7.0, {3}, {3: 1000.0}, False),
    ("unresponsive-then-refused-stays-unresponsive", [lapsed(3, 2.5, 0.0), gone(3, 4.0)], 4.5, {3}, {3: 1000.0},
     False),
    ("gone-then-lapsed-is-unresponsive", [gone(3, 0.0), lapsed(3, 3.0, 0.5)], 3.5, {3}, {3: 1000.5}, True),
    ("held-again-after-answering", [lapsed(3, 2.5, 0.0), answered(3, 5.0), lapsed(3, 9.0, 6.5)], 10.0, {3},
     {3: 1006.5}, True),
    ("another-node-s-lapse-holds-only-it", [lapsed(3, 2.5, 0.0)], 3.0, {3}, {3: 1000.0}, True),
    ("another-node-answering-releases-nothing", [lapsed(3, 2.5, 0.0), answered(1, 3.0)], 3.0, {3}, {3: 1000.0}, False),
]


@pytest.mark.parametrize("events, at, held, since, last", [pytest.param(*c[1:], id=c[0]) for c in HOLD_CASES])
def test_held_nodes(events, at, held, since, last):
    nodes, returned = replay(events)
    assert nodes.held(at) == held
    assert nodes.unanswered_since(at) == since
    assert (returned[-1] if returned else None) == last


FORWARDED_CASES = [
    # id, events (forwarded(node, now, asked) = a request the node forwards to the controller lapsed), asked at,
    # held, suspects, last return
    ("forwarded-lapse-holds-the-controller-not-the-broker", [forwarded(2, 2.5, 0.0)], 3.0, {CONTROLLER}, {2},
     True),
    ("the-suspect-answering-its-probe-is-cleared", [forwarded(2, 2.5, 0.0), answered(2, 2.6)], 3.0, {CONTROLLER},
     set(), False),
    ("the-suspect-lapsing-its-probe-is-held", [forwarded(2, 2.5, 0.0), lapsed(2, 5.1, 2.6)], 6.0, {CONTROLLER, 2},
     set(), True),
    ("a-suspect-not-probed-out-is-forgotten", [forwarded(2, 2.5, 0.0)], 2.5 + HOLD_S, set(), set(), True),
    ("a-held-broker-is-no-suspect", [lapsed(2, 2.5, 0.0), forwarded(2, 3.0, 0.5)], 3.5, {CONTROLLER, 2}, set(),
     True),
    ("the-controller-answering-releases-it", [forwarded(2, 2.5, 0.0), answered(CONTROLLER, 4.0)], 4.5, set(),
     {2}, True),
    ("a-second-forwarded-lapse-is-not-new", [forwarded(2, 2.5, 0.0), forwarded(3, 3.0, 0.5)], 3.5,
     {CONTROLLER}, {2, 3}, False),
]

STUCK_CASES = [
    # id, events (("answered-forwarded", node, now): a broker got an answer from the controller), at, stuck forwarding
    ("a-forwarded-lapse-marks-the-broker-s-forwarding", [forwarded(2, 2.5, 0.0)], 3.0, {2}),
    ("the-broker-answering-itself-leaves-it-stuck", [forwarded(2, 2.5, 0.0), answered(2, 2.6)], 3.0, {2}),
    ("a-forwarded-answer-through-it-frees-it", [forwarded(2, 2.5, 0.0), ("answered-forwarded", 2, 4.0)], 4.5, set()),
    ("through-another-broker-frees-only-that-one", [forwarded(2, 2.5, 0.0), forwarded(3, 2.6, 0.1),
                                                     ("answered-forwarded", 3, 4.0)], 4.5, {2}),
    ("stuck-for-at-most-a-hold", [forwarded(2, 2.5, 0.0)], 2.5 + HOLD_S, set()),
]


@pytest.mark.parametrize("events, at, stuck", [pytest.param(*c[1:], id=c[0]) for c in STUCK_CASES])
def test_stuck_forwarding(events, at, stuck):
    nodes, _ = replay(events)
    assert nodes.stuck_forwarding(at) == stuck


@pytest.mark.parametrize("events, at, held, suspects, last", [pytest.param(*c[1:], id=c[0]) for c in FORWARDED_CASES])
def test_forwarded_lapses(events, at, held, suspects, last):
    nodes, returned = replay(events)
    assert nodes.held(at) == held
    assert nodes.suspects(at) == suspects
    assert returned[-1] == last


PROBE_CASES = [
    # id, events, then probe_due calls [(now, probe ends before it?)], the nodes due at each
    ("an-unresponsive-node-is-probed-at-once", [lapsed(3, 2.5, 0.0)], [(2.5, False)], [[3]]),
    ("not-again-while-one-is-in-flight", [lapsed(3, 2.5, 0.0)], [(2.5, False), (3.5, False)], [[3], []]),
    ("again-once-it-ended", [lapsed(3, 2.5, 0.0)], [(2.5, False), (5.0, True)], [[3], [3]]),
    ("not-more-often-than-probe-every", [lapsed(3, 2.5, 0.0)], [(2.5, False), (2.6, True)], [[3], []]),
    ("again-when-one-was-never-heard-of", [lapsed(3, 2.5, 0.0)], [(2.5, False), (2.5 + HOLD_S, False)], [[3], [3]]),
    ("a-gone-node-is-not-probed", [gone(3, 0.0)], [(1.0, False)], [[]]),
    ("an-answered-node-is-not-probed", [lapsed(3, 2.5, 0.0), answered(3, 3.0)], [(4.0, False)], [[]]),
    ("each-unresponsive-node", [lapsed(3, 2.5, 0.0), lapsed(1, 2.6, 0.1)], [(3.0, False)], [[1, 3]]),
    ("a-suspect-and-the-controller", [forwarded(3, 2.5, 0.0)], [(2.5, False)], [[3, CONTROLLER]]),
]


@pytest.mark.parametrize("events, calls, due", [pytest.param(*c[1:], id=c[0]) for c in PROBE_CASES])
def test_probes(events, calls, due):
    nodes, _ = replay(events)
    got = []
    for now, ended_before in calls:
        if ended_before:
            for node in (3, 1, CONTROLLER):
                nodes.probe_done(node)
        got.append(nodes.probe_due(now))
    assert got == due


@pytest.mark.parametrize("timeout_s", [0.5, 2.0, 5.0, TIMEOUT_S, 30.0, 120.0])
def test_the_request_deadline_leaves_the_call_time_to_ask_another_node(timeout_s):
    deadline = request_deadline_s(timeout_s)
    assert 0 < deadline <= timeout_s / 2
    assert deadline <= REQUEST_DEADLINE_S


@given(st.floats(min_value=0.01, max_value=3600.0))
def test_the_request_deadline_is_inside_every_budget(timeout_s):
    assert request_deadline_s(timeout_s) <= timeout_s / 2


def test_the_default_deadline_is_well_inside_kafka_python_s_and_the_default_timeout():
    # kafka-python's own request timeout (and ours, before the door held nodes that do not answer) was the whole
    # --timeout, 10 s.
    assert request_deadline_s(TIMEOUT_S) == REQUEST_DEADLINE_S <= TIMEOUT_S / 4


# expected: broker -> (alive, unanswered since, Kafka's own view); unobserved: held as unresponsive, Kafka's alive.
@pytest.mark.parametrize("alive, gone, since, expected, unobserved", [
    pytest.param({1: True, 2: True}, set(), {}, {1: (True, None, True), 2: (True, None, True)}, [], id="none-held"),
    pytest.param({1: True, 2: True}, {2}, {}, {1: (True, None, True), 2: (False, None, True)}, [],
                 id="gone-is-not-alive"),
    pytest.param({1: True, 2: True}, {2}, {2: 7_000}, {1: (True, None, True), 2: (False, 7_000, True)}, [2],
                 id="unresponsive-is-not-alive-since-when-and-unobserved"),
    pytest.param({1: True, 2: False}, {2}, {2: 7_000}, {1: (True, None, True), 2: (False, 7_000, False)}, [],
                 id="fenced-and-unresponsive-keeps-since-when-and-is-not-unobserved"),
    pytest.param({1: True, 2: False}, {2}, {}, {1: (True, None, True), 2: (False, None, False)}, [],
                 id="fenced-and-gone"),
    pytest.param({1: True}, {7}, {7: 7_000}, {1: (True, None, True)}, [], id="unknown-held-node-adds-nothing"),
])
def test_without_gone(alive, gone, since, expected, unobserved):
    rows = without_gone([{"broker": b, "alive": a} for b, a in alive.items()], gone, since)
    assert {r["broker"]: (r["alive"], r["unanswered_since_ms"], r["kafka_alive"]) for r in rows} == expected
    assert unobserved_brokers(rows) == unobserved
    # Applied again (the cluster part's rows, then the whole poll's), Kafka's view stays Kafka's.
    assert without_gone(rows, gone, since) == rows


def moving_to_2(**held):
    """A move of t-0 from broker 1 to broker 2, broker 2 held by the door (`gone` or `unanswered`): Kafka still has
    it registered and unfenced (its session has not timed out yet)."""
    return FakeCluster(partitions={("t", 0): {"replicas": [1, 2], "isr": [1], "leader": 1}},
                       reassigning={("t", 0): ([1, 2], [2])}, sizes={("t", 0, 1): 100, ("t", 0, 2): 40}, **held)


@pytest.mark.parametrize("held, since", [({"gone": {2}}, None), ({"unanswered": {2: 1_700_000_000_000}}, 1_700_000_000_000)],
                         ids=["gone", "unresponsive"])
def test_a_poll_reports_a_held_broker_not_alive_and_since_when(held, since):
    snapshot = poll(moving_to_2(**held), now_ms=1, all_partitions=True)
    assert snapshot.alive_brokers() == {1, 3}
    assert {r["broker"]: r["unanswered_since_ms"] for r in snapshot["brokers"]} == {1: None, 2: since, 3: None}
    assert not snapshot.errors


@pytest.mark.parametrize("held, state", [({"gone": {2}}, ReplicaState.BROKER_OFFLINE),
                                         ({"unanswered": {2: 1_700_000_000_000}}, ReplicaState.UNOBSERVED)],
                         ids=["gone", "unresponsive"])
def test_a_move_to_a_held_broker_kafka_lists_alive_is_offline_when_refused_and_unobserved_when_silent(held, state):
    """A refused connection: nothing listens on the broker's port, it is down whatever Kafka says yet. No answer:
    the job cannot tell, and Kafka lists the broker alive (docs/progress.md "Unobserved replicas")."""
    facts = replica_progress(from_snapshot(poll(moving_to_2(**held), now_ms=1, all_partitions=True)))
    assert [ReplicaState(code) for code in classify(facts)] == [state]


@pytest.mark.parametrize("held", [{"gone": {2}}, {"unanswered": {2: 1_700_000_000_000}}], ids=["gone", "unresponsive"])
def test_a_janitor_read_reports_a_held_broker_not_alive(held):
    # The janitor never removes a rate of a broker that is not alive: its configs were not read.
    assert read_cluster(moving_to_2(**held), ["t"]).alive_brokers() == {1, 3}


def test_a_poll_takes_the_watch_list_instead_of_asking_the_silent_controller():
    """The job's executor, handed the controller's last list while the controller answers nobody
    (streaming.spark.source LISTED): usable, the move's progress computed, counted as a retry of the API."""
    cluster = moving_to_2(fail={"list_reassignments": RuntimeError("the controller does not answer")})
    listed = [{"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []}]
    snapshot = poll(cluster, now_ms=1, all_partitions=True, listed=listed)
    assert not snapshot.errors and snapshot.retries == {LIST_REASSIGNMENTS: 1}
    assert [(r["topic"], r["partition"]) for r in snapshot["reassignments"]] == [("t", 0)]
    assert poll(cluster, now_ms=1, all_partitions=True).errors[0].api == LIST_REASSIGNMENTS  # not handed: failed


class ListingDoor(Door):
    """The door's own `listed_or_last`, without a cluster: `list_reassignments` answers `answers` in turn (an
    exception is raised), the controller held or not as the test sets."""

    def __init__(self, answers):
        self._timeout_s, self._deadline_s = TIMEOUT_S, request_deadline_s(TIMEOUT_S)
        self._held, self._held_lock, self._lock = HeldNodes(TIMEOUT_S, PROBE_S), threading.Lock(), threading.Lock()
        self.retried, self._answers = Counter(), list(answers)
        self._last_listed, self._kafka, self._probing, self._impatient = None, None, None, threading.local()
        self._log = None

    def list_reassignments(self):
        answer = self._answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        with self._held_lock:
            self._last_listed = (time.monotonic(), answer)
        return answer

    def _probe_controller(self):
        pass


SILENT = NodeGone("ListPartitionReassignments: the controller did not answer")
ROWS = [{"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []}]


@pytest.mark.parametrize("controller_held, listed_before, served", [
    pytest.param(True, True, True, id="controller-silent-the-last-list"),
    pytest.param(False, True, False, id="controller-answering-no-last-list"),
    pytest.param(True, False, False, id="never-listed-nothing-to-serve"),
])
def test_listed_or_last(controller_held, listed_before, served):
    door = ListingDoor(([ROWS] if listed_before else []) + [SILENT])
    if listed_before:
        assert door.listed_or_last() == (ROWS, False)
    if controller_held:
        door._held.forwarded_lapsed(2, time.monotonic(), time.time())
    if served:
        assert door.listed_or_last() == (ROWS, True) and door.retried == {LIST_REASSIGNMENTS: 1}
    else:
        with pytest.raises(NodeGone):
            door.listed_or_last()


def test_the_last_list_is_not_served_for_ever():
    door = ListingDoor([ROWS, SILENT])
    door.listed_or_last()
    door._held.forwarded_lapsed(2, time.monotonic(), time.time())
    door._last_listed = (time.monotonic() - LAST_LIST_SERVED_S - 1, ROWS)
    with pytest.raises(NodeGone):
        door.listed_or_last()


@pytest.mark.parametrize("answers_after_s, budget_s, impatient, waits_then", [
    pytest.param(0.3, 3.0, False, "goes on", id="a-controller-that-failed-over-answers-the-probe"),
    pytest.param(None, 0.5, False, "NodeGone", id="a-hung-controller-until-the-call-s-deadline"),
    pytest.param(0.3, 3.0, True, "NodeGone", id="not-waited-for-with-the-last-list-at-hand"),
])
def test_a_controller_bound_call_waits_for_the_probe_within_its_deadline(answers_after_s, budget_s, impatient,
                                                                        waits_then):
    door = ListingDoor([])
    door._held.forwarded_lapsed(2, time.monotonic(), time.time())
    if answers_after_s is not None:  # the probe's answer, as `_probe_controller` reports it
        threading.Timer(answers_after_s, door._answered, (3, True)).start()
    started = time.monotonic()
    with door.impatient() if impatient else contextlib.nullcontext():
        try:
            door._controller_needed(LIST_REASSIGNMENTS, started + budget_s)
            outcome = "goes on"
        except NodeGone:
            outcome = "NodeGone"
    assert outcome == waits_then
    assert time.monotonic() - started <= (0.2 if impatient else budget_s + 0.2)
