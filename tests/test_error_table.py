"""The one error table (streaming.vocabulary.errors) and the retry rule built on it (streaming.cluster.retry), on plain errors
of both client libraries: no cluster, no waiting (the clock and the sleep are arguments)."""

import kafka.errors as kerrors
import pytest
from confluent_kafka import KafkaError, KafkaException

from streaming.vocabulary import errors
from streaming.cluster.retry import RAISE, RETRY_AFTER_PAUSE, RETRY_NOW, next_step, retrying

KIND_CASES = [
    # id, error, kind
    ("kp-not-leader", kerrors.NotLeaderForPartitionError(), errors.REFRESH),
    ("kp-unknown-broker-id", kerrors.UnknownBrokerIdError(3), errors.REFRESH),
    ("kp-not-controller", kerrors.NotControllerError(), errors.REFRESH),
    ("kp-connection-lost", kerrors.KafkaConnectionError(), errors.GONE),
    ("kp-connection-refused", kerrors.KafkaConnectionError("111 ECONNREFUSED"), errors.GONE),
    ("kp-node-not-ready", kerrors.NodeNotReadyError(), errors.GONE),
    ("kp-connection-paused", kerrors.NodeNotReadyError("Node paused: {'max_in_flight'}"), errors.RETRY),
    ("kp-transport-closed", RuntimeError("Transport closed for writes"), errors.GONE),
    ("kp-cancelled-by-a-drop", kerrors.Cancelled(), errors.RETRY),
    ("other-runtime-error", RuntimeError("something else"), errors.BUG),
    ("kp-coordinator-loading", kerrors.CoordinatorLoadInProgressError(), errors.RETRY),
    ("kp-request-timed-out", kerrors.RequestTimedOutError(), errors.RETRY),
    ("kp-bootstrap-timeout", kerrors.KafkaTimeoutError(), errors.UNREACHABLE),
    ("kp-cluster-authorization", kerrors.ClusterAuthorizationFailedError(), errors.AUTHORIZATION),
    ("kp-topic-authorization", kerrors.TopicAuthorizationFailedError(), errors.AUTHORIZATION),
    ("kp-sasl-failed", kerrors.SaslAuthenticationFailedError(), errors.AUTHENTICATION),
    ("kp-policy", kerrors.PolicyViolationError(), errors.REFUSED),
    ("kp-invalid-request", kerrors.InvalidRequestError(), errors.REFUSED),
    ("kp-unknown-topic", kerrors.UnknownTopicOrPartitionError(), errors.REFRESH),
    ("ck-not-leader", KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)), errors.REFRESH),
    ("ck-unknown-partition", KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION)), errors.REFRESH),
    ("ck-transport", KafkaException(KafkaError(KafkaError._TRANSPORT)), errors.REFRESH),
    ("ck-timed-out", KafkaException(KafkaError(KafkaError._TIMED_OUT)), errors.RETRY),
    ("ck-all-brokers-down", KafkaException(KafkaError(KafkaError._ALL_BROKERS_DOWN)), errors.UNREACHABLE),
    ("ck-authentication", KafkaException(KafkaError(KafkaError._AUTHENTICATION)), errors.AUTHENTICATION),
    ("ck-ssl", KafkaException(KafkaError(KafkaError._SSL)), errors.TLS),
    ("ck-topic-authorization", KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), errors.AUTHORIZATION),
    ("ck-delivery-error-object", KafkaError(KafkaError.NOT_ENOUGH_REPLICAS), errors.RETRY),
    ("ck-policy", KafkaException(KafkaError(KafkaError.POLICY_VIOLATION)), errors.REFUSED),
    ("builtin-timeout", TimeoutError("flush"), errors.UNREACHABLE),
    # Not the cluster's answer: a bug, whichever library raised it (kafka-python 3.0.12's describe_cluster raised
    # KeyError 'endpoint_type' against every broker before Kafka 3.7, which was reported as "refused", exit 3).
    ("a-bug", KeyError("endpoint_type"), errors.BUG),
    ("bug-attribute", AttributeError("'NoneType' object has no attribute 'api_versions'"), errors.BUG),
    ("bug-type", TypeError("unsupported operand"), errors.BUG),
    ("bug-index", IndexError("list index out of range"), errors.BUG),
    ("bug-value", ValueError("invalid literal for int()"), errors.BUG),
    # A client library's own error the table does not name is still the cluster's refusal.
    ("kp-incompatible-broker", kerrors.IncompatibleBrokerVersion("no DescribeCluster"), errors.REFUSED),
    ("kp-unknown-error", kerrors.UnknownError(), errors.REFUSED),
    ("kp-illegal-argument", kerrors.IllegalArgumentError("acls"), errors.REFUSED),
    ("ck-unknown-code", KafkaException(KafkaError(KafkaError.UNKNOWN)), errors.REFUSED),
    ("ck-not-implemented", KafkaException(KafkaError(KafkaError._NOT_IMPLEMENTED)), errors.REFUSED),
    ("our-node-gone", errors.NodeGone("DescribeLogDirs: broker 1 did not answer"), errors.UNREACHABLE),
    ("our-unsupported", errors.Unsupported("Kafka 2.4 or newer is needed"), errors.REFUSED),
    ("our-internal-error", errors.InternalError("DescribeCluster: internal error (KeyError)"), errors.BUG),
]


