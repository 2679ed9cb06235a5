"""Ownership records: which throttles this tool set, so removal is exact and survives crashes.

`execute` writes an `Ownership` record BEFORE it alters any config (state `pending`), marks it
`started` once AlterPartitionReassignments accepted the moves (or `aborted` when it rolled back), and
the janitor marks it `done` once every throttle it claims is gone (removed, restored, or changed by
someone else). A record claims:

- topic entries `p:b` it added to `leader|follower.replication.throttled.replicas` (entries that were
  already there and not ours are foreign: never claimed, never removed);
- broker rates it set, each with the `prior` value it replaced (None: there was none). When the prior
  value was itself set by another active record of ours, the prior of that record is carried over,
  so the value restored at the end is the one that existed before any of our throttles.

Store: a compacted Kafka topic (default `reassignment-monitor-throttles`, one partition so it is
totally ordered, replication factor min(3, brokers)), key = request id, value = the record as JSON.
The latest record per request id wins; `done` records stay as an audit trail (one per request).

Request ids: `YYYYMMDDTHHMMSS.mmmZ-xxxx` (UTC, milliseconds, 4 random hex digits). `new_request_id`
bumps the time past the newest id in the store, so ids sort in creation order (monotonic for one
store); the random suffix keeps two concurrent `execute` runs apart.

`OwnershipStore` is the small protocol the janitor needs; `MemoryStore` is the fake for tests.
"""

import json
import logging
import secrets
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Protocol

from sinks.throttle_entries import entry, parse_entry
from streaming.errors import ClusterError

SCHEMA_ID = "kafka-reassign-monitor/ownership/v1"
DEFAULT_TOPIC = "reassignment-monitor-throttles"

PENDING, STARTED, ABORTED, DONE = STATES = ("pending", "started", "aborted", "done")
EXECUTE, OBSERVED = ORIGINS = ("execute", "observed")


@dataclass(frozen=True)
class Move:
    """One partition of a request: `sources` are the replicas it moves from (the current replicas, or the
    original ones of an ongoing reassignment), `target` the replica list it asked for."""
    topic: str
    partition: int
    sources: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def destinations(self):
        return tuple(b for b in self.target if b not in self.sources)


@dataclass(frozen=True)
class EntryClaim:
    topic: str
    kind: str  # leader | follower
    partition: int
    broker: int


@dataclass(frozen=True)
class RateClaim:
    broker: int
    kind: str  # leader | follower | alter_log_dirs
    rate: int
    prior: int | None = None


@dataclass(frozen=True)
class Ownership:
    request_id: str
    state: str
    created_ms: int
    updated_ms: int
    auto_remove: bool = True
    origin: str = EXECUTE
    moves: tuple[Move, ...] = ()
    entries: tuple[EntryClaim, ...] = ()
    rates: tuple[RateClaim, ...] = ()
    note: str | None = None

    def with_state(self, state, now_ms, note=None):
        return replace(self, state=state, updated_ms=int(now_ms), note=note if note is not None else self.note)

    @property
    def active(self):
        return self.state != DONE


def to_json(record):
    entries = {}
    for claim in record.entries:
        entries.setdefault((claim.topic, claim.kind), []).append(entry(claim.partition, claim.broker))
    return {
        "schema": SCHEMA_ID, "request_id": record.request_id, "state": record.state,
        "created_ms": record.created_ms, "updated_ms": record.updated_ms, "auto_remove": record.auto_remove,
        "origin": record.origin, "note": record.note,
        "moves": [{"topic": m.topic, "partition": m.partition, "sources": list(m.sources), "target": list(m.target)}
                  for m in record.moves],
        "entries": [{"topic": t, "kind": k, "entries": sorted(e, key=parse_entry)} for (t, k), e in sorted(entries.items())],
        "rates": [{"broker": r.broker, "kind": r.kind, "rate": r.rate, "prior": r.prior} for r in record.rates],
    }


