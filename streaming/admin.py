"""The one door to the cluster: every admin read and write this project makes, behind one small protocol.

`ClusterAdmin` names only the calls we use and returns plain rows, so the poller, the janitor and the
commands are tested on fakes built from data and, for real, against the local cluster.
`KafkaClusterAdmin` implements it with kafka-python (the only Python client with DescribeLogDirs and the
KIP-455 reassignment APIs), except Metadata and topic creation, which go through confluent-kafka
(its Metadata decodes in C: 38 ms against kafka-python's 177 ms at 10,000 partitions).

Every call runs through streaming.retry with the error table of streaming.errors: transient errors are
retried inside the call's deadline (`timeout_s`); errors meaning the client's picture of the cluster is
stale (a broker that left and came back, a controller that moved) drop the kafka-python client, and the
retry bootstraps a fresh one. A long-lived kafka-python client otherwise keeps stale metadata until its
periodic refresh and pins controller-bound requests to one cached broker: measured on a real cluster,
polls failed for minutes after a broker bounce. What a call still cannot do is raised as our exception.

Every request counts in `requests` (DescribeLogDirs one per broker); every retried error counts in
`retried[api]`, which the poll reports as a poll error of that API.
"""

import threading
import time
from collections import Counter, defaultdict
from typing import Protocol

from streaming import client_config
from streaming.config_keys import BROKER_THROTTLE_KEYS, DELETE, OPS, TOPIC, TOPIC_THROTTLE_KEYS, throttle_config_key
from streaming.errors import ClusterError, from_kafka_error
from streaming.retry import retrying

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
    def ensure_topic(self, name: str, partitions: int, config: dict[str, str]) -> bool: ...
    def topic_exists(self, name: str) -> bool: ...
    def produce(self, topic: str, keyed_values: list[tuple[str, bytes]]) -> None: ...
    def close(self) -> None: ...


def _error_name(error):
    """A per-resource answer of kafka-python (None, an error class or an instance) as None or its name."""
    if error is None:
        return None
    name = getattr(error, "__name__", None) or type(error).__name__
    return None if name == "NoError" else name


