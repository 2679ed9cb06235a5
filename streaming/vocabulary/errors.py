"""The errors the tool reports, each with its exit code, and the one table that maps both client
libraries' errors onto them.

    MonitorError
    +-- BadInput                 exit 2: the operator's input is wrong (file, flags, unknown ids; AWS
    |                            credentials, profile or region that AWS MSK IAM needs not found)
    +-- ClusterError             exit 3: the cluster is unreachable or refused the request
        +-- Unreachable          no broker answered in time (after retries inside the deadline), or no
        |                        token endpoint or AWS STS
        |   +-- NodeGone         the one node a request needs (or the controller) is held: it did not answer
        +-- AuthenticationFailed SASL credentials or mechanism refused (by a broker, a token endpoint or AWS STS)
        +-- TlsFailed            the TLS handshake failed (CA, certificate, plaintext against TLS)
        +-- NotAuthorized        an ACL refused an operation
        +-- Refused              any other Kafka error on the request (policy, bad request, unknown resource)
        +-- Unsupported          the cluster's Kafka version lacks an API this tool needs
    +-- InternalError            exit 4: a bug, ours or a client library's (a KeyError raised inside
                                 kafka-python is not a refusal): one line ending "run with --debug"
    anything else is a bug too   exit 4, the same line (streaming.cli)

`kind_of(error)` sorts a kafka-python or confluent-kafka error into one of the KINDS below, by Kafka's
protocol error code where the error carries one (both libraries use the same codes) and by the
library's own class or local code otherwise; an error of either library's own classes that the table
does not name is REFUSED, and any other exception (KeyError, AttributeError, ...) is a BUG, whichever
library raised it. `from_kafka_error` turns it into our exception, keeping the cause. Retrying is
streaming.cluster.retry's job; it asks `kind_of` which errors deserve another try and how: after a
pause (RETRY, REFRESH) or at once to another node (GONE).
"""

import re
from contextlib import contextmanager

from streaming.vocabulary.echo import first_line

EXIT_OK = 0
EXIT_IN_PROGRESS = 1
EXIT_BAD_INPUT = 2
EXIT_CLUSTER = 3
EXIT_BUG = 4
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as the shell reports it)
EXIT_READER_GONE = 141  # the reader of stdout went away (`... | head`): 128 + SIGPIPE, as a tool the pipe killed

# What an error means for the caller.
RETRY = "retry"  # transient on the broker's side: try again after a pause
REFRESH = "refresh"  # the client's view of the cluster is stale: rebuild it, then try again
# The node at the other end closed or refused the connection (SIGKILLed, stopped, restarting): it will not
# answer within this call, so waiting on it is pointless. The request goes at once to another live node
# where any node will do, and is answered "did not answer" where it needs that very node.
GONE = "gone"
UNREACHABLE = "unreachable"
AUTHENTICATION = "authentication"
TLS = "tls"
AUTHORIZATION = "authorization"
REFUSED = "refused"
BUG = "bug"  # not an answer of the cluster at all: an exception no client library raises on purpose
KINDS = (RETRY, REFRESH, GONE, UNREACHABLE, AUTHENTICATION, TLS, AUTHORIZATION, REFUSED, BUG)
RETRIABLE_KINDS = frozenset({RETRY, REFRESH, GONE})


class MonitorError(Exception):
    exit_code = EXIT_CLUSTER


class BadInput(MonitorError):
    exit_code = EXIT_BAD_INPUT


class ClusterError(MonitorError):
    exit_code = EXIT_CLUSTER


class Unreachable(ClusterError):
    pass


class NodeGone(Unreachable):
    """The node a request needs (a broker's own log dirs or configs; the controller, for a controller-bound one)
    is held by the door (streaming.cluster.held: its connection was closed or refused, or a request to it lapsed):
    the request was not sent, and the answer is "did not answer"."""


class AuthenticationFailed(ClusterError):
    pass


