"""The one door to the cluster: every admin read and write this project makes, behind one small protocol.

`ClusterAdmin` names only the calls we use and returns plain rows, so the poller, the janitor and the
commands are tested on fakes built from data and, for real, against the local cluster.
`KafkaClusterAdmin` implements it with kafka-python (the only Python client with DescribeLogDirs and the
KIP-455 reassignment APIs), except Metadata and topic creation, which go through confluent-kafka
(its Metadata decodes in C: 38 ms against kafka-python's 177 ms at 10,000 partitions).

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
from collections import Counter, defaultdict
from typing import Protocol

from streaming.vocabulary import client_config
from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, DELETE, OPS, TOPIC, TOPIC_THROTTLE_KEYS, throttle_config_key
from streaming.vocabulary.errors import (AUTHORIZATION, ClusterError, NotAuthorized, Refused, Unreachable, from_kafka_error,
                                         kind_of, kind_of_answer)
from streaming.cluster.retry import retrying
from streaming.vocabulary.defaults import TIMEOUT_S

# The names of the calls, as poll errors, retry counts and messages name them.
DESCRIBE_CLUSTER = "DescribeCluster"
LIST_REASSIGNMENTS = "ListPartitionReassignments"
METADATA = "Metadata"
DESCRIBE_LOG_DIRS = "DescribeLogDirs"
LIST_OFFSETS = "ListOffsets"
DESCRIBE_CONFIGS = "DescribeConfigs"
ALTER_CONFIGS = "IncrementalAlterConfigs"
ALTER_REASSIGNMENTS = "AlterPartitionReassignments"
ALTER_LOG_DIRS = "AlterReplicaLogDirs"
CREATE_TOPICS = "CreateTopics"
PRODUCE = "Produce"
READ = "Fetch"
# The first bootstrap gets this share of --timeout; the rest is for saying why it failed.
BOOTSTRAP_SHARE = 0.7
MIN_DIAGNOSIS_S = 1.0

# librdkafka logs through this logger instead of stderr (log_level 0 still lets its FATAL lines through):
# the operator sees each failure once, as our one-line error.
QUIET_LIBRDKAFKA = logging.getLogger("reassign-monitor.librdkafka")
QUIET_LIBRDKAFKA.addHandler(logging.NullHandler())
QUIET_LIBRDKAFKA.propagate = False

UNKNOWN_TOPIC_OR_PARTITION = 3  # Kafka's error code
BROKER_RESOURCE = 4  # DescribeConfigs resource type of a broker
# Without these two answers a move cannot be told from a finished or cancelled one: a poll missing
# either must not update progress or history.
REQUIRED_APIS = (LIST_REASSIGNMENTS, METADATA)
POLL_APIS = (DESCRIBE_CLUSTER, LIST_REASSIGNMENTS, METADATA, DESCRIBE_LOG_DIRS, LIST_OFFSETS, DESCRIBE_CONFIGS)


class ClusterAdmin(Protocol):
    requests: int
    retried: Counter

    def describe_cluster(self) -> tuple[str, list[dict]]: ...
    def list_reassignments(self) -> list[dict]: ...
    def describe_partitions(self, topics: list[str] | None) -> list[dict]: ...
    def describe_log_dirs(self, broker: int) -> list[dict]: ...
    def log_dir_paths(self, broker: int) -> set[str]: ...
    def list_offsets(self, leaders: dict[tuple[str, int], int]) -> list[dict]: ...
    def describe_throttles(self, topics: list[str], brokers: list[int]) -> tuple[list[dict], list[dict]]: ...
    def alter_throttles(self, changes: list[tuple]) -> list[str | None]: ...
    def start_reassignments(self, targets: dict[tuple[str, int], list[int]]) -> dict[tuple[str, int], str | None]: ...
    def cancel_reassignments(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], str | None]: ...
    def alter_replica_log_dirs(self, wanted: dict[tuple[str, int, int], str]) -> dict[tuple[str, int, int], str | None]: ...
    def ensure_topic(self, name: str, partitions: int, config: dict[str, str], min_insync_replicas: int | None = None) -> bool: ...
    def topic_exists(self, name: str) -> bool: ...
    def produce(self, topic: str, keyed_values: list[tuple[str, bytes]]) -> None: ...
    def read_log(self, topic: str, partition: int, start: int) -> list[tuple[int, bytes, bytes | None]]: ...
    def close(self) -> None: ...


def _error_name(error):
    """A per-resource answer of kafka-python (None, an error class or an instance) as None or its name."""
    if error is None:
        return None
    name = getattr(error, "__name__", None) or type(error).__name__
    return None if name == "NoError" else name


class KafkaClusterAdmin:
    """ClusterAdmin over kafka-python and confluent-kafka. Construction bootstraps (bounded by `timeout_s`)."""

    def __init__(self, bootstrap_servers, command_config=None, timeout_s=TIMEOUT_S):
        self._bootstrap = bootstrap_servers
        self._command_config = command_config
        self._settings = client_config.kafka_python_settings(command_config)
        self._principal = client_config.principal_of(command_config)
        self._confluent_settings = client_config.confluent_settings(command_config, bootstrap_servers)
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

    # -- clients --

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
            raise (diagnose(self._bootstrap, self._command_config, left)
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

    def _named(self, error, needs):
        """A refusal by the authorizer, naming who lacks which operation on what (`needs`)."""
        if isinstance(error, NotAuthorized) and needs is not None:
            operation, resource = needs
            who = self._principal or "this client's principal"
            return NotAuthorized(f"{error}: {who} lacks {operation} on {resource}")
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

    # -- reads --

    def describe_cluster(self):
        def work(kafka):
            cluster = kafka.describe_cluster()
            return cluster["cluster_id"], [{"broker": b["broker_id"], "alive": not b.get("is_fenced", False)}
                                           for b in cluster["brokers"]]
        return self._call(DESCRIBE_CLUSTER, work, needs=("Describe", "Cluster"))

    def list_reassignments(self):
        def work(kafka):
            ongoing = kafka.list_partition_reassignments()
            return [{"topic": tp.topic, "partition": tp.partition, "replicas": r["replicas"],
                     "adding": r["adding_replicas"], "removing": r["removing_replicas"]} for tp, r in ongoing.items()]
        return self._call(LIST_REASSIGNMENTS, work, needs=("Describe", "Cluster"))

    def describe_partitions(self, topics):
        """Leader, replicas and ISR of every partition of `topics` (None: of all topics). Always asks
        for all topics: naming one makes Metadata auto-create it on brokers that allow that."""
        metadata = self._confluent_call(METADATA, lambda admin: admin.list_topics(timeout=self._timeout_s))
        wanted = None if topics is None else set(topics)
        return [{"topic": topic.topic, "partition": p.id, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": list(p.isrs)}
                for topic in metadata.topics.values() if topic.error is None and (wanted is None or topic.topic in wanted)
                for p in topic.partitions.values()]

    def _log_dirs(self, broker):
        return self._call(DESCRIBE_LOG_DIRS, lambda kafka: kafka.describe_log_dirs(brokers=[broker]),
                          needs=("Describe", "Cluster"))

    def describe_log_dirs(self, broker):
        rows = []
        for response in self._log_dirs(broker):
            for log_dir in response["log_dirs"]:
                if log_dir["error_code"] != 0:
                    continue  # an offline log dir holds no readable replicas
                for topic in log_dir["topics"]:
                    for p in topic["partitions"]:
                        rows.append({"broker": response["broker"], "log_dir": log_dir["log_dir"],
                                     "topic": topic["name"], "partition": p["partition_index"],
                                     "size": p["partition_size"], "offset_lag": p["offset_lag"],
                                     "is_future": p["is_future_key"]})
        return rows

    def log_dir_paths(self, broker):
        """The online log dirs of `broker` (for validating a reassignment file's log_dirs)."""
        return {d["log_dir"] for r in self._log_dirs(broker) for d in r["log_dirs"] if d["error_code"] == 0}

    def list_offsets(self, leaders):
        """Log start and end offsets of the partitions in `leaders` ((topic, partition) -> leader id, from
        the poll's Metadata). kafka-python's list_partition_offsets looks the leaders up with a Metadata
        request of its own on every call: at 10,000 partitions its two calls took 564 ms, these requests
        192 ms. It offers no public way to send a built request, so this uses its network manager.
        A partition whose leader answered with an error (it moved since the Metadata) is left out:
        unknown in this poll, not fatal to the rest."""
        from kafka.admin import OffsetSpec

        by_leader = defaultdict(list)
        for (topic, partition), leader in leaders.items():
            by_leader[leader].append((topic, partition))

        def work(kafka):
            manager = kafka._manager

            async def ask_every_leader():
                pending = [(spec, manager.send(_list_offsets_request(tps, spec), node_id=leader))
                           for leader, tps in by_leader.items() for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST)]
                found = {OffsetSpec.EARLIEST: {}, OffsetSpec.LATEST: {}}
                for spec, response in pending:
                    found[spec].update(_offsets_in(await response))
                return found

            return manager.run(ask_every_leader)

        found = self._call(LIST_OFFSETS, work, requests=2 * len(by_leader), needs=("Describe", "the moving topics"))
        start, end = found[OffsetSpec.EARLIEST], found[OffsetSpec.LATEST]
        return [{"topic": t, "partition": p, "log_start": start[t, p], "log_end": end[t, p]}
                for t, p in leaders if (t, p) in start and (t, p) in end]

    def describe_throttles(self, topics, brokers):
        from kafka.admin import ConfigResource, ConfigResourceType

        resources = [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        resources += [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in brokers]
        if not resources:
            return [], []
        described = self._call(DESCRIBE_CONFIGS, lambda kafka: self._describe_configs(kafka, resources),
                               requests=1 + len(brokers))
        topic_rows = [{"topic": topic, "kind": kind, "value": configs[key]["value"]}
                      for topic, configs in described.get("topic", {}).items()
                      for kind, key in TOPIC_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        broker_rows = [{"broker": int(broker), "kind": kind, "rate": int(configs[key]["value"])}
                       for broker, configs in described.get("broker", {}).items()
                       for kind, key in BROKER_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        return topic_rows, broker_rows

    def _describe_configs(self, kafka, resources):
        """DescribeConfigs that fails on a refused resource. kafka-python's describe_configs drops each
        resource's error code: a broker resource the principal may not describe comes back empty, which
        would read as "no throttle" (verify would then leave throttles behind, and execute record no prior
        rate). Sent like kafka-python does, each broker resource to its broker, through its network manager.
        A topic deleted since the Metadata (UNKNOWN_TOPIC_OR_PARTITION) simply has no throttles."""
        import kafka.errors as kerrors

        brokers, others = kafka._group_config_resources(resources)
        manager = kafka._manager

        async def ask():
            sent = [manager.send(kafka._describe_configs_request(rs), node_id=b) for b, rs in brokers.items()]
            if others:
                sent.append(manager.send(kafka._describe_configs_request(others)))
            return [await response for response in sent]

        responses = manager.run(ask)
        for response in responses:
            for result in response.results:
                if result.error_code in (0, UNKNOWN_TOPIC_OR_PARTITION):
                    continue
                error = kerrors.for_code(result.error_code)(result.error_message or "")
                if kind_of(error) == AUTHORIZATION:
                    resource = "Cluster" if result.resource_type == BROKER_RESOURCE else f"Topic {result.resource_name}"
                    raise NotAuthorized(f"{DESCRIBE_CONFIGS}: not authorized: "
                                        f"{self._principal or 'this client principal'} lacks DescribeConfigs on {resource}")
                raise error
        return kafka._describe_configs_process_responses(responses)

    # -- writes (each idempotent, so a retry after a lost answer is harmless) --

    def alter_throttles(self, changes):
        """IncrementalAlterConfigs for `changes` [(scope, name, kind, op, value)] in one call (kafka-python
        sends one request per broker for broker resources, one for topics). Returns, per change, None or
        Kafka's refusal. `op`: one of streaming.vocabulary.config_keys.OPS. Changes of one resource travel together,
        so a refusal applies to all of them. raise_on_unknown=False: kafka-python otherwise rejects
        throttle keys as unknown."""
        from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

        library_op = {op: getattr(AlterConfigOp, op.upper()) for op in OPS}
        resources = {}
        for scope, name, kind, op, value in changes:
            configs = resources.setdefault((scope, str(name)), {})
            configs[throttle_config_key(scope, kind)] = (library_op[op], None if op == DELETE else str(value))
        if not resources:
            return []
        request = [ConfigResource(ConfigResourceType.TOPIC if scope == TOPIC else ConfigResourceType.BROKER, name,
                                  configs=configs) for (scope, name), configs in resources.items()]
        brokers = sum(1 for scope, _ in resources if scope != TOPIC)
        outcome = self._call(ALTER_CONFIGS, lambda kafka: kafka.alter_configs(request, raise_on_unknown=False),
                             requests=brokers + (len(resources) > brokers))
        answers = {key: outcome.get(key[0], {}).get(key[1], "no answer") for key in resources}
        return [None if answers[(scope, str(name))] == "OK" else self._refusal(answers[(scope, str(name))], scope, name)
                for scope, name, _, _, _ in changes]

    def _refusal(self, answer, scope, name):
        """kafka-python's per-resource answer of alter_configs ("[Error 31] Name: detail") as one short line;
        a refusal by the authorizer names who lacks AlterConfigs on what (broker configs live on the Cluster)."""
        if kind_of_answer(answer) == AUTHORIZATION:
            resource = f"Topic {name}" if scope == TOPIC else "Cluster"
            return f"not authorized: {self._principal or 'this client principal'} lacks AlterConfigs on {resource}"
        text = " ".join(str(answer).split())
        return text if len(text) <= 200 else text[:200] + "..."

    def _alter_reassignments(self, targets, doing):
        from kafka import TopicPartition

        request = {TopicPartition(t, p): (None if target is None else list(target)) for (t, p), target in targets.items()}
        answer = self._call(ALTER_REASSIGNMENTS, lambda kafka: kafka.alter_partition_reassignments(request), doing=doing,
                            needs=("Alter", "Cluster"))
        return {key: (_error_name(answer[TopicPartition(*key)]) if TopicPartition(*key) in answer else "no answer")
                for key in targets}

    def start_reassignments(self, targets):
        """(topic, partition) -> None when accepted, else the error's name."""
        return self._alter_reassignments(targets, ALTER_REASSIGNMENTS)

    def cancel_reassignments(self, partitions):
        """(topic, partition) -> None when cancelled, else the error's name (NoReassignmentInProgressError
        when it finished meanwhile)."""
        return self._alter_reassignments({key: None for key in partitions}, f"{ALTER_REASSIGNMENTS} (cancel)")

    def alter_replica_log_dirs(self, wanted):
        """(topic, partition, broker) -> None when the broker accepted the log dir, else the error's name."""
        from kafka import TopicPartitionReplica

        request = {TopicPartitionReplica(t, p, b): d for (t, p, b), d in wanted.items()}
        answer = self._call(ALTER_LOG_DIRS, lambda kafka: kafka.alter_replica_log_dirs(request), needs=("Alter", "Cluster"))
        return {key: _error_name(answer.get(TopicPartitionReplica(*key), "no answer")) for key in wanted}

    def ensure_topic(self, name, partitions, config, min_insync_replicas=None):
        """Create `name` (RF min(3, brokers); min.insync.replicas capped at that) unless it exists; either
        way return only once every partition has a leader, so a write or read right after does not meet
        UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE. True when this call created it."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        metadata = self._confluent_call(METADATA, lambda admin: admin.list_topics(timeout=self._timeout_s))
        created = False
        if name not in metadata.topics:
            replication = min(3, len(metadata.brokers))
            if min_insync_replicas is not None:
                config = {**config, "min.insync.replicas": str(min(min_insync_replicas, replication))}
            topic = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config)

            def create(admin):
                try:
                    admin.create_topics([topic], request_timeout=self._timeout_s)[name].result(self._timeout_s)
                except KafkaException as error:
                    if error.args[0].name() != "TOPIC_ALREADY_EXISTS":  # another instance won the race
                        raise
                    return False
                return True

            created = self._confluent_call(CREATE_TOPICS, create, doing=f"creating topic {name}",
                                           needs=("Create", f"Topic {name}"))
        self._await_leaders(name)
        return created

    def _await_leaders(self, name):
        deadline = time.monotonic() + self._timeout_s
        while True:
            metadata = self._confluent_call(METADATA, lambda admin: admin.list_topics(timeout=self._timeout_s))
            topic = metadata.topics.get(name)
            if topic is not None and topic.error is None and topic.partitions and \
                    all(p.leader >= 0 for p in topic.partitions.values()):
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"topic {name}: no leader for every partition within {self._timeout_s:g}s")
            time.sleep(0.1)

    # -- the project's own topics --

    def topic_exists(self, name):
        metadata = self._confluent_call(METADATA, lambda admin: admin.list_topics(timeout=self._timeout_s))
        return name in metadata.topics

    def _producer_client(self):
        from confluent_kafka import Producer

        with self._lock:
            if self._producer is None:
                self._fatal = None
                # Idempotent with acks=all: librdkafka retries transient send errors itself (leader change,
                # NOT_ENOUGH_REPLICAS) without duplicating or reordering, within message.timeout.ms.
                # zstd: our own reader (kafka-python) decodes it with the zstandard package we ship; it
                # has no lz4 codec. error_cb: a fatal error (e.g. no producer id: IdempotentWrite or Write
                # refused) is said only there; later calls say only "_FATAL".
                self._producer = Producer({**self._confluent_settings, "logger": QUIET_LIBRDKAFKA,
                                           "error_cb": self._client_error, "enable.idempotence": True,
                                           "acks": "all", "linger.ms": 20, "compression.type": "zstd",
                                           "message.timeout.ms": int(max(self._timeout_s, 1.0) * 1000)})
            return self._producer

    def _client_error(self, error):
        if error.fatal():
            self._fatal = error

    def _produce_failure(self, error, topic):
        """Our exception for a failed write; a producer that met a fatal error is dropped (it cannot send
        again), and its fatal error, the cause, is what is reported."""
        cause = self._fatal or error
        if self._fatal is not None:
            with self._lock:
                self._producer = None
        return self._named(from_kafka_error(cause, f"writing to {topic}"), ("Write", f"Topic {topic}"))

    def produce(self, topic, keyed_values, timeout_s=None):
        """Write (key str, value bytes) pairs to `topic` and return once every one is acknowledged by the
        in-sync replicas; raise our exception for the first that was not (the rest may have been written:
        every record of this project is keyed, so writing it again supersedes)."""
        from confluent_kafka import KafkaException

        producer = self._producer_client()
        failures = []

        def delivered(error, _message):
            if error is not None:
                failures.append(error)

        try:
            for key, value in keyed_values:
                while True:
                    try:
                        producer.produce(topic, key=key.encode("utf-8"), value=value, on_delivery=delivered)
                        break
                    except BufferError:  # local queue full: let deliveries drain, then retry this record
                        producer.poll(0.1)
                producer.poll(0)
            self._count()
            unsent = producer.flush(timeout_s or self._timeout_s)
        except (KafkaException, SystemError) as error:
            # SystemError: confluent-kafka reports an error raised while it ran a callback this way; the
            # error itself is its __context__.
            raise self._produce_failure(error.__context__ or error if isinstance(error, SystemError) else error,
                                        topic) from error
        if failures or self._fatal is not None:
            raise self._produce_failure(failures[0] if failures else self._fatal, topic)
        if unsent != 0:
            raise from_kafka_error(TimeoutError("not acknowledged in time"), f"writing to {topic}")

    def _reader_client(self):
        from kafka import KafkaConsumer

        with self._lock:
            if self._reader is None:
                timeout_ms = int(self._timeout_s * 1000)
                # No group (group_id=None): it assigns and seeks, never sends FindCoordinator or commits, so
                # it needs Read and Describe on the topic and no ACL on a consumer group. fetch_max_wait_ms
                # short: a catch-up poll should not wait for records that will not come.
                self._reader = KafkaConsumer(
                    bootstrap_servers=self._bootstrap, client_id="reassign-monitor-reader", group_id=None,
                    enable_auto_commit=False, auto_offset_reset="earliest", allow_auto_create_topics=False,
                    fetch_max_wait_ms=20, request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms,
                    **self._settings)
            return self._reader

    def _drop_reader(self):
        self._forget("_reader")

    def read_log(self, topic, partition, start):
        """Every record of `topic`/`partition` from offset `start` (or the log start, if later) to the end
        as of this call: [(offset, key bytes, value bytes or None)]. A topic that does not exist has none."""
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)

        def catch_up():
            reader = self._reader_client()
            self._count(2)
            if partition not in (reader.partitions_for_topic(topic) or ()):
                return []
            timeout_ms = int(self._timeout_s * 1000)
            low = reader.beginning_offsets([tp], timeout_ms)[tp]
            high = reader.end_offsets([tp], timeout_ms)[tp]
            position = max(start, low)
            records = []
            if position >= high:
                return records
            reader.assign([tp])  # assigned only while catching up: nothing is fetched in between
            try:
                reader.seek(tp, position)
                deadline = time.monotonic() + self._timeout_s
                while position < high:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"at offset {position} of {high}")
                    self._count()
                    for message in reader.poll(timeout_ms=500).get(tp, ()):
                        records.append((message.offset, message.key, message.value))
                        position = message.offset + 1
            finally:
                reader.unsubscribe()
            return records

        return self._retrying(READ, catch_up, f"reading {topic}", ("Read", f"Topic {topic}"), drop=self._drop_reader)

    def close(self):
        self._drop_reader()
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(self._timeout_s)
        self._drop()


def _list_offsets_request(partitions, spec):
    from kafka.protocol.consumer import ListOffsetsRequest

    by_topic = defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=partition, timestamp=spec))
    return ListOffsetsRequest(isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=parts)
                                                          for topic, parts in by_topic.items()])


def _offsets_in(response):
    return {(topic.name, p.partition_index): p.offset
            for topic in response.topics for p in topic.partitions if p.error_code == 0}
