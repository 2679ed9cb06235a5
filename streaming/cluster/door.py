"""The clients behind the cluster door and the one path every call takes: connect (and say why a first
connection failed), count requests, retry within the deadline, drop a client whose picture of the cluster
is stale or that failed, and name what a refused principal lacks. The calls themselves are in
streaming.cluster.reads and .own_topics (the reader, put together in streaming.cluster.admin) and .writes (the
writer over the same clients, which only the applier obtains).

Every call runs through streaming.cluster.retry with the error table of streaming.vocabulary.errors: transient errors are
retried inside the call's deadline (`timeout_s`); errors meaning the client's picture of the cluster is
stale (a broker that left and came back, a controller that moved) drop the kafka-python client, and the
retry bootstraps a fresh one. A long-lived kafka-python client otherwise keeps stale metadata until its
periodic refresh and pins controller-bound requests to one cached broker: measured on a real cluster,
polls failed for minutes after a broker bounce. What a call still cannot do is raised as our exception.

A node that does not answer is not waited on. Every request kafka-python sends passes through the door's
`_routed` send, and every request has a deadline (streaming.vocabulary.defaults.REQUEST_DEADLINE_S, at most
half of --timeout: kafka-python's request timeout, and its connections' set-up, a bootstrap's included
(streaming.cluster.connecting); librdkafka's socket timeouts for the producer), not a client's own 10 s or more.
The node a request went to is held (streaming.cluster.held) when its connection was closed or refused (GONE:
SIGKILLed, restarting; held for one --timeout) or when the request lapsed with the connection open (UNRESPONSIVE:
SIGSTOP, a long GC pause, a stuck disk; held until it answers a probe the door keeps in flight to it). A held node is sent nothing. A request any node can serve goes to a live
one; controller-bound requests (kafka-python pins them to a cached node id) are steered to a live broker, which
under KRaft forwards them to the active controller; a request for that very node's own facts (its log dirs, its
configs) is answered "did not answer" at once (NodeGone), and DescribeCluster reports the node not alive (the
poll adds since when an unresponsive one has not answered, and Kafka's own view), so the poll shows its replicas
BROKER_OFFLINE, or UNOBSERVED while Kafka lists it alive, and every other replica keeps updating.
A node is marked only for what a request sent to it met. A forwarded request's lapse holds the path to the
controller (every controller-bound call then fails at once; `listed_or_last` answers the last list) and makes
the broker a suspect, held only if a probe of its own lapses too; a request that failed
because the door itself closed its client (a stale client dropped by another thread: kafka-python then fails a
connection still being set up with a "connection closed" error, the likely way a broker was held for
broker 3's silence) or collateral to another request's lapse on the same connection marks nobody. Metadata goes
the same way (streaming.cluster.metadata says why not through librdkafka). A new client bootstraps from the
addresses of nodes that are not held (if any are left): one it picks that does not answer costs it a deadline.
Without this rule the poll after a SIGKILL of the active controller waited out --timeout on the dead node and
failed (bench/RESULTS.md "Poll after a SIGKILL"), and during a 40 s SIGSTOP of a broker every poll waited
kafka-python's 10 s (bench/RESULTS.md "Polls while a node hangs").

A kafka-python client is shared by the driver's threads (the controller's ticks and looks, its own polls, the batch
handler's reads): one that a request drops (stale, or failed) is retired, not closed, while another request still
uses it, and closed when the last one ended (`_using`); closed under a request, it failed that request with
"NetworkSelector closed!" (seen after a killed broker came back).

Every request counts in `requests` (DescribeLogDirs one per broker); every retried error counts in
`retried[api]`, which the poll reports as a poll error of that API.
"""

import contextlib
import logging
import threading
import time
from collections import Counter, deque

from streaming.cluster import acls, held, kerberos, oauth
from streaming.cluster.connecting import bounded_client
from streaming.cluster.held import HeldNodes
from streaming.cluster.metadata import from_response
from streaming.cluster.retry import retrying
from streaming.cluster.token_source import token_source
from streaming.vocabulary import client_config
from streaming.vocabulary.defaults import TIMEOUT_S, request_deadline_s
from streaming.vocabulary.durations import utc_clock
from streaming.vocabulary.errors import (GONE, ClusterError, NodeGone, NotAuthorized, Refused, Unreachable,
                                         from_kafka_error, kind_of)