@pytest.mark.parametrize("error, kind", [pytest.param(e, k, id=i) for i, e, k in KIND_CASES])
def test_kind_of(error, kind):
    assert errors.kind_of(error) == kind


@pytest.mark.parametrize("kind, exception", [
    (errors.AUTHORIZATION, errors.NotAuthorized), (errors.AUTHENTICATION, errors.AuthenticationFailed),
    (errors.TLS, errors.TlsFailed), (errors.UNREACHABLE, errors.Unreachable), (errors.REFUSED, errors.Refused)])
def test_every_kind_maps_to_an_exit_3_exception(kind, exception):
    error = next(e for _, e, k in KIND_CASES if k == kind)
    mapped = errors.from_kafka_error(error, "doing it")
    assert type(mapped) is exception and mapped.exit_code == errors.EXIT_CLUSTER
    assert str(mapped).startswith("doing it: ")


@pytest.mark.parametrize("error", [pytest.param(e, id=i) for i, e, k in KIND_CASES if k == errors.BUG
                                   and not isinstance(e, errors.MonitorError)])
def test_a_bug_maps_to_exit_4_naming_the_call_and_the_error(error):
    mapped = errors.from_kafka_error(error, "DescribeCluster")
    assert type(mapped) is errors.InternalError and mapped.exit_code == errors.EXIT_BUG
    assert str(mapped) == f"DescribeCluster: internal error ({type(error).__name__}: {error}); run with --debug"


def test_a_request_dump_is_not_repeated():
    dump = kerrors.ClusterAuthorizationFailedError("Request 'AlterConfigsRequest(...)' failed with response '...'")
    assert str(errors.from_kafka_error(dump, "altering configs")) == \
        "altering configs: not authorized (ClusterAuthorizationFailedError)"


class Clock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def failing(*outcomes):
    """A call that raises each error of `outcomes` in turn, then returns the last non-error."""
    calls = []

    def call():
        outcome = outcomes[len(calls)]
        calls.append(outcome)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome
    return call, calls


RETRY_CASES = [
    # id, outcomes, timeout, expected result or exception type, calls made, refreshes
    ("first-try", ["ok"], 10, "ok", 1, 0),
    ("transient-then-ok", [kerrors.CoordinatorLoadInProgressError(), "ok"], 10, "ok", 2, 0),
    ("stale-refreshes-then-ok", [kerrors.UnknownBrokerIdError(3), kerrors.NotControllerError(), "ok"], 10, "ok", 3, 2),
    ("authorization-at-once", [kerrors.ClusterAuthorizationFailedError(), "ok"], 10, errors.NotAuthorized, 1, 0),
    ("refused-at-once", [kerrors.PolicyViolationError(), "ok"], 10, errors.Refused, 1, 0),
    ("bug-at-once", [KeyError("x"), "ok"], 10, errors.InternalError, 1, 0),
    ("deadline-ends-retries", [kerrors.RequestTimedOutError()] * 20, 1.0, errors.Unreachable, 4, 0),  # 0.1+0.2+0.4 s
    ("cancelled-retried-without-a-drop", [kerrors.Cancelled(), "ok"], 10, "ok", 2, 0),
]


