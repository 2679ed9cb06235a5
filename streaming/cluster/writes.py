"""The door's writer (streaming.cluster.admin.ClusterWriter): throttle configs, reassignments (start and cancel),
log-dir moves, and the project's own topics (created, written). Each is idempotent, so a retry after a lost answer
is harmless; the cluster writes answer, per item, None or Kafka's refusal.

`KafkaClusterWriter` is a type of its own over the door's clients and call path (streaming.cluster.door), and it
is made only with the write grant (streaming.cluster.grant), which only streaming.control.applier imports
(pyproject.toml's contract "One writer"): a module that holds the door reads, and only the applier writes.

The project's topics are created and written through librdkafka (confluent-kafka's admin client and idempotent
producer), or, for a config librdkafka cannot log in with (GSSAPI: client_config.ClientConfig.uses_librdkafka),
through kafka-python's, with the same settings: idempotent, acks=all, zstd, the door's request deadline.
"""

import time

from streaming.cluster.door import QUIET_LIBRDKAFKA, close_within, config_acl_resource
from streaming.cluster.grant import WRITE_GRANT
from streaming.cluster.own_topics import DELIVERY_OUTLASTS_FENCING_S
from streaming.vocabulary.config_keys import (APPEND, DELETE, OPS, SET, TOPIC, appends_lead_with_a_comma,
                                              throttle_config_key)
from streaming.vocabulary.echo import first_line
from streaming.vocabulary.errors import (AUTHORIZATION, TOPIC_DELETED, UNKNOWN_TOPIC_OR_PARTITION, ClusterError,
                                         answer_code, from_kafka_error, kind_of_answer)
from streaming.vocabulary.kafka_apis import ALTER_CONFIGS, ALTER_LOG_DIRS, ALTER_REASSIGNMENTS, CREATE_TOPICS
from streaming.vocabulary.throttle_entries import appended

REFUSAL_LIMIT = 200  # characters of a refusal's text kept in its one line
# AlterPartitionReassignments of 5,000 partitions took 0.8-1.7 s on the loaded 2-core machine (load 11-15), so
# 10,000 in one request would not be answered within the door's request deadline (2.5 s): 1,000 take 0.2-0.4 s.
REASSIGNMENTS_PER_REQUEST = 1_000


def _error_name(error):
    """A per-resource answer of kafka-python (None, an error class or an instance) as None or its name."""
    if error is None:
        return None
    name = getattr(error, "__name__", None) or type(error).__name__
    return None if name == "NoError" else name


