"""The door's calls on the project's own topics (progress, ownership): create one and wait for its
leaders, ask whether one exists, write keyed records, and read a partition back without a consumer group."""

import time

from streaming.cluster.door import QUIET_LIBRDKAFKA
from streaming.vocabulary.errors import ClusterError, NodeGone, from_kafka_error
from streaming.vocabulary.kafka_apis import CREATE_TOPICS, READ

# After a broker is SIGKILLed, a write every in-sync replica acknowledges (acks=all) waits until Kafka fences
# the dead broker (broker.session.timeout.ms, 9 s by default) and moves its leaderships and ISR places:
# measured on the local cluster, 7.0 s after a follower's kill and 11.6 s after the active controller's.
# A record may take that long before librdkafka gives up on it, so a write in that window is late, not
# failed (a failed write restarts the streaming query: 25-30 s without a batch, measured). The caller's
# flush still bounds how long it waits.
DELIVERY_OUTLASTS_FENCING_S = 20.0
# A read of our own topics asks its partition's leader for offsets in attempts this long, checking in between
# whether that leader is held (SIGKILLed, or a request to it lapsed): the driver's watch reads the ownership topic
# every second.
OFFSETS_ATTEMPT_S = 0.5


class OwnTopics:
    """Mixed into the door (streaming.cluster.door.Door): uses its clients, `_confluent_call`, `_metadata`,
    `_retrying` and `_named`."""

    def ensure_topic(self, name, partitions, config, min_insync_replicas=None):
        """Create `name` (RF min(3, brokers); min.insync.replicas capped at that) unless it exists; either
        way return only once every partition has a leader, so a write or read right after does not meet
        UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE. True when this call created it."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        metadata = self._metadata()
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
        self._await_leaders(name, metadata)
        return created

    def _await_leaders(self, name, metadata):
        """Return once `name` has a leader for every partition, asking again from `metadata`, the answer at
        hand (a topic that exists with its leaders costs no second request)."""
        deadline = time.monotonic() + self._timeout_s
        while not _led(metadata.topics.get(name)):
            if time.monotonic() > deadline:
                raise ClusterError(f"topic {name}: no leader for every partition within {self._timeout_s:g}s")
            time.sleep(0.1)
            metadata = self._metadata()

    def topic_exists(self, name):
        return name in self._metadata().topics

    def _producer_client(self):
        from confluent_kafka import Producer

        with self._lock:
            if self._producer is None:
                self._fatal = None
                # Idempotent with acks=all: librdkafka retries transient send errors itself (leader change,
                # NOT_ENOUGH_REPLICAS) without duplicating or reordering, within message.timeout.ms.
                # zstd: our own reader (kafka-python) decodes it with the zstandard package we ship; it
                # has no lz4 codec. error_cb: a fatal error (e.g. no producer id: IdempotentWrite or Write
                # refused) is said only there; later calls say only "_FATAL". A request (and a connection's set-up)
                # has the door's deadline, not librdkafka's 60 s: a ProduceRequest in flight to a partition leader
                # that hangs (SIGSTOP) is otherwise waited on until the record's own timeout fails the write, even
                # after Kafka fenced that leader and elected another (measured: a batch's write failed 20 s after
                # the stop, the query restarted); timed out, it is sent again where the metadata says, idempotently.
                self._producer = Producer({**self._confluent_settings, "logger": QUIET_LIBRDKAFKA,
                                           "error_cb": self._client_error, "enable.idempotence": True,
                                           "acks": "all", "linger.ms": 20, "compression.type": "zstd",
                                           "socket.timeout.ms": self._deadline_ms(),
                                           "socket.connection.setup.timeout.ms": self._deadline_ms(),
                                           "message.timeout.ms": int(max(self._timeout_s, DELIVERY_OUTLASTS_FENCING_S)
                                                                     * 1000)})
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
                # No group (group_id=None): it assigns and seeks, never sends FindCoordinator or commits, so
                # it needs Read and Describe on the topic and no ACL on a consumer group. fetch_max_wait_ms
                # short: a catch-up poll should not wait for records that will not come. Its requests have the
                # door's deadline and are routed like the admin client's (door._routed): a held node is not waited on.
                self._reader = KafkaConsumer(
                    client_id="reassign-monitor-reader", group_id=None, enable_auto_commit=False,
                    auto_offset_reset="earliest", allow_auto_create_topics=False, fetch_max_wait_ms=20,
                    **self._client_settings(self._timeout_s))
                self._route_sends(self._reader._manager)
            return self._reader

    def _drop_reader(self):
        self._forget("_reader")

    def read_log(self, topic, partition, start):
        """Every record of `topic`/`partition` from offset `start` (or the log start, if later) to the end
        as of this call: [(offset, key bytes, value bytes or None)]. A topic that does not exist has none."""
        from kafka import TopicPartition

        from kafka.errors import KafkaTimeoutError

        tp = TopicPartition(topic, partition)

        def unless_leader_held(reader):
            """NodeGone at once when the partition's leader is held (its connection was closed or refused, or a
            request to it lapsed: door._routed), not after the whole deadline. Its data is unreadable until Kafka
            has fenced it and elected another leader (9 s after a SIGKILL or SIGSTOP by default); the reader is
            dropped so that the next read asks afresh where the leader is."""
            leader = reader._manager.cluster.leader_for_partition(tp)
            why = None if leader is None else self._held_why(leader)
            if why is not None:
                self._drop_reader()
                raise NodeGone(f"{READ}: broker {leader}, the leader of {topic}-{partition}, did not answer ({why})")

        def offsets(reader, ask):
            """`ask(reader, timeout_ms)` (ListOffsets, to the partition's leader), in attempts of at most
            OFFSETS_ATTEMPT_S, each after `unless_leader_held`."""
            deadline = time.monotonic() + self._timeout_s
            while True:
                unless_leader_held(reader)
                left_s = deadline - time.monotonic()
                try:
                    return ask(reader, int(max(0.05, min(left_s, OFFSETS_ATTEMPT_S)) * 1000))[tp]
                except KafkaTimeoutError:
                    if left_s <= OFFSETS_ATTEMPT_S:
                        raise

        def partitions_of(reader):
            """The topic's partitions, from the reader's metadata or else a Metadata within the timeout (none when
            it does not exist). Not KafkaConsumer.partitions_for_topic: it waits for its metadata update without
            a deadline, and every reader of our topics waits behind it (the job's watch and batches stopped)."""
            known = reader._manager.cluster.partitions_for_topic(topic)
            if known is not None:
                return known
            described = self._metadata().topics.get(topic)
            return set(described.partitions) if described is not None and described.error is None else set()

        def catch_up():
            reader = self._reader_client()
            self._count(2)
            if partition not in partitions_of(reader):
                return []
            low = offsets(reader, lambda r, timeout_ms: r.beginning_offsets([tp], timeout_ms))
            high = offsets(reader, lambda r, timeout_ms: r.end_offsets([tp], timeout_ms))
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
                    unless_leader_held(reader)
                    self._count()
                    for message in reader.poll(timeout_ms=500).get(tp, ()):
                        records.append((message.offset, message.key, message.value))
                        position = message.offset + 1
            finally:
                reader.unsubscribe()
            return records

        # The reader is one KafkaConsumer, shared by the driver's threads: one read at a time, and a read that
        # waited a whole timeout for another fails (the caller reads again later) rather than queue behind it.
        if not self._reading.acquire(timeout=self._timeout_s):
            raise TimeoutError(f"{READ} of {topic}: another read of our topics has taken {self._timeout_s:g}s")
        try:
            return self._retrying(READ, catch_up, f"reading {topic}", ("Read", f"Topic {topic}"),
                                  drop=self._drop_reader)
        finally:
            self._reading.release()


def _led(topic):
    """Whether a topic's metadata shows it without error and with a leader for every partition."""
    return topic is not None and topic.error is None and bool(topic.partitions) and \
        all(p.leader >= 0 for p in topic.partitions.values())
