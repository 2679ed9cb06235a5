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

Every request counts in `requests` (DescribeLogDirs one per broker); every retried error counts in
`retried[api]`, which the poll reports as a poll error of that API.
"""

import logging
import threading
import time
from collections import Counter

from streaming.cluster.retry import retrying
from streaming.vocabulary import client_config
from streaming.vocabulary.defaults import TIMEOUT_S
from streaming.vocabulary.errors import ClusterError, NotAuthorized, Refused, Unreachable, from_kafka_error
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

    def _retrying(self, api, attempt, doing, needs, drop=None):
        """`attempt()` with retries inside the deadline, errors mapped once and refusals named (`needs`:
        the operation and resource the call needs). `drop` forgets the client the attempt used: before a
        retry when its picture of the cluster is stale, and after a failure, so whatever left it unable to
        answer (a broker paused or gone, connections stuck on it) does not outlive the call."""
        def count(_error, _kind):
            with self._lock:
                self.retried[api] += 1

        try:
            return retrying(attempt, doing or api, self._timeout_s, refresh=drop, on_retry=count)
        except ClusterError as error:
            if drop is not None and isinstance(error, (Unreachable, Refused)):
                drop()
            raise self._named(error, needs) from error.__cause__

    def _call(self, api, work, requests=1, doing=None, needs=None):
        """`work(kafka_python_client)`, through `_retrying`."""
        def attempt():
            self._count(requests)
            return work(self._connect())
        return self._retrying(api, attempt, doing, needs, drop=self._drop)

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