from streaming.vocabulary.kafka_apis import ALTER_CONFIGS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS, METADATA

# The first bootstrap gets this share of --timeout; the rest is for saying why it failed.
BOOTSTRAP_SHARE = 0.7
MIN_DIAGNOSIS_S = 1.0

# librdkafka logs through this logger instead of stderr (log_level 0 still lets its FATAL lines through):
# the operator sees each failure once, as our one-line error.
QUIET_LIBRDKAFKA = logging.getLogger("reassign-monitor.librdkafka")
QUIET_LIBRDKAFKA.addHandler(logging.NullHandler())
QUIET_LIBRDKAFKA.propagate = False

# An unresponsive node is probed at most this often (each probe lasts at most one request deadline).
PROBE_EVERY_S = 0.5
# kafka-python waits this long at most before connecting again to a node whose connection failed (its default
# grows to 30 s): a node held as unresponsive for 40 s would otherwise be probed again only that much later.
RECONNECT_BACKOFF_MAX_MS = 1000
# The lines the door logs when it holds a node and when the node answers again (the job's log; tests read them):
# "reassign-monitor: door: broker 3 held as unresponsive (no answer within 2.5 s since 12:00:01 UTC)".
LOG_PREFIX = "reassign-monitor: door: "
HELD_AS = " held as "
ANSWERS_AGAIN = " answers again"
# The requests a KRaft broker forwards to the active controller, by our API names (= kafka-python's request class
# names without "Request"): a lapse of one holds the path to the controller, not the broker (streaming.cluster.held).
CONTROLLER_BOUND = frozenset({LIST_REASSIGNMENTS, ALTER_REASSIGNMENTS, ALTER_CONFIGS})
# While the controller does not answer, `listed_or_last` answers the last list this door got, for at most this
# long after it was answered.
LAST_LIST_SERVED_S = 120.0
# A controller-bound call waiting for the controller's probe looks again this often.
CONTROLLER_WAIT_STEP_S = 0.1
# The controller's probe lists the reassignments of this topic's partition 0: a name no topic has, so the answer is
# empty (a list of no topic at all is answered by the broker without asking the controller: measured).
CONTROLLER_PROBE_TOPIC = "reassign-monitor-controller-probe"


def _close_quietly(client):
    if client is not None:
        try:
            client.close()
        except Exception:  # a client that lost its brokers may fail to close; it is dropped either way
            pass


def close_within(client, timeout_s):
    """Close a kafka-python producer, sending what is pending within `timeout_s`, quietly (as _close_quietly)."""
    if client is not None:
        try:
            client.close(timeout=timeout_s)
        except Exception:  # a client that failed may fail to close; it is dropped either way
            pass


def config_acl_resource(is_broker, name):
    """The ACL resource a config authorizes on: broker configs on the Cluster, a topic's on the topic."""
    return "Cluster" if is_broker else f"Topic {name}"


# kafka-python's word for a connect that got no answer at all (kafka/net/inet.py): packets to the node are dropped
# on the way, or the host does not answer; a process that is gone refuses the connect at once.
CONNECT_TIMED_OUT = "Connection timed out"


def connect_timed_out(error):
    from kafka.errors import KafkaConnectionError

    return isinstance(error, KafkaConnectionError) and CONNECT_TIMED_OUT in str(error)


def failure_hold(error, closed_by_door, collateral=False):
    """The hold a failed request puts on the node it was sent to: held.UNRESPONSIVE for a lapse (kafka-python's
    own RequestTimedOutError, raised when the deadline passed with the connection open; an answer carrying Kafka's
    REQUEST_TIMED_OUT never fails the send) and for a connect that timed out (nothing answered it: the node may well
    be alive, as Kafka may still see it, only not reachable from here), held.GONE for a connection closed or
    refused, None for anything
    else - NodeNotReadyError included: kafka-python raises it for a node in its reconnect backoff (the failed
    connect before it held the node already) or for a connection it paused itself (a full write buffer). None for everything when the door had closed that client itself (`closed_by_door`: a stale client
    dropped by another thread), and for a lapse that is `collateral`: kafka-python closes a connection when one
    request on it lapses and fails every request in flight on it with that same error, and a broker answers the
    requests of one connection in order, so the later ones waited on the first (a request it forwarded to a
    controller that does not answer, say), not on the node."""
    from kafka.errors import NodeNotReadyError, RequestTimedOutError

    if closed_by_door:
        return None
    if isinstance(error, RequestTimedOutError):
        return None if collateral else held.UNRESPONSIVE
    if isinstance(error, NodeNotReadyError):
        return None
    if connect_timed_out(error):
        return held.UNRESPONSIVE
    return held.GONE if kind_of(error) == GONE else None