class TlsFailed(ClusterError):
    pass


class NotAuthorized(ClusterError):
    pass


class Refused(ClusterError):
    pass


class Unsupported(ClusterError):
    """The cluster's Kafka version does not offer an API this tool needs (decided from its ApiVersions)."""


class InternalError(MonitorError):
    """A bug met while talking to the cluster (ours or a client library's): exit 4, not a refusal."""
    exit_code = EXIT_BUG


# Kafka protocol error codes (org.apache.kafka.common.protocol.Errors) whose meaning is not "refused".
PROTOCOL_CODES = {
    3: REFRESH,  # UNKNOWN_TOPIC_OR_PARTITION: also a topic created a moment ago, not yet on every broker
    5: REFRESH,  # LEADER_NOT_AVAILABLE
    6: REFRESH,  # NOT_LEADER_OR_FOLLOWER
    7: RETRY,  # REQUEST_TIMED_OUT
    8: REFRESH,  # BROKER_NOT_AVAILABLE
    9: REFRESH,  # REPLICA_NOT_AVAILABLE
    13: REFRESH,  # NETWORK_EXCEPTION
    14: RETRY,  # COORDINATOR_LOAD_IN_PROGRESS
    15: RETRY,  # COORDINATOR_NOT_AVAILABLE
    16: REFRESH,  # NOT_COORDINATOR
    19: RETRY,  # NOT_ENOUGH_REPLICAS
    20: RETRY,  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    29: AUTHORIZATION,  # TOPIC_AUTHORIZATION_FAILED
    30: AUTHORIZATION,  # GROUP_AUTHORIZATION_FAILED
    31: AUTHORIZATION,  # CLUSTER_AUTHORIZATION_FAILED
    33: AUTHENTICATION,  # UNSUPPORTED_SASL_MECHANISM
    34: AUTHENTICATION,  # ILLEGAL_SASL_STATE
    41: REFRESH,  # NOT_CONTROLLER
    53: AUTHORIZATION,  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    56: REFRESH,  # KAFKA_STORAGE_ERROR
    58: AUTHENTICATION,  # SASL_AUTHENTICATION_FAILED
    72: REFRESH,  # LISTENER_NOT_FOUND
    74: REFRESH,  # FENCED_LEADER_EPOCH
    75: REFRESH,  # UNKNOWN_LEADER_EPOCH
    89: RETRY,  # THROTTLING_QUOTA_EXCEEDED
    100: REFRESH,  # UNKNOWN_TOPIC_ID
    102: REFRESH,  # BROKER_ID_NOT_REGISTERED
}

# AlterPartitionReassignments' per-partition refusals that no retry changes (kafka-python's class names, as
# the door answers them): a plan's partition refused so is FAILED (streaming.control.plans.partition_states); any other refusal
# (a reassignment someone started meanwhile, a timeout) leaves it pending, submitted again later.
FINAL_REASSIGNMENT_REFUSALS = frozenset({
    "InvalidReplicationAssignmentError",  # INVALID_REPLICA_ASSIGNMENT: a target broker is not registered
    "UnknownTopicOrPartitionError",  # the controller, whose metadata is authoritative, has no such partition
})

# kafka-python's own errors (no protocol code): by class name.
KAFKA_PYTHON_LOCAL = {
    "KafkaConnectionError": GONE,  # the connection was closed by the other side or refused
    "NodeNotReadyError": GONE,  # kafka-python holds the node in reconnect backoff after a failed connect
    "StaleMetadata": REFRESH,
    "UnknownBrokerIdError": REFRESH,  # its metadata has not yet seen a broker that came back
    "MetadataEmptyBrokerList": REFRESH,
    "TooManyInFlightRequests": RETRY,
    "Cancelled": RETRY,  # its request died with a client another thread dropped: already rebuilt
    "KafkaTimeoutError": UNREACHABLE,
    "NoBrokersAvailable": UNREACHABLE,
}