@pytest.mark.parametrize("outcomes, timeout_s, expected, calls_made, refreshes",
                         [pytest.param(*case[1:], id=case[0]) for case in RETRY_CASES])
def test_retrying(outcomes, timeout_s, expected, calls_made, refreshes):
    clock, refreshed = Clock(), []
    call, calls = failing(*outcomes)
    run = lambda: retrying(call, "the call", timeout_s, refresh=lambda: refreshed.append(1),  # noqa: E731
                           clock=clock, sleep=clock.sleep)
    if isinstance(expected, type):
        with pytest.raises(expected):
            run()
    else:
        assert run() == expected
    assert len(calls) == calls_made and len(refreshed) == refreshes
    assert clock.now <= timeout_s  # never sleeps past the deadline


NEXT_STEP_CASES = [
    # id, kind, seconds left, pause, rerouted, an earlier GONE in this call, step
    ("transient-retried-after-pause", errors.RETRY, 5.0, 0.1, False, False, RETRY_AFTER_PAUSE),
    ("stale-retried-after-pause", errors.REFRESH, 5.0, 0.1, False, False, RETRY_AFTER_PAUSE),
    ("transient-pause-past-deadline", errors.RETRY, 0.05, 0.1, False, False, RAISE),
    ("stale-pause-past-deadline", errors.REFRESH, 0.4, 0.8, False, False, RAISE),
    ("closed-first-time-reconnects-now", errors.GONE, 5.0, 0.1, False, False, RETRY_NOW),
    ("closed-rerouted-goes-now", errors.GONE, 5.0, 0.1, True, True, RETRY_NOW),
    ("closed-again-nowhere-else-raises", errors.GONE, 5.0, 0.1, False, True, RAISE),
    ("closed-never-waits-for-a-pause", errors.GONE, 0.05, 1.0, True, True, RETRY_NOW),
    ("closed-past-deadline-raises", errors.GONE, 0.0, 0.1, True, False, RAISE),
    ("unreachable-raises", errors.UNREACHABLE, 5.0, 0.1, False, False, RAISE),
    ("authorization-raises", errors.AUTHORIZATION, 5.0, 0.1, False, False, RAISE),
    ("refused-raises", errors.REFUSED, 5.0, 0.1, True, True, RAISE),
]


@pytest.mark.parametrize("kind, left_s, pause_s, rerouted, gone_before, step",
                         [pytest.param(*case[1:], id=case[0]) for case in NEXT_STEP_CASES])
def test_next_step(kind, left_s, pause_s, rerouted, gone_before, step):
    assert next_step(kind, left_s, pause_s, rerouted, gone_before) == step


CLOSED = kerrors.KafkaConnectionError("111 ECONNREFUSED")
GONE_CASES = [
    # id, outcomes, what reroute() answers in turn (the nodes avoided; None: no node left), expected, calls
    # made, seconds slept
    ("controller-gone-rerouted", [RuntimeError("Transport closed for writes"), CLOSED, "ok"], [set(), {1}], "ok", 3,
     0),
    ("second-node-gone-rerouted-again", [CLOSED, CLOSED, "ok"], [{1}, {1, 2}], "ok", 3, 0),
    ("failing-anew-nowhere-raises", [CLOSED, CLOSED, "ok"], [{1}, {1}], errors.Unreachable, 2, 0),
    ("gone-then-transient", [CLOSED, kerrors.CoordinatorLoadInProgressError(), "ok"], [{1}], "ok", 3, 0.1),
    ("no-node-left-raises", [CLOSED, CLOSED, "ok"], [{1}, None], errors.Unreachable, 2, 0),
    ("nothing-left-at-first-still-reconnects-once", [CLOSED, CLOSED, "ok"], [None, None], errors.Unreachable, 2, 0),
]


@pytest.mark.parametrize("outcomes, reroutes, expected, calls_made, slept_s",
                         [pytest.param(*case[1:], id=case[0]) for case in GONE_CASES])