class KafkaClusterWriter:
    """ClusterWriter over the door `door` (streaming.cluster.door.Door: its clients, `_call`, `_confluent_call`,
    `_metadata`, `_lacks`, `_named`), made only with `grant` streaming.cluster.grant.WRITE_GRANT."""

    def __init__(self, door, grant):
        if grant is not WRITE_GRANT:
            raise PermissionError("the cluster door's writer is the applier's (streaming.control.applier)")
        self._door = door

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
        brokers = sum(1 for scope, _ in resources if scope != TOPIC)

        def work(kafka):
            merged = self._appends_merged(kafka, resources, library_op)
            return self._alter_configs(kafka, [ConfigResource(
                ConfigResourceType.TOPIC if scope == TOPIC else ConfigResourceType.BROKER, name, configs=configs)
                for (scope, name), configs in merged.items()])

        outcome = self._door._call(ALTER_CONFIGS, work, requests=brokers + (len(resources) > brokers))
        answers = {key: outcome.get(key[0], {}).get(key[1], "no answer") for key in resources}
        return [None if answers[(scope, str(name))] == "OK" else self._refusal(answers[(scope, str(name))], scope, name)
                for scope, name, _, _, _ in changes]

    def _appends_merged(self, kafka, resources, library_op):
        """`resources` ((scope, name) -> {key: (op, value)}) as they can be sent to this cluster: as they are, or,
        against brokers that would write an APPEND to an unset list as ",p:b"
        (streaming.vocabulary.config_keys.appends_lead_with_a_comma), with each APPEND turned into a
        SET of the list read just before with the entries appended. Another tool's entry written between that
        read and the SET would be lost: a window of one round trip, only on those brokers."""
        from kafka.admin import ConfigResource, ConfigResourceType

        if not appends_lead_with_a_comma(kafka._manager.broker_version_data.broker_version):
            return resources
        appending = sorted(name for (scope, name), configs in resources.items()
                           if scope == TOPIC and library_op[APPEND] in {op for op, _ in configs.values()})
        if not appending:
            return resources
        self._door._count()
        current = self._door._describe_configs(kafka, [ConfigResource(ConfigResourceType.TOPIC, t) for t in appending])
        current = current.get("topic", {})
        return {(scope, name): {key: (library_op[SET], appended(current.get(name, {}).get(key, {}).get("value"), value))
                                if scope == TOPIC and op == library_op[APPEND] else (op, value)
                                for key, (op, value) in configs.items()}
                for (scope, name), configs in resources.items()}

    def _alter_configs(self, kafka, resources):
        """IncrementalAlterConfigs as kafka-python's alter_configs sends it (each broker resource to its broker,
        the topics to any), but with every request in flight at once: kafka-python awaits each broker's answer
        before sending the next, which made a removal at completion wait for one round trip per broker (each
        forwarded to the controller). Answers as alter_configs gives them."""
        brokers, others = kafka._group_config_resources(resources)
        manager = kafka._manager

        async def send_all():
            sent = [manager.send(kafka._alter_configs_request(rs, False, True), node_id=b) for b, rs in brokers.items()]
            if others:
                sent.append(manager.send(kafka._alter_configs_request(others, False, True)))
            return [answer for future in sent for answer in (await future).responses]

        return kafka._alter_configs_process_responses(manager.run(send_all))

    def _refusal(self, answer, scope, name):
        """kafka-python's per-resource answer of alter_configs ("[Error 31] Name: detail") as one short line;
        a refusal by the authorizer names who lacks AlterConfigs on what (broker configs live on the Cluster)."""
        if kind_of_answer(answer) == AUTHORIZATION:
            return f"not authorized: {self._door._lacks('AlterConfigs', config_acl_resource(scope != TOPIC, name))}"
        if scope == TOPIC and answer_code(answer) == UNKNOWN_TOPIC_OR_PARTITION:
            return TOPIC_DELETED
        return first_line(answer, REFUSAL_LIMIT)

    def _alter_reassignments(self, targets, doing):
        """AlterPartitionReassignments in requests of at most REASSIGNMENTS_PER_REQUEST partitions, each answered
        well within the door's request deadline (a lapse would hold the controller-bound broker as unresponsive).
        A retry sends them all again: the same targets again are accepted again."""
        from kafka import TopicPartition

        request = {TopicPartition(t, p): (None if target is None else list(target)) for (t, p), target in targets.items()}
        items = list(request.items())
        chunks = [dict(items[i:i + REASSIGNMENTS_PER_REQUEST]) for i in range(0, len(items), REASSIGNMENTS_PER_REQUEST)]

        def work(kafka):
            return {tp: error for chunk in chunks for tp, error in kafka.alter_partition_reassignments(chunk).items()}
        answer = self._door._call(ALTER_REASSIGNMENTS, work, requests=len(chunks), doing=doing, needs=("Alter", "Cluster"))
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
        answer = self._door._call(ALTER_LOG_DIRS, lambda kafka: kafka.alter_replica_log_dirs(request), needs=("Alter", "Cluster"))
        return {key: _error_name(answer.get(TopicPartitionReplica(*key), "no answer")) for key in wanted}

    # -- the project's own topics --

    def ensure_topic(self, name, partitions, config, min_insync_replicas=None):
        """Create `name` (RF min(3, brokers); min.insync.replicas capped at that) unless it exists; either
        way return only once every partition has a leader, so a write or read right after does not meet
        UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE. True when this call created it."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        door = self._door
        metadata = door._metadata()
        created = False
        if name not in metadata.topics:
            replication = min(3, len(metadata.brokers))
            if min_insync_replicas is not None:
                config = {**config, "min.insync.replicas": str(min(min_insync_replicas, replication))}
            topic = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config)

            def create(admin):
                try:
                    admin.create_topics([topic], request_timeout=door._timeout_s)[name].result(door._timeout_s)
                except KafkaException as error:
                    if error.args[0].name() != "TOPIC_ALREADY_EXISTS":  # another instance won the race
                        raise
                    return False
                return True

            if door._config.uses_librdkafka:
                created = door._confluent_call(CREATE_TOPICS, create, doing=f"creating topic {name}",
                                               needs=("Create", f"Topic {name}"))
            else:
                created = door._call(CREATE_TOPICS, lambda kafka: _created(kafka, topic, door._deadline_ms()),
                                     doing=f"creating topic {name}", needs=("Create", f"Topic {name}"))
        self._await_leaders(name, metadata)
        return created

    def _await_leaders(self, name, metadata):
        """Return once `name` has a leader for every partition, asking again from `metadata`, the answer at
        hand (a topic that exists with its leaders costs no second request)."""
        timeout_s = self._door._timeout_s
        deadline = time.monotonic() + timeout_s
        while not _led(metadata.topics.get(name)):
            if time.monotonic() > deadline:
                raise ClusterError(f"topic {name}: no leader for every partition within {timeout_s:g}s")
            time.sleep(0.1)
            metadata = self._door._metadata()

    def _producer_client(self):
        from confluent_kafka import Producer

        door = self._door
        if not door._config.uses_librdkafka:
            return self._kafka_python_producer()
        with door._lock:
            if door._producer is None:
                door._fatal = None
                # Idempotent with acks=all: librdkafka retries transient send errors itself (leader change,
                # NOT_ENOUGH_REPLICAS) without duplicating or reordering, within message.timeout.ms.
                # zstd: our own reader (kafka-python) decodes it with the zstandard package we ship; it
                # has no lz4 codec. error_cb: a fatal error (e.g. no producer id: IdempotentWrite or Write
                # refused) is said only there; later calls say only "_FATAL". A request (and a connection's set-up)
                # has the door's deadline, not librdkafka's 60 s: a ProduceRequest in flight to a partition leader
                # that hangs (SIGSTOP) is otherwise waited on until the record's own timeout fails the write, even
                # after Kafka fenced that leader and elected another (measured: a batch's write failed 20 s after
                # the stop, the query restarted); timed out, it is sent again where the metadata says, idempotently.
                door._producer = Producer({**door._confluent_settings, "logger": QUIET_LIBRDKAFKA,
                                           "error_cb": self._client_error, "enable.idempotence": True,
                                           "acks": "all", "linger.ms": 20, "compression.type": "zstd",
                                           "socket.timeout.ms": door._deadline_ms(),
                                           "socket.connection.setup.timeout.ms": door._deadline_ms(),
                                           "message.timeout.ms": int(max(door._timeout_s, DELIVERY_OUTLASTS_FENCING_S)
                                                                     * 1000)})
            return door._producer

    def _kafka_python_producer(self):
        """kafka-python's producer, with the settings of librdkafka's above (`_producer_client`)."""
        from kafka import KafkaProducer

        door = self._door
        with door._lock:
            if door._producer is None:
                settings = {k: v for k, v in door._client_settings(door._timeout_s).items()
                            if k not in ("request_timeout_ms", "bootstrap_timeout_ms")}
                door._producer = KafkaProducer(
                    client_id="reassign-monitor", enable_idempotence=True, acks="all", linger_ms=20,
                    compression_type="zstd", allow_auto_create_topics=False, request_timeout_ms=door._deadline_ms(),
                    delivery_timeout_ms=int(max(door._timeout_s, DELIVERY_OUTLASTS_FENCING_S) * 1000),
                    max_block_ms=int(door._timeout_s * 1000),
                    bootstrap_timeout_ms=int(door._timeout_s * 1000), **settings)
            return door._producer

    def _produce_with_kafka_python(self, producer, topic, keyed_values, timeout_s):
        """`produce` through kafka-python's producer: every record acknowledged, or our exception for the first
        that was not."""
        door = self._door
        try:
            sent = [producer.send(topic, key=key.encode("utf-8"), value=value) for key, value in keyed_values]
            door._count()
            producer.flush(timeout=timeout_s or door._timeout_s)
            failed = next((future.exception for future in sent if future.failed()), None)
        except Exception as error:  # a timeout, a refused InitProducerId, a closed client
            failed = error
        if failed is not None:
            with door._lock:  # a producer that failed may be unable to send again: the next write makes another
                producer, door._producer = door._producer, None
            close_within(producer, door._timeout_s)
            raise door._named(from_kafka_error(failed, f"writing to {topic}"), ("Write", f"Topic {topic}"))
        if not all(future.is_done for future in sent):
            raise from_kafka_error(TimeoutError("not acknowledged in time"), f"writing to {topic}")

    def _client_error(self, error):
        if error.fatal():
            self._door._fatal = error

    def _produce_failure(self, error, topic):
        """Our exception for a failed write; a producer that met a fatal error is dropped (it cannot send
        again), and its fatal error, the cause, is what is reported."""
        door = self._door
        cause = door._fatal or error
        if door._fatal is not None:
            with door._lock:
                door._producer = None
        return door._named(from_kafka_error(cause, f"writing to {topic}"), ("Write", f"Topic {topic}"))

    def produce(self, topic, keyed_values, timeout_s=None):
        """Write (key str, value bytes) pairs to `topic` and return once every one is acknowledged by the
        in-sync replicas; raise our exception for the first that was not (the rest may have been written:
        every record of this project is keyed, so writing it again supersedes)."""
        from confluent_kafka import KafkaException

        producer = self._producer_client()
        if not self._door._config.uses_librdkafka:
            return self._produce_with_kafka_python(producer, topic, keyed_values, timeout_s)
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
            self._door._count()
            unsent = producer.flush(timeout_s or self._door._timeout_s)
        except (KafkaException, SystemError) as error:
            # SystemError: confluent-kafka reports an error raised while it ran a callback this way; the
            # error itself is its __context__.
            raise self._produce_failure(error.__context__ or error if isinstance(error, SystemError) else error,
                                        topic) from error
        if failures or self._door._fatal is not None:
            raise self._produce_failure(failures[0] if failures else self._door._fatal, topic)
        if unsent != 0:
            raise from_kafka_error(TimeoutError("not acknowledged in time"), f"writing to {topic}")


def _created(kafka, topic, timeout_ms):
    """CreateTopics of the confluent-kafka NewTopic `topic` through kafka-python's admin client: True when this call
    created it, False when it existed (another instance won the race)."""
    from kafka.errors import TopicAlreadyExistsError

    try:
        kafka.create_topics({topic.topic: {"num_partitions": topic.num_partitions,
                                           "replication_factor": topic.replication_factor, "configs": topic.config}},
                            timeout_ms=timeout_ms)
    except TopicAlreadyExistsError:
        return False
    return True


def _led(topic):
    """Whether a topic's metadata shows it without error and with a leader for every partition."""
    return topic is not None and topic.error is None and bool(topic.partitions) and \
        all(p.leader >= 0 for p in topic.partitions.values())