def from_json(value):
    if value.get("schema") != SCHEMA_ID:
        raise ValueError(f"not an ownership record: schema {value.get('schema')!r}")
    return Ownership(
        request_id=value["request_id"], state=value["state"], created_ms=int(value["created_ms"]),
        updated_ms=int(value["updated_ms"]), auto_remove=bool(value.get("auto_remove", True)),
        origin=value.get("origin", EXECUTE), note=value.get("note"),
        moves=tuple(Move(m["topic"], int(m["partition"]), tuple(m["sources"]), tuple(m["target"]))
                    for m in value.get("moves", ())),
        entries=tuple(EntryClaim(e["topic"], e["kind"], *parse_entry(text))
                      for e in value.get("entries", ()) for text in e["entries"]),
        rates=tuple(RateClaim(int(r["broker"]), r["kind"], int(r["rate"]), None if r.get("prior") is None else int(r["prior"]))
                    for r in value.get("rates", ())),
    )


def encode(record):
    return json.dumps(to_json(record), separators=(",", ":")).encode("utf-8")


def decode(data):
    return from_json(json.loads(data.decode("utf-8")))


def _id_time(request_id):
    try:
        stamp = datetime.strptime(request_id[:19], "%Y%m%dT%H%M%S.%f").replace(tzinfo=timezone.utc)
    except ValueError:
        return 0
    return int(stamp.timestamp() * 1000)


def new_request_id(existing_ids, now_ms):
    ms = max([int(now_ms)] + [_id_time(i) + 1 for i in existing_ids])
    stamp = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return f"{stamp:%Y%m%dT%H%M%S}.{ms % 1000:03d}Z-{secrets.token_hex(2)}"


class OwnershipStore(Protocol):
    def refresh(self) -> None: ...  # read what others wrote since the last call
    def records(self) -> list[Ownership]: ...  # the latest record per request id, done ones included
    def put(self, record: Ownership) -> None: ...  # durable (acknowledged by the cluster) when it returns


@dataclass
class MemoryStore:
    """The in-memory store: for tests, and the shape every store keeps locally."""
    latest: dict = field(default_factory=dict)
    writes: list = field(default_factory=list)

    @classmethod
    def of(cls, *records):
        return cls(latest={r.request_id: r for r in records})

    def refresh(self):
        pass

    def records(self):
        return sorted(self.latest.values(), key=lambda r: r.request_id)

    def put(self, record):
        self.latest[record.request_id] = record
        self.writes.append(record)