def _error_text(error):
    """The error's class and message once (kafka-python's messages start with the class's name)."""
    name, text = type(error).__name__, str(error)
    return text if text.startswith(name) else f"{name}: {text}" if text else name


class Door:
    """The clients (kafka-python, and confluent-kafka's admin client, producer and a reader, each made on
    first use; with GSSAPI, which librdkafka cannot speak here, kafka-python's in their place) and the call path.
    Construction reads the command config once, logs in (OAUTHBEARER's first token, Kerberos tickets) and bootstraps
    (bounded by `timeout_s`). `log(line)`: where the door says which node it holds and when it answers again (None:
    nowhere; the job logs them). `deadline_s`: each request's deadline, when not request_deadline_s(timeout_s) (the
    batches' polls: streaming.vocabulary.defaults.poll_request_deadline_s)."""

    def __init__(self, bootstrap_servers, command_config=None, timeout_s=TIMEOUT_S, log=None, deadline_s=None):
        self._bootstrap = bootstrap_servers
        self._config = client_config.read_config(command_config)
        # OAUTHBEARER and AWS MSK IAM: one token source for both libraries (streaming.cluster.token_source); its first
        # token is fetched before the first bootstrap, so a refused or unreachable token endpoint, or AWS credentials
        # not found, are said as such.
        self._tokens = token_source(self._config, bootstrap_servers, timeout_s)
        self._settings = {**client_config.kafka_python_settings(self._config),
                          **(oauth.kafka_python_settings(self._tokens) if self._tokens else {})}
        self._confluent_settings = {**client_config.confluent_settings(self._config, bootstrap_servers),
                                    **(oauth.confluent_settings(self._tokens) if self._tokens else {})}
        self._timeout_s = timeout_s
        self._deadline_s = request_deadline_s(timeout_s) if deadline_s is None else deadline_s
        self._log = log
        self.requests = 0
        self.retried = Counter()
        self._lock = threading.Lock()  # the poller calls from several threads
        # One read of our own topics at a time: the controller (ownership, plans) and the batch's janitor
        # read from two threads through the one reader, a KafkaConsumer, which is not thread-safe (two polls at
        # once failed with "generator already executing" and left the watch unable to read).
        self._reading = threading.Lock()
        # The nodes held (streaming.cluster.held), under a lock of their own: kafka-python's I/O threads consult
        # and mark them on every request while another thread may hold `_lock` for a whole bootstrap.
        self._held = HeldNodes(gone_hold_s=timeout_s, probe_every_s=PROBE_EVERY_S)
        self._held_lock = threading.Lock()
        self._addresses = {}  # node id -> "host:port", as a client knew it when it held the node
        self._last_listed = None  # (monotonic time, rows) of the last ListPartitionReassignments answered
        # The lapse errors seen last: kafka-python fails every request in flight on a connection with the error of
        # the one that lapsed, the oldest, whose errback runs first (failure_hold: the others are collateral).
        self._lapses = deque(maxlen=64)
        self._prober = None  # a client of its own that probes the controller (`_probe_controller`)
        self._impatient = threading.local()  # `.depth`: within `impatient()` in this thread
        self._probing = None  # its thread, while one runs
        self._checks, self._checked, self._checking = deque(), {}, None  # `_check_alongside`: queue, last, thread
        self._closed = False
        self._kafka = None
        self._in_use = Counter()  # id(kafka-python client) -> requests using it now (`_using`)
        self._retired = {}  # id -> a client dropped while requests used it: closed when the last one ends
        self._confluent = None
        self._producer = None
        self._kerberos_principal = None  # GSSAPI: the principal logged in as (streaming.cluster.kerberos)
        self._fatal = None
        self._reader = None
        self._watcher = None  # a consumer of its own for OwnTopics.records_came
        self._first_connect()

    def _connect(self, budget_s=None, use=False):
        """The kafka-python client, bootstrapped now if there is none (after a drop), within `budget_s`
        (default: the whole timeout); `use`: counted as in use by one more request (`_using`)."""
        with self._lock:
            if self._kafka is None:
                self._kafka = self._new_client(budget_s or self._timeout_s)
            if use:
                self._in_use[id(self._kafka)] += 1
            return self._kafka

    def _new_client(self, budget_s):
        from kafka import KafkaAdminClient

        kafka = KafkaAdminClient(client_id="reassign-monitor", **self._client_settings(budget_s))
        self._route_sends(kafka._manager)
        return kafka

    @contextlib.contextmanager
    def _using(self):
        """The kafka-python client for one request, counted as in use until that request ended: a client dropped
        meanwhile by another thread (`_retire`) is closed when the last request using it ended, never under one
        (its I/O would fail every request in flight: "NetworkSelector closed!")."""
        kafka = self._connect(use=True)
        try:
            yield kafka
        finally:
            with self._lock:
                self._in_use[id(kafka)] -= 1
                if self._in_use[id(kafka)] > 0:
                    kafka = None
                else:
                    del self._in_use[id(kafka)]
                    kafka = self._retired.pop(id(kafka), None)
            _close_quietly(kafka)

    def _retire(self, kafka):
        """Drop `kafka`, the client a request used, if it is still the door's (another request may have dropped it and
        made a new one since): the next call bootstraps afresh. Closed now if no request uses it, else by the last
        one that does (`_using`)."""
        with self._lock:
            if kafka is None or self._kafka is not kafka:
                return
            self._kafka = None
            if self._in_use[id(kafka)] > 0:
                self._retired[id(kafka)] = kafka
                return
        _close_quietly(kafka)

    def _first_connect(self):
        """The first bootstrap, which tells the operator why it failed, all within the timeout. kafka-python
        reports refused credentials, a failed TLS handshake and plaintext spoken to TLS alike, as a
        bootstrap timeout: the part of the timeout it leaves goes to streaming.cluster.connect_diagnosis, which
        asks again in ways that tell them apart (in well under a second when it can)."""
        from streaming.cluster.connect_diagnosis import diagnose

        started = time.monotonic()
        if self._tokens is not None:
            self._tokens.current()
        if self._config.kerberos is not None:
            self._kerberos_principal = kerberos.log_in(self._config.kerberos, self._bootstrap.split(",")[0]
                                                       .strip().rpartition(":")[0].strip("[]"))
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
        _close_quietly(stale)

    def _drop(self):
        """Forget the kafka-python client: its metadata is stale. The next call bootstraps afresh."""
        self._retire(self._kafka)

    def _deadline_ms(self):
        return int(self._deadline_s * 1000)

    def _client_settings(self, bootstrap_budget_s):
        """What every kafka-python client of the door is made with: the request deadline for each request and each
        connection's set-up, the bootstrap's included (streaming.cluster.connecting), the bootstrap within
        `bootstrap_budget_s` from servers that are not held, a reconnect backoff short enough for probes, and the
        command config's settings."""
        return {"bootstrap_servers": self._bootstrap_servers(), "bootstrap_timeout_ms": int(bootstrap_budget_s * 1000),
                "request_timeout_ms": self._deadline_ms(), "kafka_client": bounded_client(self._deadline_ms()),
                "reconnect_backoff_max_ms": RECONNECT_BACKOFF_MAX_MS, **self._settings}

    def _bootstrap_servers(self):
        """The bootstrap servers without the addresses of held nodes, unless that leaves none: kafka-python
        bootstraps from one picked at random, and one that does not answer costs a request deadline
        (streaming.cluster.connecting)."""
        avoided = {self._addresses.get(node) for node in self.unanswering()}
        servers = [s for s in self._bootstrap.split(",") if s.strip() not in avoided]
        return ",".join(servers) or self._bootstrap

    def unanswering(self):
        """The nodes held now (streaming.cluster.held): their connection was closed or refused within the last
        --timeout, or a request to them lapsed and they have not answered since. Sends the probes that are due."""
        return frozenset(node for node in self._held_now() if node != held.CONTROLLER)

    def _held_now(self):
        """What is held now, CONTROLLER included; sends the probes that are due."""
        with self._held_lock:
            now = time.monotonic()
            keys = self._held.held(now)
            due = self._held.probe_due(now)
        for key in due:
            self._probe(key)
        return keys

    def _avoided(self, controller_bound=False):
        """The nodes a request for any node is not sent to: the held ones and the suspects (a forwarded request
        through them lapsed: streaming.cluster.held); a controller-bound one neither goes through a broker whose
        forwarding is stuck."""
        nodes = self.unanswering()
        with self._held_lock:
            now = time.monotonic()
            return nodes | self._held.suspects(now) | (self._held.stuck_forwarding(now) if controller_bound else set())

    def unanswered_since(self):
        """{node: Unix ms since when it has not answered} of the nodes held as unresponsive."""
        with self._held_lock:
            return {node: int(wall * 1000) for node, wall in self._held.unanswered_since(time.monotonic()).items()
                    if node != held.CONTROLLER}

    def hold_unanswered(self, since_ms):
        """Hold as unresponsive the brokers another door holds so ({broker: Unix ms since it has not answered}: the
        controller's, handed to a batch through the gate), unless held here already: this door then sends them nothing
        and probes them, instead of waiting out a request deadline on each first. A broker that answers the probe is
        released within about a deadline (streaming.cluster.held). Not logged: the controller's door logged the hold,
        and an idle worker's door lets it end between batches, so each batch would say it again."""
        with self._held_lock:
            now = time.monotonic()
            for node, ms in since_ms.items():
                if self._held.hold_of(node, now) is None:
                    self._held.lapsed(node, now, ms / 1000.0)

    def _held_why(self, node):
        """Why `node` (or held.CONTROLLER) is held, as the end of a "did not answer (...)" line; None when it is not."""
        with self._held_lock:
            hold = self._held.hold_of(node, time.monotonic())
        if hold is None:
            return None
        if hold.why == held.GONE:
            return "its connection was closed or refused"
        return f"no answer within {self._deadline_s:g} s since {utc_clock(hold.since_wall * 1000)} UTC"

    def _needed(self, node, api):
        """`node`, for a request only that node can answer; NodeGone at once when it is held."""
        why = self._held_why(node)
        if why is not None:
            raise NodeGone(f"{api}: broker {node} did not answer ({why})")
        return node

    def _controller_needed(self, api, deadline):
        """While the controller is held (a forwarded request lapsed and no answer came since), wait for the probe
        (`_probe_controller`) to hear from it, until the call's `deadline` (monotonic), then NodeGone: every
        broker would forward the request to the same controller, and no request is sent meanwhile. A controller
        that failed over answers the probe within a second or two (a SIGKILLed one's successor); one that hangs
        does not. Not waited for within `impatient()`: the job's controller, and `listed_or_last`."""
        while True:
            self._held_now()
            why = self._held_why(held.CONTROLLER)
            if why is None:
                return
            if getattr(self._impatient, "depth", 0) or time.monotonic() + CONTROLLER_WAIT_STEP_S > deadline:
                raise NodeGone(f"{api}: {held.CONTROLLER} did not answer ({why})")
            time.sleep(CONTROLLER_WAIT_STEP_S)

    def listed_or_last(self):
        """(ListPartitionReassignments' rows, False); while the controller is held (a forwarded request lapsed
        and no answer came since) the last rows this door was answered instead, if answered less than
        LAST_LIST_SERVED_S ago, and True, counted as a retry of the API (a poll error on /metrics). Every change
        of a reassignment is the controller's, so none is made while it answers nobody; measured: a SIGSTOPped
        active controller was replaced only after 10-30 s, and meanwhile no broker answered a list. For the job's
        driver, which lists every second: a decision (the janitor's, a command's) asks `list_reassignments`,
        which fails at once meanwhile."""
        try:
            with self.impatient():
                return self.list_reassignments(), False
        except Unreachable:
            with self._held_lock:
                last = self._last_listed
            if (last is None or self._held_why(held.CONTROLLER) is None
                    or time.monotonic() - last[0] > LAST_LIST_SERVED_S):
                raise
            with self._lock:
                self.retried[LIST_REASSIGNMENTS] += 1
            return [dict(row) for row in last[1]], True

    @contextlib.contextmanager
    def impatient(self):
        """Within (in this thread), a controller-bound call fails at once while the controller is held instead of
        waiting for it within the call's deadline (`_controller_needed`): for the job's controller, whose every second
        is the job's liveness, and `listed_or_last`, which has the last list to answer."""
        self._impatient.depth = getattr(self._impatient, "depth", 0) + 1
        try:
            yield
        finally:
            self._impatient.depth -= 1

    def _say(self, line):
        if self._log is not None:
            self._log(f"{LOG_PREFIX}{line}")

    def _route_sends(self, manager):
        """Every request of this kafka-python client goes through its connection manager's `send` (the
        admin calls, kafka-python's own Metadata refreshes, our ListOffsets and DescribeConfigs): route them
        all through `_routed`."""
        send = manager.send

        def routed(request, node_id=None, request_timeout_ms=None):
            return self._routed(manager, send, request, node_id, request_timeout_ms)
        manager.send = routed

    def _routed(self, manager, send, request, node_id, request_timeout_ms):
        """`send`, never to a held node: a request for any node (node_id None) goes to a live one, one pinned
        to a held node fails at once without a connection attempt (a host that is down may take kafka-python's
        whole connect timeout to refuse). The node is held before the caller sees the error, so its retry goes
        elsewhere."""
        from kafka.errors import NodeNotReadyError
        from kafka.future import Future

        if node_id is None:
            node_id = self._live_node(manager)
        elif node_id in self.unanswering():
            return Future().failure(NodeNotReadyError(f"node {node_id} is held"))
        future = self._watched(manager, node_id, send(request, node_id, request_timeout_ms), request)
        if node_id is not None and type(request).__name__.removesuffix("Request") in CONTROLLER_BOUND:
            self._check_alongside(node_id)
        return future

    def _watched(self, manager, node, future, request):
        """`future`, of `request` sent to `node` now: any answer releases the node (and the controller, for a
        request the broker forwards to it), a lapse or a closed connection holds it (streaming.cluster.held)."""
        if node is not None:
            asked_wall = time.time()
            forwarded = type(request).__name__.removesuffix("Request") in CONTROLLER_BOUND
            future.add_callback(lambda _answer: self._answered(node, forwarded))
            future.add_errback(lambda error: self._unanswered(manager, node, asked_wall, error, forwarded))
        return future

    def _answered(self, node, forwarded):
        with self._held_lock:
            now = time.monotonic()
            ended = [(f"broker {node}", self._held.answered(node, now, forwarded))]
            if forwarded:
                ended.append((held.CONTROLLER, self._held.answered(held.CONTROLLER, now)))
        for who, hold in ended:
            if hold is not None:
                self._say(f"{who}{ANSWERS_AGAIN} after {now - hold.began:.1f} s{HELD_AS}{hold.why}")

    def _unanswered(self, manager, node, asked_wall, error, forwarded):
        """Hold `node` as `failure_hold` says its request's failure means; a forwarded request's lapse holds the
        controller and makes the node a suspect instead (streaming.cluster.held)."""
        with self._held_lock:
            collateral = any(seen is error for seen in self._lapses)
            self._lapses.append(error)
        why = failure_hold(error, closed_by_door=manager.closed, collateral=collateral)
        if why is None:
            return
        broker = manager.cluster.broker_metadata(node)
        with self._held_lock:
            if broker is not None:
                self._addresses[node] = f"{broker.host}:{broker.port}"
            now = time.monotonic()
            # A connect that timed out never reached the broker, let alone the controller behind it.
            if why == held.UNRESPONSIVE and forwarded and not connect_timed_out(error):
                who, newly = held.CONTROLLER, self._held.forwarded_lapsed(node, now, asked_wall)
            elif why == held.UNRESPONSIVE:
                who, newly = f"broker {node}", self._held.lapsed(node, now, asked_wall)
            else:
                who, newly = f"broker {node}", self._held.gone(node, now, time.time())
        if newly:
            through = f", asked through broker {node}" if who == held.CONTROLLER else ""
            self._say(f"{who}{HELD_AS}{why} ({self._held_why(node if who != held.CONTROLLER else held.CONTROLLER)}"
                      f"{through}; {_error_text(error)})")

    def _probe(self, key):
        """Probe a held node or a suspect (a Metadata request without topics, answered from its own cache), past
        the routing: its answer ends the hold (`_watched`), its lapse keeps it. A node the client no longer knows
        (Kafka fenced it and left it out of Metadata) is looked for again in the client's next Metadata. The
        controller is probed apart (`_probe_controller`)."""
        from kafka.protocol.metadata import MetadataRequest

        if key == held.CONTROLLER:
            self._probe_controller()
            return
        kafka = self._kafka
        if kafka is None:
            self._probe_done(key)
            return
        manager = kafka._manager
        request = MetadataRequest(topics=[], allow_auto_topic_creation=False)

        def send():
            try:
                future = type(manager).send(manager, request, node_id=key)
            except Exception:  # UnknownBrokerIdError (Kafka fenced it: still no answer), or a client closed meanwhile
                with self._held_lock:
                    self._held.confirm(key, time.monotonic())
                self._probe_done(key)
                manager.cluster.request_update()
                return
            self._watched(manager, key, future, request).add_both(lambda _: self._probe_done(key))

        try:
            manager.call_soon(send)
        except Exception:  # the client's I/O thread has stopped: it was dropped
            self._probe_done(key)

    def _probe_controller(self):
        """While the controller is held, a thread of its own asks it, through a broker that is not avoided, for the
        reassignments of one partition of a topic that does not exist (CONTROLLER_PROBE_TOPIC: forwarded like any
        list; one of no topic at all the broker answers itself) with a client of its own: a broker
        answers a connection's requests in order, so a forwarded request waiting on the controller would hold up
        every other request of the door's client to that broker. The first answer ends the hold; a lapse holds
        nobody (the broker answered what it could)."""
        with self._held_lock:
            if self._probing is not None and self._probing.is_alive():
                return
            self._probing = threading.Thread(target=self._probing_controller, name="reassign-monitor-probe",
                                             daemon=True)
            self._probing.start()

    def _prober_manager(self):
        """The connection manager of the door's second kafka-python client (made now if there is none: only ever
        from the probing and checking threads, never from an I/O thread), whose connections carry only probes."""
        from kafka import KafkaAdminClient

        with self._lock:
            if self._prober is None:
                self._prober = KafkaAdminClient(client_id="reassign-monitor-probe",
                                                **self._client_settings(self._timeout_s))
            return self._prober._manager

    def _check_alongside(self, node):
        """Alongside a request `node` forwards to the controller, ask `node` itself something it answers alone (a
        Metadata request without topics) on the second client's connection (a broker answers a connection's
        requests in order): when the forwarded request lapses, whether the broker or the controller did not answer
        is known at the same moment, and the next request for that broker does not wait out a lapse of its own
        (measured: the controller's tick paid two lapses, 6.7 s, when the stopped broker was the one its list went
        through and the ownership topic's leader). At most once per PROBE_EVERY_S per broker."""
        with self._held_lock:
            now = time.monotonic()
            if now - self._checked.get(node, float("-inf")) < PROBE_EVERY_S:
                return
            self._checked[node] = now
            self._checks.append(node)
            if self._checking is None:
                self._checking = threading.Thread(target=self._checking_nodes, name="reassign-monitor-check",
                                                  daemon=True)
                self._checking.start()

    def _checking_nodes(self):
        from kafka.protocol.metadata import MetadataRequest

        while not self._closed:
            with self._held_lock:
                if not self._checks:
                    self._checking = None
                    return
                node = self._checks.popleft()
            try:
                manager = self._prober_manager()
            except Exception:  # no client to check with now (no broker answered its bootstrap): none this time
                continue
            asked_wall = time.time()
            request = MetadataRequest(topics=[], allow_auto_topic_creation=False)

            async def ask():
                return await manager.send(request, node_id=node)
            try:
                manager.run(ask)
            except Exception as error:
                self._unanswered(manager, node, asked_wall, error, forwarded=False)
            else:
                self._answered(node, forwarded=False)

    def _probing_controller(self):
        from kafka.protocol.admin import ListPartitionReassignmentsRequest

        try:
            while not self._closed and self._held_why(held.CONTROLLER) is not None:
                started = time.monotonic()
                try:
                    manager = self._prober_manager()
                    avoided = self._avoided(controller_bound=True)
                    node = next((b.node_id for b in manager.cluster.brokers() if b.node_id not in avoided),
                                next((b.node_id for b in manager.cluster.brokers()
                                      if b.node_id not in self._avoided()), None))
                    if node is not None:
                        request = ListPartitionReassignmentsRequest(timeout_ms=self._deadline_ms(), topics=[
                            ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                                name=CONTROLLER_PROBE_TOPIC, partition_indexes=[0])])

                        async def ask():
                            return await manager.send(request, node_id=node)
                        manager.run(ask)
                        self._answered(node, forwarded=True)
                except Exception:  # no answer (a lapse, a refused connection): the controller stays held, renewed
                    with self._held_lock:
                        self._held.confirm(held.CONTROLLER, time.monotonic())
                time.sleep(max(0.0, PROBE_EVERY_S - (time.monotonic() - started)))
        finally:
            self._probe_done(held.CONTROLLER)

    def _probe_done(self, node):
        with self._held_lock:
            self._held.probe_done(node)

    def _live_node(self, manager, controller_bound=False):
        """kafka-python's least loaded node unless it is avoided (`_avoided`), else a live one; for a
        controller-bound request, one that is only avoided as stuck forwarding rather than none (None: none
        known)."""
        gone = self._avoided(controller_bound)
        node = manager.least_loaded_node()
        if node in gone:
            node = next((b.node_id for b in manager.cluster.brokers() if b.node_id not in gone), None)
        if node is None and controller_bound:
            return self._live_node(manager)
        return node

    def _reroute(self):
        """After a closed or refused connection (its node now held): the nodes a retry avoids, or None when no
        node the client knows is left to ask (streaming.cluster.retry)."""
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
        if kafka._controller_id is None or kafka._controller_id in self._avoided(controller_bound=True):
            kafka._controller_id = self._live_node(kafka._manager, controller_bound=True)
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
        """Who lacks what, as every refusal by the authorizer says it (with AWS MSK IAM: the IAM action)."""
        if self._config.msk_iam is not None:
            return (f"the AWS identity of {self._config.msk_iam.credentials_source} lacks "
                    f"{acls.msk_iam_action(operation, resource)} on {resource} (Kafka's {operation})")
        principal = (client_config.principal_of(self._config) or (self._tokens and self._tokens.principal())
                     or (self._kerberos_principal and f"User:{client_config.kerberos_user(self._kerberos_principal)}"))
        return f"{principal or 'this client principal'} lacks {operation} on {resource}"

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
        """`work(kafka_python_client)`, through `_retrying`; a controller-bound one fails at once while the
        controller is held."""
        deadline = time.monotonic() + self._timeout_s
        used = [None]  # the client the last attempt used: the one a drop retires

        def attempt():
            if api in CONTROLLER_BOUND:
                self._controller_needed(api, deadline)
            self._count(requests)
            with self._using() as kafka:
                used[0] = kafka
                return work(self._steer(kafka))
        answer = self._retrying(api, attempt, doing, needs, drop=lambda: self._retire(used[0]), reroute=self._reroute)
        if api == LIST_REASSIGNMENTS:  # for `listed_or_last`
            with self._held_lock:
                self._last_listed = (time.monotonic(), answer)
        return answer

    def _confluent_call(self, api, work, doing=None, needs=None):
        """`work(confluent_admin_client)`, through `_retrying` (librdkafka reconnects by itself)."""
        def attempt():
            self._count()
            return work(self._confluent_admin())
        return self._retrying(api, attempt, doing, needs)

    def _metadata(self):
        """Metadata of every topic (never creating one), as streaming.cluster.metadata.ClusterMetadata."""
        from kafka.protocol.metadata import MetadataRequest

        def work(kafka):
            manager = kafka._manager

            async def ask():
                return await manager.send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
            return from_response(manager.run(ask))
        return self._call(METADATA, work)

    def close(self):
        self._closed = True
        self._forget("_prober")
        self._forget("_reader")
        self._forget("_watcher")
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            if self._config.uses_librdkafka:
                producer.flush(self._timeout_s)
            else:  # kafka-python's: close() sends what is pending within the timeout and stops its I/O thread
                close_within(producer, self._timeout_s)
        self._drop()

