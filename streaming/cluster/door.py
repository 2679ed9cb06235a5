"""The clients behind the cluster door and the one path every call takes: connect (and say why a first
connection failed), count requests, retry within the deadline, drop a client whose picture of the cluster
is stale or that failed, and name what a refused principal lacks. The calls themselves are in
streaming.cluster.reads, .writes and .own_topics; streaming.cluster.admin puts them together.

Every call runs through streaming.cluster.retry with the error table of streaming.vocabulary.errors: transient errors are
retried inside the call's deadline (`timeout_s`); errors meaning the client's picture of the cluster is
stale (a broker that left and came back, a controller that moved) drop the kafka-python client, and the
retry bootstraps a fresh one. A long-lived kafka-python client otherwise keeps stale metadata until its
periodic refresh and pins controller-bound requests to one cached broker: measured on a real cluster,
polls failed for minutes after a broker bounce. What a call still cannot do is raised as our exception.

A node whose connection the other side closed or refused (SIGKILLed, stopped, restarting) is not waited
on: every request kafka-python sends passes through the door's `_routed` send, which holds such a node as
gone (streaming.cluster.gone) the moment a request to it fails that way, and sends it nothing for one
deadline. A request any node can serve goes to a live one; controller-bound requests (kafka-python pins
them to a cached node id) are steered to a live broker, which under KRaft forwards them to the active
controller; a request for that very node's own facts (its log dirs, its configs) is answered "did not
answer" at once (NodeGone), and DescribeCluster reports the node not alive, so the poll shows its replicas
BROKER_OFFLINE. Without this rule the poll after a SIGKILL of the active controller waited out --timeout on the
dead node and failed (bench/RESULTS.md "Poll after a SIGKILL").

Every request counts in `requests` (DescribeLogDirs one per broker); every retried error counts in
`retried[api]`, which the poll reports as a poll error of that API.
"""

import logging
import threading
import time
from collections import Counter

from streaming.cluster.gone import GoneNodes
from streaming.cluster.retry import retrying
from streaming.vocabulary import client_config
from streaming.vocabulary.defaults import TIMEOUT_S
from streaming.vocabulary.errors import (GONE, ClusterError, NodeGone, NotAuthorized, Refused, Unreachable,
                                         from_kafka_error, kind_of)
from streaming.vocabulary.kafka_apis import METADATA

# The first bootstrap gets this share of --timeout; the rest is for saying why it failed.
BOOTSTRAP_SHARE = 0.7
MIN_DIAGNOSIS_S = 1.0

# librdkafka logs through this logger instead of stderr (log_level 0 still lets its FATAL lines through):
# the operator sees each failure once, as our one-line error.
QUIET_LIBRDKAFKA = logging.getLogger("reassign-monitor.librdkafka")
QUIET_LIBRDKAFKA.addHandler(logging.NullHandler())
QUIET_LIBRDKAFKA.propagate = False


def config_acl_resource(is_broker, name):
    """The ACL resource a config authorizes on: broker configs on the Cluster, a topic's on the topic."""
    return "Cluster" if is_broker else f"Topic {name}"