def test_a_closed_connection_is_never_waited_on(outcomes, reroutes, expected, calls_made, slept_s):
    clock, answers = Clock(), [None if a is None else frozenset(a) for a in reroutes]
    call, calls = failing(*outcomes)

    def run():
        return retrying(call, "the call", 10, reroute=lambda: answers.pop(0), clock=clock, sleep=clock.sleep)
    if isinstance(expected, type):
        with pytest.raises(expected):
            run()
    else:
        assert run() == expected
    assert len(calls) == calls_made and sum(clock.slept) == pytest.approx(slept_s)


# --- through the CLI: what a failing call of the door ends as, per command -----------------------------------------

def _door(fail):
    from tests.fake_cluster import FakeCluster

    return FakeCluster(partitions={("t", 0): {"replicas": [2, 3, 1], "isr": [2, 1], "leader": 2}},
                       reassigning={("t", 0): ([2, 3, 1], [3], [1])}, fail=fail)


BUG = KeyError("endpoint_type")
EXIT_CASES = [
    # id, command and its flags (FILE: a reassignment file moving t-0 to [2, 3]), failing call, its error, exit code
    ("progress-cluster-bug", ("progress",), "describe_cluster", BUG, errors.EXIT_BUG),
    ("progress-list-bug", ("progress",), "list_reassignments", BUG, errors.EXIT_BUG),
    ("progress-metadata-bug", ("progress", "--output", "json"), "describe_partitions", AttributeError("x"), errors.EXIT_BUG),
    ("progress-cluster-refused", ("progress",), "describe_cluster", kerrors.ClusterAuthorizationFailedError(),
     errors.EXIT_CLUSTER),
    ("progress-cluster-unreachable", ("progress",), "describe_cluster", kerrors.KafkaTimeoutError(), errors.EXIT_CLUSTER),
    ("progress-list-refused", ("progress",), "list_reassignments", kerrors.PolicyViolationError(), errors.EXIT_CLUSTER),
    ("progress-list-unsupported", ("progress",), "list_reassignments",
     kerrors.IncompatibleBrokerVersion("ListPartitionReassignments"), errors.EXIT_CLUSTER),
    ("verify-configs-bug", ("verify", "--reassignment-json-file", "FILE"), "describe_throttles", BUG, errors.EXIT_BUG),
    ("verify-configs-refused", ("verify", "--reassignment-json-file", "FILE"), "describe_throttles",
     kerrors.ClusterAuthorizationFailedError(), errors.EXIT_CLUSTER),
    ("execute-configs-bug", ("execute", "--reassignment-json-file", "FILE", "--throttle", "1000"), "describe_throttles",
     BUG, errors.EXIT_BUG),
    ("execute-cluster-refused", ("execute", "--reassignment-json-file", "FILE", "--throttle", "1000"),
     "describe_cluster", kerrors.ClusterAuthorizationFailedError(), errors.EXIT_CLUSTER),
    ("cancel-list-bug", ("cancel", "--all"), "list_reassignments", BUG, errors.EXIT_BUG),
    ("cancel-list-refused", ("cancel", "--all"), "list_reassignments", kerrors.PolicyViolationError(),
     errors.EXIT_CLUSTER),
    # Bad input stays bad input, whatever the cluster would have said.
    ("execute-bad-throttle", ("execute", "--reassignment-json-file", "FILE", "--throttle", "0"), "describe_cluster",
     BUG, errors.EXIT_BAD_INPUT),
]


@pytest.mark.parametrize("argv, failing, error, code", [pytest.param(*case[1:], id=case[0]) for case in EXIT_CASES])
def test_a_failing_call_ends_each_command_with_its_exit_code_and_changes_nothing(argv, failing, error, code, tmp_path):
    from tests.cluster_cli import cli, write_plan

    plan = write_plan(tmp_path / "move.json", [("t", 0, [2, 3])])
    admin = _door({failing: error})
    got, out, err = cli(*[plan if a == "FILE" else a for a in argv], "--bootstrap-server", "127.0.0.1:1",
                        connect=lambda _args: admin)
    assert got == code, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert (code == errors.EXIT_BUG) == err.rstrip().endswith("run with --debug"), err
    assert admin.alters == [] and admin.cancels == [] and admin.starts == []