# The top-level packages of the client libraries' own exception classes (confluent-kafka's KafkaException and
# KafkaError are defined in its C extension, `cimpl`): an exception of one of them that the tables above do
# not name is a refusal we have no word for; an exception of any other class is a bug (BUG).
CLIENT_LIBRARY_PACKAGES = frozenset({"kafka", "confluent_kafka", "cimpl"})

# librdkafka's local error codes (negative), by name.
CONFLUENT_LOCAL = {
    "_TRANSPORT": REFRESH,
    "_TIMED_OUT": RETRY,
    "_MSG_TIMED_OUT": RETRY,
    "_UNKNOWN_PARTITION": REFRESH,
    "_UNKNOWN_TOPIC": REFRESH,
    "_NOT_IMPLEMENTED": REFUSED,
    "_ALL_BROKERS_DOWN": UNREACHABLE,
    "_RESOLVE": UNREACHABLE,
    "_AUTHENTICATION": AUTHENTICATION,
    "_SSL": TLS,
}

ANSWER_CODE = re.compile(r"\[Error (-?\d+)\]")
UNKNOWN_TOPIC_OR_PARTITION = 3  # Kafka's error code
# IncrementalAlterConfigs' refusal of a topic's configs because the topic was deleted (the door's one line for
# UNKNOWN_TOPIC_OR_PARTITION on a topic resource): its configs went with it, so nothing is left to change.
TOPIC_DELETED = "the topic was deleted, with its configs"
# kafka-python raises a bare RuntimeError when a request is written to a connection the peer closed.
TRANSPORT_CLOSED = "Transport closed"
# kafka-python pauses a connection that has max_in_flight_requests_per_connection requests in flight and fails
# every further send on it at once with NodeNotReadyError("Node paused: {'max_in_flight'}"); the answers in flight
# unpause it. The node is busy, not gone: retried after a pause, on the same node (measured: `execute` against Kafka
# 2.8.2 failed "no live broker took the request" while its DescribeConfigs and the door's probes filled one
# connection).
CONNECTION_PAUSED = "Node paused"

EXCEPTION_OF_KIND = {RETRY: Unreachable, REFRESH: Unreachable, GONE: Unreachable, UNREACHABLE: Unreachable,
                     AUTHENTICATION: AuthenticationFailed, TLS: TlsFailed, AUTHORIZATION: NotAuthorized,
                     REFUSED: Refused, BUG: InternalError}
WHAT_KIND_MEANS = {RETRY: "the cluster kept answering with a transient error",
                   REFRESH: "the cluster kept answering with a transient error",
                   GONE: "no live broker took the request (connections closed or refused)",
                   UNREACHABLE: "cluster unreachable", AUTHENTICATION: "authentication failed",
                   TLS: "TLS handshake failed", AUTHORIZATION: "not authorized", REFUSED: "refused",
                   BUG: "internal error"}
BUG_DETAIL_LIMIT = 300  # characters of a bug's own text in its one line


def _confluent_error(error):
    """The confluent_kafka.KafkaError inside `error`, if it is one or carries one."""
    candidates = [error] + list(getattr(error, "args", ()))[:1]
    for candidate in candidates:
        if hasattr(candidate, "code") and hasattr(candidate, "name") and callable(candidate.code):
            return candidate
    return None


def _of_client_library(error):
    """Whether `error` is one of the client libraries' own exception classes (or derives from one)."""
    return any(cls.__module__.split(".")[0] in CLIENT_LIBRARY_PACKAGES for cls in type(error).__mro__)