class Door:
    """The clients (kafka-python, and confluent-kafka's admin client, producer and a reader, each made on
    first use) and the call path. Construction reads the command config once and bootstraps (bounded by
    `timeout_s`)."""

    def __init__(self, bootstrap_servers, command_config=None, timeout_s=TIMEOUT_S):
        self._bootstrap = bootstrap_servers
        self._config = client_config.read_config(command_config)
        self._settings = client_config.kafka_python_settings(self._config)
        self._principal = client_config.principal_of(self._config)
        self._confluent_settings = client_config.confluent_settings(self._config, bootstrap_servers)
        self._timeout_s = timeout_s
        self.requests = 0
        self.retried = Counter()
        self._lock = threading.Lock()  # the poller calls from several threads
        # One read of our own topics at a time: the driver's watch (ownership, plans) and the batch's janitor
        # read from two threads through the one reader, a KafkaConsumer, which is not thread-safe (two polls at
        # once failed with "generator already executing" and left the watch unable to read).
        self._reading = threading.Lock()
        self._gone = GoneNodes(hold_s=timeout_s)
        self._kafka = None
        self._confluent = None
        self._producer = None
        self._fatal = None
        self._reader = None
        self._first_connect()

    def _connect(self, budget_s=None):
        """The kafka-python client, bootstrapped now if there is none (after a drop), within `budget_s`
        (default: the whole timeout)."""
        from kafka import KafkaAdminClient

        with self._lock:
            if self._kafka is None:
                self._kafka = KafkaAdminClient(
                    bootstrap_servers=self._bootstrap, client_id="reassign-monitor",
                    bootstrap_timeout_ms=int((budget_s or self._timeout_s) * 1000),
                    request_timeout_ms=int(self._timeout_s * 1000), **self._settings)
                self._route_sends(self._kafka._manager)
            return self._kafka

    def _first_connect(self):
        """The first bootstrap, which tells the operator why it failed, all within the timeout. kafka-python
        reports refused credentials, a failed TLS handshake and plaintext spoken to TLS alike, as a
        bootstrap timeout: the part of the timeout it leaves goes to streaming.cluster.connect_diagnosis, which
        asks again in ways that tell them apart (in well under a second when it can)."""
        from streaming.cluster.connect_diagnosis import diagnose

        started = time.monotonic()
        try:
            self._connect(budget_s=self._timeout_s * BOOTSTRAP_SHARE)
        except Exception as error:
            left = max(self._timeout_s - (time.monotonic() - started), MIN_DIAGNOSIS_S)
            raise (diagnose(self._bootstrap, self._config, left)
                   or from_kafka_error(error, f"connecting to {self._bootstrap}")) from error

    def _forget(self, client):
        """Drop the client held in attribute `client`; the next call makes a new one."""
        with self._lock:
            stale = getattr(self, client)
            setattr(self, client, None)
        if stale is not None:
            try:
                stale.close()
            except Exception:  # a client that lost its brokers may fail to close; it is dropped either way
                pass

    def _drop(self):
        """Forget the kafka-python client: its metadata is stale. The next call bootstraps afresh."""
        self._forget("_kafka")

    def unanswering(self):
        """The nodes held as gone now: their connection was closed or refused within the last deadline."""
        with self._lock:
            return self._gone.held(time.monotonic())

    def _needed(self, node, api):
        """`node`, for a request only that node can answer; NodeGone at once when it is held as gone."""
        if node in self.unanswering():
            raise NodeGone(f"{api}: broker {node} did not answer (its connection was closed or refused)")
        return node

    def _route_sends(self, manager):
        """Every request of this kafka-python client goes through its connection manager's `send` (the
        admin calls, kafka-python's own Metadata refreshes, our ListOffsets and DescribeConfigs): route them
        all through `_routed`."""
        send = manager.send

        def routed(request, node_id=None, request_timeout_ms=None):
            return self._routed(manager, send, request, node_id, request_timeout_ms)
        manager.send = routed

    def _routed(self, manager, send, request, node_id, request_timeout_ms):
        """`send`, never to a node held as gone: a request for any node (node_id None) goes to a live one,
        one pinned to a gone node fails at once without a connection attempt (a host that is down may take
        kafka-python's whole connect timeout to refuse). A node whose connection is closed or refused is held
        as gone before the caller sees the error, so its retry goes elsewhere."""
        from kafka.errors import NodeNotReadyError
        from kafka.future import Future

        if node_id is None:
            node_id = self._live_node(manager)
        elif node_id in self.unanswering():
            return Future().failure(NodeNotReadyError(f"node {node_id} is held as gone"))
        future = send(request, node_id, request_timeout_ms)
        if node_id is not None:
            future.add_errback(self._hold_if_gone, node_id)
        return future

    def _live_node(self, manager):
        """kafka-python's least loaded node unless it is held as gone, else a live one (None: none known)."""
        gone = self.unanswering()
        node = manager.least_loaded_node()
        if node in gone:
            node = next((b.node_id for b in manager.cluster.brokers() if b.node_id not in gone), None)
        return node

    def _hold_if_gone(self, node, error):
        if kind_of(error) == GONE:
            with self._lock:
                self._gone.mark({node}, time.monotonic())

    def _reroute(self):
        """After a closed or refused connection (its node now held as gone): the nodes a retry avoids, or
        None when no node the client knows is left to ask (streaming.cluster.retry)."""
        kafka = self._kafka
        gone = self.unanswering()
        if kafka is None or all(b.node_id in gone for b in kafka._manager.cluster.brokers()):
            return None
        return gone

    def _steer(self, kafka):
        """kafka-python sends controller-bound requests (ListPartitionReassignments, AlterPartitionReassignments,
        CreateTopics) to the node id it cached, asking Metadata for one when it has none: under KRaft that is
        a random broker Kafka still lists, the dead one included until it is fenced. Any broker forwards
        them to the active controller, so they go to a live one (kafka-python still follows NOT_CONTROLLER)."""
        if kafka._controller_id is None or kafka._controller_id in self.unanswering():
            kafka._controller_id = self._live_node(kafka._manager)
        return kafka

    def _confluent_admin(self):
        from confluent_kafka.admin import AdminClient

        with self._lock:
            if self._confluent is None:
                # A quiet logger: librdkafka would print connection failures (a stopped broker) to stderr
                # on its own; a failed call surfaces here as an exception, reported once with the poll.
                self._confluent = AdminClient({**self._confluent_settings, "logger": QUIET_LIBRDKAFKA})
            return self._confluent

    def _count(self, requests=1):
        with self._lock:
            self.requests += requests

    def _lacks(self, operation, resource):
        """Who lacks what, as every refusal by the authorizer says it."""
        return f"{self._principal or 'this client principal'} lacks {operation} on {resource}"

    def _named(self, error, needs):
        """A refusal by the authorizer, naming who lacks which operation on what (`needs`)."""
        if isinstance(error, NotAuthorized) and needs is not None:
            return NotAuthorized(f"{error}: {self._lacks(*needs)}")
        return error

    def _retrying(self, api, attempt, doing, needs, drop=None, reroute=None):
        """`attempt()` with retries inside the deadline, errors mapped once and refusals named (`needs`:
        the operation and resource the call needs). `drop` forgets the client the attempt used: before a
        retry when its picture of the cluster is stale, and after a failure, so whatever left it unable to
        answer (a broker paused, connections stuck on it) does not outlive the call; not after a request
        for a gone node's own facts, which sent nothing (dropping would cancel other threads' requests).
        `reroute`: see streaming.cluster.retry."""
        def count(_error, _kind):
            with self._lock:
                self.retried[api] += 1

        try:
            return retrying(attempt, doing or api, self._timeout_s, refresh=drop, reroute=reroute, on_retry=count)
        except ClusterError as error:
            if drop is not None and isinstance(error, (Unreachable, Refused)) and not isinstance(error, NodeGone):
                drop()
            raise self._named(error, needs) from error.__cause__

    def _call(self, api, work, requests=1, doing=None, needs=None):
        """`work(kafka_python_client)`, through `_retrying`."""
        def attempt():
            self._count(requests)
            return work(self._steer(self._connect()))
        return self._retrying(api, attempt, doing, needs, drop=self._drop, reroute=self._reroute)

    def _confluent_call(self, api, work, doing=None, needs=None):
        """`work(confluent_admin_client)`, through `_retrying` (librdkafka reconnects by itself)."""
        def attempt():
            self._count()
            return work(self._confluent_admin())
        return self._retrying(api, attempt, doing, needs)

    def _metadata(self):
        """Metadata of every topic, through librdkafka (it decodes in C)."""
        return self._confluent_call(METADATA, lambda admin: admin.list_topics(timeout=self._timeout_s))

    def close(self):
        self._forget("_reader")
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(self._timeout_s)
        self._drop()