_SILENT = logging.getLogger("reassign-monitor.ownership.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


class KafkaOwnershipStore:
    """The compacted topic, read fully on open and incrementally on `refresh()`; `put()` waits for acks=all.

    The reader is a kafka-python consumer without a group (group_id=None): it assigns the one partition
    and seeks, never sends FindCoordinator or commits, so it needs Read and Describe on this topic and no
    ACL on any consumer group (confluent-kafka's Consumer cannot be created without a group.id, and
    with one it asks for the group's coordinator even when it only assigns)."""

    PARTITION = 0

    def __init__(self, bootstrap, command_config=None, topic=DEFAULT_TOPIC, timeout_s=10.0, create=False):
        from confluent_kafka import Producer
        from kafka import KafkaConsumer, TopicPartition

        from streaming import client_config
        from streaming.acls import principal_of

        self.topic, self.timeout_s = topic, timeout_s
        self._principal = principal_of(command_config)
        # librdkafka's own log lines (transient warnings, and a FATAL line when the idempotent producer is
        # refused its id) are not the operator's business: failures surface as exceptions here, one line.
        settings = {**client_config.confluent_settings(command_config, bootstrap), "logger": _SILENT}
        if create:
            ensure_topic(settings, topic, timeout_s, self._principal)
        self._latest = {}
        self._producer = Producer({**settings, "enable.idempotence": True, "acks": "all", "linger.ms": 0})
        timeout_ms = int(timeout_s * 1000)
        try:
            # fetch_max_wait_ms short: a catch-up poll should not wait for records that will not come.
            self._consumer = KafkaConsumer(
                bootstrap_servers=bootstrap, client_id="reassign-monitor-ownership", group_id=None,
                enable_auto_commit=False, auto_offset_reset="earliest", allow_auto_create_topics=False,
                fetch_max_wait_ms=20, request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms,
                **client_config.kafka_python_settings(command_config))
        except Exception as error:  # kafka-python raises several types on bootstrap; mapped once below
            raise self._failure(error, "reading", "Describe") from error
        self._tp = TopicPartition(topic, self.PARTITION)
        self._next = 0
        self.refresh()

    def _failure(self, error, doing, operation):
        from streaming.acls import refusal

        return refusal(error, f"{doing} ownership topic {self.topic}", operation, f"Topic {self.topic}", self._principal)

    def refresh(self):
        try:
            if self.PARTITION not in self._consumer.partitions_for_topic(self.topic):
                return  # the topic does not exist yet, so no records
            timeout_ms = int(self.timeout_s * 1000)
            low = self._consumer.beginning_offsets([self._tp], timeout_ms)[self._tp]
            high = self._consumer.end_offsets([self._tp], timeout_ms)[self._tp]
        except Exception as error:
            raise self._failure(error, "reading", "Describe") from error
        start = max(self._next, low)
        if start >= high:
            return
        # Assigned only while catching up: nothing is fetched in between.
        self._consumer.assign([self._tp])
        self._consumer.seek(self._tp, start)
        try:
            self._catch_up(high)
        except ClusterError:
            raise
        except Exception as error:
            raise self._failure(error, "reading", "Read") from error
        finally:
            self._consumer.unsubscribe()

    def _catch_up(self, high):
        deadline = time.monotonic() + self.timeout_s
        while self._next < high:
            if time.monotonic() > deadline:
                raise ClusterError(f"reading ownership topic {self.topic}: timed out at offset {self._next} of {high}")
            for message in self._consumer.poll(timeout_ms=500).get(self._tp, ()):
                self._apply(message.key.decode("utf-8"), message.value)
                self._next = message.offset + 1

    def _apply(self, key, value):
        if value is None:
            self._latest.pop(key, None)  # tombstone
            return
        try:
            self._latest[key] = decode(value)
        except (ValueError, KeyError) as error:  # a record we cannot read claims nothing we may touch
            print(f"ownership topic {self.topic}: skipping unreadable record {key}: {error}", file=sys.stderr)

    def records(self):
        return sorted(self._latest.values(), key=lambda r: r.request_id)

    def put(self, record):
        from confluent_kafka import KafkaException

        failures = []

        def delivered(error, _message):
            if error is not None:
                failures.append(error)

        try:
            self._producer.produce(self.topic, key=record.request_id.encode("utf-8"), value=encode(record),
                                   on_delivery=delivered)
            unsent = self._producer.flush(self.timeout_s)
        except (KafkaException, SystemError) as error:
            # A fatal producer error (no idempotent producer id: Write on no topic) reaches us from inside the
            # delivery callback, wrapped by confluent-kafka in a SystemError whose context is the KafkaException.
            cause = error.__context__ if isinstance(error, SystemError) and error.__context__ else error
            raise self._failure(cause, f"writing record {record.request_id} to", "Write") from error
        if failures:
            raise self._failure(failures[0], f"writing record {record.request_id} to", "Write")
        if unsent:
            raise ClusterError(f"writing ownership record {record.request_id} to {self.topic}: not acknowledged in time")
        self._latest[record.request_id] = record

    def close(self):
        self._consumer.close()
        self._producer.flush(self.timeout_s)


def ensure_topic(settings, topic, timeout_s, principal=None):
    """Create the ownership topic (compacted, one partition, RF min(3, brokers)) unless it exists."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    from streaming.acls import refusal

    admin = AdminClient(settings)
    metadata = admin.list_topics(timeout=timeout_s)
    if topic in metadata.topics:
        return False
    replication = min(3, len(metadata.brokers))
    new = NewTopic(topic, num_partitions=1, replication_factor=replication,
                   config={"cleanup.policy": "compact", "min.insync.replicas": str(min(2, replication))})
    try:
        admin.create_topics([new], request_timeout=timeout_s)[topic].result(timeout_s)
    except KafkaException as error:
        if error.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise refusal(error, f"creating ownership topic {topic}", "Create", f"Topic {topic}", principal) from error
    return True