class KafkaClusterAdmin:
    """ClusterAdmin over kafka-python and confluent-kafka. Construction bootstraps (bounded by `timeout_s`)."""

    def __init__(self, bootstrap_servers, command_config=None, timeout_s=10.0):
        self._bootstrap = bootstrap_servers
        self._command_config = command_config
        self._settings = client_config.kafka_python_settings(command_config)
        self._confluent_settings = client_config.confluent_settings(command_config, bootstrap_servers)
        self._timeout_s = timeout_s
        self.requests = 0
        self.retried = Counter()
        self._lock = threading.Lock()  # the poller calls from several threads
        self._kafka = None
        self._confluent = None
        self._producer = None
        self._connect()

    # -- clients --

    def _connect(self):
        """The kafka-python client, bootstrapped now if there is none (after a drop)."""
        from kafka import KafkaAdminClient

        with self._lock:
            if self._kafka is None:
                try:
                    self._kafka = KafkaAdminClient(
                        bootstrap_servers=self._bootstrap, client_id="reassign-monitor",
                        bootstrap_timeout_ms=int(self._timeout_s * 1000),
                        request_timeout_ms=int(self._timeout_s * 1000), **self._settings)
                except Exception as error:
                    raise self._bootstrap_error(error) from error
            return self._kafka

    def _bootstrap_error(self, error):
        """Why bootstrapping failed. kafka-python reports refused credentials and failed TLS handshakes as a
        bootstrap timeout; the diagnosis asks again in a way that tells them apart."""
        mapped = from_kafka_error(error, f"connecting to {self._bootstrap}")
        try:
            from streaming.connect_diagnosis import diagnose
        except ImportError:
            return mapped
        return diagnose(self._bootstrap, self._command_config, self._timeout_s) or mapped

    def _drop(self):
        """Forget the kafka-python client: its metadata is stale. The next call bootstraps afresh."""
        with self._lock:
            stale, self._kafka = self._kafka, None
        if stale is not None:
            try:
                stale.close()
            except Exception:  # a client that lost its brokers may fail to close; it is dropped either way
                pass

    def _confluent_admin(self):
        from confluent_kafka.admin import AdminClient

        with self._lock:
            if self._confluent is None:
                # log_level 0: librdkafka would print connection failures (a stopped broker) to stderr on
                # its own; a failed call surfaces here as an exception, reported once with the poll.
                self._confluent = AdminClient({**self._confluent_settings, "log_level": 0})
            return self._confluent

    def _count(self, requests=1):
        with self._lock:
            self.requests += requests

    def _call(self, api, work, requests=1, doing=None):
        """`work(kafka_python_client)` with retries inside the deadline; errors mapped once."""
        def attempt():
            self._count(requests)
            return work(self._connect())

        def retried(_error, _kind):
            with self._lock:
                self.retried[api] += 1

        return retrying(attempt, doing or api, self._timeout_s, refresh=self._drop, on_retry=retried)

    def _confluent_call(self, api, work, doing=None):
        def attempt():
            self._count()
            return work(self._confluent_admin())

        def retried(_error, _kind):
            with self._lock:
                self.retried[api] += 1

        return retrying(attempt, doing or api, self._timeout_s, on_retry=retried)

    # -- reads --

    def describe_cluster(self):
        def work(kafka):
            cluster = kafka.describe_cluster()
            return cluster["cluster_id"], [{"broker": b["broker_id"], "alive": not b.get("is_fenced", False)}
                                           for b in cluster["brokers"]]
        return self._call(DESCRIBE_CLUSTER, work)

    def list_reassignments(self):
        def work(kafka):
            ongoing = kafka.list_partition_reassignments()
            return [{"topic": tp.topic, "partition": tp.partition, "replicas": r["replicas"],
                     "adding": r["adding_replicas"], "removing": r["removing_replicas"]} for tp, r in ongoing.items()]
        return self._call(LIST_REASSIGNMENTS, work)

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
        return self._call(DESCRIBE_LOG_DIRS, lambda kafka: kafka.describe_log_dirs(brokers=[broker]))

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

        found = self._call(LIST_OFFSETS, work, requests=2 * len(by_leader))
        start, end = found[OffsetSpec.EARLIEST], found[OffsetSpec.LATEST]
        return [{"topic": t, "partition": p, "log_start": start[t, p], "log_end": end[t, p]}
                for t, p in leaders if (t, p) in start and (t, p) in end]

    def describe_throttles(self, topics, brokers):
        from kafka.admin import ConfigResource, ConfigResourceType

        resources = [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        resources += [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in brokers]
        if not resources:
            return [], []
        # kafka-python sends each broker resource to its broker
        described = self._call(DESCRIBE_CONFIGS, lambda kafka: kafka.describe_configs(resources), requests=1 + len(brokers))
        topic_rows = [{"topic": topic, "kind": kind, "value": configs[key]["value"]}
                      for topic, configs in described.get("topic", {}).items()
                      for kind, key in TOPIC_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        broker_rows = [{"broker": int(broker), "kind": kind, "rate": int(configs[key]["value"])}
                       for broker, configs in described.get("broker", {}).items()
                       for kind, key in BROKER_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        return topic_rows, broker_rows

    # -- writes (each idempotent, so a retry after a lost answer is harmless) --

    def alter_throttles(self, changes):
        """IncrementalAlterConfigs for `changes` [(scope, name, kind, op, value)] in one call (kafka-python
        sends one request per broker for broker resources, one for topics). Returns, per change, None or
        Kafka's refusal. `op`: one of streaming.config_keys.OPS. Changes of one resource travel together,
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
        return [None if answers[(scope, str(name))] == "OK" else _refusal(answers[(scope, str(name))])
                for scope, name, _, _, _ in changes]

    def _alter_reassignments(self, targets, doing):
        from kafka import TopicPartition

        request = {TopicPartition(t, p): (None if target is None else list(target)) for (t, p), target in targets.items()}
        answer = self._call(ALTER_REASSIGNMENTS, lambda kafka: kafka.alter_partition_reassignments(request), doing=doing)
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
        answer = self._call(ALTER_LOG_DIRS, lambda kafka: kafka.alter_replica_log_dirs(request))
        return {key: _error_name(answer.get(TopicPartitionReplica(*key), "no answer")) for key in wanted}

    def ensure_topic(self, name, partitions, config):
        """Create `name` (RF min(3, brokers)) unless it exists; either way return only once every partition
        has a leader, so a write or read right after does not meet UNKNOWN_TOPIC_OR_PARTITION or
        LEADER_NOT_AVAILABLE. True when this call created it."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        metadata = self._confluent_call(METADATA, lambda admin: admin.list_topics(timeout=self._timeout_s))
        created = False
        if name not in metadata.topics:
            replication = min(3, len(metadata.brokers))
            topic = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config)

            def create(admin):
                try:
                    admin.create_topics([topic], request_timeout=self._timeout_s)[name].result(self._timeout_s)
                except KafkaException as error:
                    if error.args[0].name() != "TOPIC_ALREADY_EXISTS":  # another instance won the race
                        raise
                    return False
                return True

            created = self._confluent_call(CREATE_TOPICS, create, doing=f"creating topic {name}")
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
                # Idempotent with acks=all: librdkafka retries transient send errors itself (leader change,
                # NOT_ENOUGH_REPLICAS) without duplicating or reordering, within message.timeout.ms.
                self._producer = Producer({**self._confluent_settings, "log_level": 0, "enable.idempotence": True,
                                           "acks": "all", "linger.ms": 20, "compression.type": "lz4",
                                           "message.timeout.ms": int(max(self._timeout_s, 1.0) * 1000)})
            return self._producer

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

        doing = f"writing to {topic}"
        for key, value in keyed_values:
            while True:
                try:
                    producer.produce(topic, key=key.encode("utf-8"), value=value, on_delivery=delivered)
                    break
                except BufferError:  # local queue full: let deliveries drain, then retry this record
                    producer.poll(0.1)
                except KafkaException as error:
                    raise from_kafka_error(error, doing) from error
            producer.poll(0)
        self._count()
        if producer.flush(timeout_s or self._timeout_s) != 0:
            raise from_kafka_error(TimeoutError("not acknowledged in time"), doing)
        if failures:
            raise from_kafka_error(failures[0], doing)

    def close(self):
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(self._timeout_s)
        self._drop()


def _refusal(answer):
    """kafka-python's per-resource answer of alter_configs as one short line."""
    return " ".join(str(answer).split())[:300]


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