def kind_of(error):
    """One of KINDS for any exception met while calling the cluster: a Kafka error by the tables above
    (REFUSED when they do not name it), anything that is not a client library's own error a BUG."""
    if isinstance(error, MonitorError):
        return {Unreachable: UNREACHABLE, NodeGone: UNREACHABLE, AuthenticationFailed: AUTHENTICATION, TlsFailed: TLS,
                NotAuthorized: AUTHORIZATION, InternalError: BUG}.get(type(error), REFUSED)
    confluent = _confluent_error(error)
    if confluent is not None:
        code = confluent.code()
        if code >= 0:
            return PROTOCOL_CODES.get(code, REFUSED)
        return CONFLUENT_LOCAL.get(confluent.name(), RETRY if confluent.retriable() else REFUSED)
    if type(error).__name__ == "NodeNotReadyError" and CONNECTION_PAUSED in str(error):
        return RETRY
    for cls in type(error).__mro__:
        if cls.__name__ in KAFKA_PYTHON_LOCAL:
            return KAFKA_PYTHON_LOCAL[cls.__name__]
    if type(error) is RuntimeError and str(error).startswith(TRANSPORT_CLOSED):
        return GONE
    errno = getattr(error, "errno", None)
    if isinstance(errno, int) and errno > 0 and errno in PROTOCOL_CODES:
        return PROTOCOL_CODES[errno]
    if getattr(error, "invalid_metadata", False):  # kafka-python's own word, for errors the table lacks
        return REFRESH
    if getattr(error, "retriable", False):
        return RETRY
    if isinstance(error, (ConnectionError, TimeoutError)):
        return UNREACHABLE
    return REFUSED if _of_client_library(error) else BUG


def answer_code(text):
    """Kafka's error code in a per-resource answer kafka-python returns as text ("[Error 31] Name: detail")."""
    match = ANSWER_CODE.match(str(text))
    return int(match.group(1)) if match else None


def kind_of_answer(text):
    """The kind of a per-resource answer kafka-python returns as text ("[Error 31] Name: detail")."""
    return PROTOCOL_CODES.get(answer_code(text), REFUSED)


def error_name(error):
    confluent = _confluent_error(error)
    if confluent is not None:
        return confluent.name()
    return type(error).__name__


def brief(error, limit=200):
    """What a library error says, in one short line: its name, and its text when that is not a request dump."""
    name = error_name(error)
    confluent = _confluent_error(error)
    text = confluent.str() if confluent is not None and hasattr(confluent, "str") else str(error)
    text = " ".join(text.split())
    if text.startswith("[Error ") and f"{name}: " in text:  # kafka-python: "[Error 31] Name: detail"
        text = text.split(f"{name}: ", 1)[1]
    if not text or text == name or "Request '" in text or len(text) > limit:
        return name  # kafka-python's detail of a refused request is a dump of the whole request
    return f"{name}: {text}" if name not in text else text


@contextmanager
def reading_input(flag):
    """Whatever goes wrong reading the operator's file named by `flag` becomes one BadInput naming it."""
    try:
        yield
    except OSError as error:
        raise BadInput(f"{flag}: {error.strerror or error}") from error
    except ValueError as error:  # a path with a NUL byte
        raise BadInput(f"{flag}: not a usable path ({error})") from error
    except BadInput as error:
        raise BadInput(f"{flag}: {error}") from error


def bug_line(error):
    """A bug in one line: its type and the first line of its text, bounded (a Java exception's text carries
    the whole stack), ending "run with --debug" (which shows the traceback)."""
    text = first_line(error, BUG_DETAIL_LIMIT)
    return f"{WHAT_KIND_MEANS[BUG]} ({type(error).__name__}{': ' + text if text else ''}); run with --debug"


def from_kafka_error(error, doing):
    """Our exception for a library error raised while `doing` something (its kind decides the class)."""
    if isinstance(error, MonitorError):
        return error
    kind = kind_of(error)
    if kind == BUG:
        return InternalError(f"{doing}: {bug_line(error)}")
    return EXCEPTION_OF_KIND[kind](f"{doing}: {WHAT_KIND_MEANS[kind]} ({brief(error)})")
