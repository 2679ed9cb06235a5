"""`run --throttle auto` around the decision (sinks.throttles.steer) on the in-memory cluster: which rates are
steered, the signals, the claims following the rate, the records; and the guard (sinks.throttles.guard)
against a real HTTP server answering the Prometheus query API."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema
import pytest

from sinks.records import SCHEMA_PATH
from sinks.throttles import steer
from sinks.throttles.guard import PrometheusGuard
from sinks.throttles.ownership import STARTED, MemoryStore, Move, Ownership, RateClaim, Steering
from tests.fake_cluster import FakeCluster
from tests.test_throttle_ownership import World

MB = 1_000_000
L, F = "leader", "follower"
SCHEMA = json.loads(SCHEMA_PATH.read_text())
AUTO = Steering(MB, 8 * MB)


# Brokers of a FALLING_BEHIND move (streaming.spark.outputs.BatchOutput.falling_behind_brokers): into 2, led by 1.
BEHIND = {1, 2}


def moving_cluster(rate=MB, extra_rates=None):
    cluster = FakeCluster(partitions={("t", 0): {"replicas": [2, 1], "isr": [1], "leader": 1},
                                      ("u", 0): {"replicas": [1, 3], "isr": [1, 3], "leader": 1}},
                          rates={(1, L): rate, (1, F): rate, (2, L): rate, (2, F): rate, **(extra_rates or {})})
    cluster.reassigning[("t", 0)] = ((2, 1), (2,), (1,))
    return cluster


def record(rid="A", steering=AUTO, rate=MB, prior=None, created=1):
    return Ownership(rid, STARTED, created, created, moves=(Move("t", 0, (1,), (2,)),), steering=steering,
                     rates=tuple(RateClaim(b, k, rate, prior) for b in (1, 2) for k in (L, F)))


def steerer(cluster, store, guard=None, now=[1000.0]):
    return steer.Steerer(cluster, store, Steering(MB, 100 * MB), interval_s=0, guard=guard, clock=lambda: now[0],
                         readback_timeout_s=0.5, log=lambda line: None)


def snapshot(cluster):
    snap = cluster.snapshot()
    snap.tables["partitions"] = cluster.describe_partitions(None)
    return snap


def test_falling_behind_raises_owned_auto_rates_and_the_claims_follow():
    cluster, store = moving_cluster(), MemoryStore.of(record())
    outputs = steerer(cluster, store).on_batch(snapshot(cluster), BEHIND, frozenset(), 7)
    assert {(a.action.name, a.action.kind, a.action.action, a.action.signal) for a in outputs} == {
        (str(b), k, "raised", "falling_behind") for b in (1, 2) for k in (L, F)}
    assert cluster.rates == {(b, k): 2 * MB for b in (1, 2) for k in (L, F)}
    [updated] = store.records()
    assert {(c.rate, c.prior) for c in updated.rates} == {(2 * MB, None)}  # the prior stays for the janitor
    for output in outputs:
        jsonschema.validate(output.value, SCHEMA)
        assert output.value["throttle"]["new_value"] == str(2 * MB) and output.value["throttle"]["value"] == str(MB)


def test_the_records_bounds_narrow_the_jobs():
    cluster, store = moving_cluster(rate=6 * MB), MemoryStore.of(record(rate=6 * MB))
    steerer(cluster, store).on_batch(snapshot(cluster), BEHIND, frozenset(), 1)
    assert set(cluster.rates.values()) == {8 * MB}  # the job allows 100 MB, the request 8 MB


@pytest.mark.parametrize("owner", [
    pytest.param(record(steering=None), id="fixed-throttle-request"),
    pytest.param(record(rate=3 * MB), id="value-not-ours-any-more"),
])
def test_rates_it_does_not_steer_are_never_changed(owner):
    cluster, store = moving_cluster(), MemoryStore.of(owner)
    assert steerer(cluster, store).on_batch(snapshot(cluster), BEHIND, frozenset(), 1) == []
    assert cluster.alters == []


def test_a_broker_no_move_uses_is_left_to_the_janitor():
    cluster, store = moving_cluster(), MemoryStore.of(record())
    cluster.reassigning.clear()
    assert steerer(cluster, store).on_batch(snapshot(cluster), BEHIND, frozenset(), 1) == []


@pytest.mark.parametrize("change, why", [
    pytest.param(lambda c: c.partitions[("u", 0)].update(isr=[1]), "u-0 (not moving) has 1 of 2", id="isr-shrink"),
    pytest.param(lambda c: None, "guard", id="guard-fires"),
])
def test_stress_cuts_the_rates(change, why):
    cluster, store = moving_cluster(rate=4 * MB), MemoryStore.of(record(rate=4 * MB))
    change(cluster)
    outputs = steerer(cluster, store, guard=lambda: "guard 'x' returned 1 series").on_batch(
        snapshot(cluster), BEHIND, frozenset(), 1)
    assert {a.action.action for a in outputs} == {"lowered"} and set(cluster.rates.values()) == {2 * MB}
    assert all(why in a.action.reason for a in outputs)


def test_a_binding_throttle_is_raised_additively_and_a_slack_one_is_not():
    cluster, store = moving_cluster(), MemoryStore.of(record())
    steerer(cluster, store).on_batch(snapshot(cluster), set(), frozenset(), 1)
    assert cluster.alters == []
    steerer(cluster, store).on_batch(snapshot(cluster), set(), frozenset({1, 2}), 2)
    assert set(cluster.rates.values()) == {MB + 700_000}  # a tenth of the request's span (1 MB .. 8 MB)


def test_completion_after_steering_restores_the_operators_value():
    """Part 1 still holds with steering: the rate was raised twice; at completion the prior returns."""
    world = World()
    world.cluster.rates[(1, L)] = 5 * MB
    world.execute(0, 1, 2, MB)
    store = world.store
    [rec] = store.records()
    store.put(Ownership(rec.request_id, rec.state, rec.created_ms, rec.updated_ms, moves=rec.moves,
                        entries=rec.entries, rates=rec.rates, steering=AUTO))
    world.cluster.partitions[("t", 0)] = {"replicas": [2, 1], "isr": [1], "leader": 1}
    auto = steerer(world.cluster, store)
    for batch in (1, 2):
        auto.on_batch(snapshot(world.cluster), BEHIND, frozenset(), batch)
    assert world.cluster.rates[(1, L)] == 4 * MB
    world.complete(0)
    world.settle()
    assert world.cluster.rates == {(1, L): 5 * MB}


# ---- the guard against a real HTTP server speaking the Prometheus query API ----

class _Prometheus(BaseHTTPRequestHandler):
    answer = (200, {"status": "success", "data": {"resultType": "vector", "result": []}})
    queries = []

    def do_GET(self):
        type(self).queries.append(self.path)
        code, body = type(self).answer
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def prometheus():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, _Prometheus
    server.shutdown()
    server.server_close()


FIRING = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "0.7"]}]}}


@pytest.mark.parametrize("answer, expected", [
    pytest.param((200, {"status": "success", "data": {"resultType": "vector", "result": []}}), None, id="empty-is-calm"),
    pytest.param((200, FIRING), "returned 1 series", id="a-result-is-stress"),
    pytest.param((400, {"status": "error", "error": "parse error"}), "could not be evaluated: HTTP 400", id="bad-query"),
    pytest.param((200, {"status": "error", "error": "timeout"}), "could not be evaluated", id="error-status"),
])
def test_guard(prometheus, answer, expected):
    server, handler = prometheus
    handler.answer = answer
    outcome = PrometheusGuard(f"http://127.0.0.1:{server.server_port}", 'histogram_quantile(0.99, x) > 0.5')()
    assert (outcome is None) if expected is None else (expected in outcome)
    assert handler.queries[-1].startswith("/api/v1/query?query=histogram_quantile")


def test_guard_unreachable_is_stress():
    assert "could not be evaluated" in PrometheusGuard("http://127.0.0.1:1", "up", timeout_s=2)()


def test_the_record_schema_names_every_signal_and_action_once_defined():
    from sinks.metric_names import THROTTLE_ACTION_NAMES
    from sinks.throttles.autothrottle import SIGNALS

    throttle = SCHEMA["properties"]["throttle"]["properties"]
    assert throttle["signal"]["enum"] == list(SIGNALS)
    assert throttle["action"]["enum"] == list(THROTTLE_ACTION_NAMES)
