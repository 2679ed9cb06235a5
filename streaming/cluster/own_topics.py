"""The door's reads of the project's own topics (progress, ownership): ask whether one exists, and read a
partition back without a consumer group. Creating and writing them is the writer's (streaming.cluster.writes)."""

import time

from streaming.vocabulary.errors import NodeGone
from streaming.vocabulary.kafka_apis import READ

# After a broker is SIGKILLed, a write every in-sync replica acknowledges (acks=all) waits until Kafka fences
# the dead broker (broker.session.timeout.ms, 9 s by default) and moves its leaderships and ISR places:
# measured on the local cluster, 7.0 s after a follower's kill and 11.6 s after the active controller's.
# A record may take that long before librdkafka gives up on it, so a write in that window is late, not
# failed (a failed write restarts the streaming query: 25-30 s without a batch, measured). The caller's
# flush still bounds how long it waits.
DELIVERY_OUTLASTS_FENCING_S = 20.0
# A read of our own topics asks its partition's leader for offsets in attempts this long, checking in between
# whether that leader is held (SIGKILLed, or a request to it lapsed): the controller reads the ownership topic
# every second.
OFFSETS_ATTEMPT_S = 0.5


class OwnTopics:
    """Mixed into the door (streaming.cluster.door.Door): uses its clients, `_metadata` and `_retrying`."""

    def topic_exists(self, name):
        return name in self._metadata().topics

    def _own_topic_consumer(self, client_id, fetch_max_wait_ms, **settings):
        """A consumer of our own topics. No group (group_id=None): it assigns and seeks, never sends FindCoordinator or
        commits, so it needs Read and Describe on the topic and no ACL on a consumer group. Its requests have the
        door's deadline (unless `settings` say otherwise) and are routed like the admin client's (door._routed): a
        held node is not waited on."""
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(client_id=client_id, group_id=None, enable_auto_commit=False,
                                 allow_auto_create_topics=False, fetch_max_wait_ms=fetch_max_wait_ms,
                                 metrics_enabled=False, **{**self._client_settings(self._timeout_s), **settings})
        self._route_sends(consumer._manager)
        return consumer

    def _reader_client(self):
        with self._lock:
            if self._reader is None:
                # fetch_max_wait_ms short: a catch-up poll should not wait for records that will not come.
                self._reader = self._own_topic_consumer("reassign-monitor-reader", 20, auto_offset_reset="earliest")
            return self._reader

    def _drop_reader(self):
        self._forget("_reader")

    def records_came(self, topic, partition, wait_s):
        """Whether a record was written to `topic`/`partition` since this door's last call (the first call starts at
        the end), waiting up to `wait_s` for one: a Fetch the partition's leader holds until a record comes
        (fetch_max_wait_ms), on a consumer of its own, so that the reads of `read_log` never wait behind it. The job's
        quiet controller looks once a trigger interval and is woken by an `execute`'s ownership record at once
        (streaming.control.controller). Its requests' deadline is `wait_s` more than the door's: the leader holds the
        Fetch that long before it answers. False when it cannot tell (no leader, a failure: the consumer is dropped
        and made again next call); the caller's own looks read anyway."""
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        wait_ms = int(wait_s * 1000)
        try:
            if self._watcher is None:  # one caller (the controller's watch thread): made outside the door's lock
                watcher = self._own_topic_consumer("reassign-monitor-watcher", wait_ms,
                                                   request_timeout_ms=wait_ms + self._deadline_ms())
                watcher.assign([tp])
                watcher.seek_to_end(tp)
                self._watcher = watcher
            return bool(self._watcher.poll(timeout_ms=wait_ms, max_records=1))
        except Exception:
            self._forget("_watcher")
            return False

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
            a deadline, and every reader of our topics waits behind it (the job's controller and batches stopped)."""
            known = reader._manager.cluster.partitions_for_topic(topic)
            if known is not None:
                return known
            described = self._metadata().topics.get(topic)
            return set(described.partitions) if described is not None and described.error is None else set()

        def catch_up():
            reader = self._reader_client()
            if partition not in partitions_of(reader):
                return []
            # The end first: a read that finds nothing new (the controller's, once a trigger while quiet) asks
            # nothing more.
            self._count()
            high = offsets(reader, lambda r, timeout_ms: r.end_offsets([tp], timeout_ms))
            records = []
            if start >= high:
                return records
            self._count()
            low = offsets(reader, lambda r, timeout_ms: r.beginning_offsets([tp], timeout_ms))
            position = max(start, low)
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

