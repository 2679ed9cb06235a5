"""The ownership topic, as one store: the ownership records (streaming.control.ownership.records), the plans
(streaming.control.ownership.plans: their parts and headers) and the plans' advancer leases
(streaming.control.ownership.leases) share one compacted, one-partition topic, so one reader replays it in
one order for all three.

`Ledger` is the small protocol everything that reads or writes ownership needs; `KafkaLedger` reads the topic
fully on open and incrementally on `refresh()` through the door it is given (which retries transient errors and
names the principal, operation and topic of a refusal), and writes with acks=all (durable when a put returns)
through the writer each put is handed (streaming.cluster.admin.ClusterWriter): only the one writer,
streaming.control.applier.Applier, holds one, so only it writes. `MemoryLedger` is the fake. `NotedReads` hands
what each read shows to its owner before anyone acts on it (the job's controller: which requests Kafka accepted).
"""

import sys
import threading
from dataclasses import dataclass, field
from typing import Protocol

from streaming.control.ownership import leases as leases_codec
from streaming.control.ownership.leases import Lease
from streaming.control.ownership.plans import Plan, decode_header, decode_part, records_of
from streaming.control.ownership.records import PLAN_KEY_PREFIX, Ownership, decode, encode
from streaming.vocabulary.defaults import OWNERSHIP_TOPIC

OWNERSHIP_TOPIC_CONFIG = {"cleanup.policy": "compact"}
# With acks=all a record is on two brokers before execute alters any config (capped at the replication
# factor on smaller clusters, where Kafka would otherwise refuse every write).
OWNERSHIP_MIN_INSYNC_REPLICAS = 2


class Ledger(Protocol):
    def refresh(self) -> None: ...  # read what others wrote since the last call
    def records(self) -> list[Ownership]: ...  # the latest ownership record per request id, done ones included
    def plans(self) -> list[Plan]: ...  # every plan that can be read whole
    def leases(self, request_id: str) -> list[Lease]: ...  # a plan's advancer claims, in log order
    # The writes, through `writer` (streaming.cluster.admin.ClusterWriter), which only the applier holds:
    def put(self, record: Ownership, writer) -> None: ...  # durable (acknowledged by the cluster) when it returns
    def put_plan(self, plan: Plan, writer, with_parts: bool = False) -> None: ...  # parts first, then the header
    def put_lease(self, lease: Lease, writer) -> None: ...  # read back by refresh(): the log's order decides
    # Whether anyone wrote a record since the last call, waiting up to wait_s for one (the quiet controller's wake-up):
    def written(self, wait_s: float) -> bool: ...


def find_plan(ledger, request_id):
    """The plan `request_id`, or None."""
    return next((p for p in ledger.plans() if p.request_id == request_id), None)


def _skipping(topic, key, error):
    print(f"ownership topic {topic}: skipping unreadable record {key}: {error}", file=sys.stderr)


class KafkaLedger:
    PARTITION = 0

    def __init__(self, reader, topic=OWNERSHIP_TOPIC):
        self.reader, self.topic = reader, topic
        self._records, self._headers, self._parts, self._leases = {}, {}, {}, {}
        self._next = 0
        self.refresh()

    def written(self, wait_s):
        return self.reader.records_came(self.topic, self.PARTITION, wait_s)

    def refresh(self):
        for offset, key, value in self.reader.read_log(self.topic, self.PARTITION, self._next):
            self._next = offset + 1
            self._apply(key.decode("utf-8"), value)

    def _apply(self, key, value):
        try:
            if key.startswith(PLAN_KEY_PREFIX):
                self._apply_plan_key(key[len(PLAN_KEY_PREFIX):], value)
            elif value is None:
                self._records.pop(key, None)  # tombstone
            else:
                self._records[key] = decode(value)
        except (ValueError, KeyError) as error:  # a record we cannot read claims nothing we may touch
            _skipping(self.topic, key, error)

    def _apply_plan_key(self, rest, value):
        if value is None:
            return
        if rest.endswith(leases_codec.LEASE_KEY_SUFFIX):
            claim = leases_codec.decode(value)
            self._leases.setdefault(claim.request_id, []).append(claim)
        elif ":" in rest:
            request_id, _ = rest.rsplit(":", 1)
            index, moves = decode_part(value)
            self._parts.setdefault(request_id, {})[index] = moves
        else:
            self._headers[rest] = value

    def records(self):
        return sorted(self._records.values(), key=lambda r: r.request_id)

    def plans(self):
        out = []
        for request_id, header in sorted(self._headers.items()):
            try:
                out.append(decode_header(header, self._parts.get(request_id, {})))
            except (ValueError, KeyError) as error:
                _skipping(self.topic, f"{PLAN_KEY_PREFIX}{request_id}", error)
        return out

    def leases(self, request_id):
        return list(self._leases.get(request_id, ()))

    def put(self, record, writer):
        writer.produce(self.topic, [(record.request_id, encode(record))])
        self._records[record.request_id] = record

    def put_plan(self, plan, writer, with_parts=False):
        written = records_of(plan, with_parts)
        if with_parts:
            writer.produce(self.topic, written[:-1])
            self._parts[plan.request_id] = dict(decode_part(value) for _, value in written[:-1])
        writer.produce(self.topic, written[-1:])  # the header only after every part is acknowledged
        self._headers[plan.request_id] = written[-1][1]

    def put_lease(self, lease, writer):
        writer.produce(self.topic, [(leases_codec.lease_key(lease.request_id), leases_codec.encode(lease))])


@dataclass
class MemoryLedger:
    """The in-memory ledger: for tests (a put needs no writer). `writes`: every ownership record put, in order;
    `claims`: every lease."""
    latest: dict = field(default_factory=dict)
    writes: list = field(default_factory=list)
    plan_headers: dict = field(default_factory=dict)
    claims: list = field(default_factory=list)
    came: threading.Event = field(default_factory=threading.Event)  # a put since the last `written`

    @classmethod
    def of(cls, *records):
        return cls(latest={r.request_id: r for r in records})

    def refresh(self):
        pass

    def records(self):
        return sorted(self.latest.values(), key=lambda r: r.request_id)

    def plans(self):
        return [self.plan_headers[k] for k in sorted(self.plan_headers)]

    def leases(self, request_id):
        return [claim for claim in self.claims if claim.request_id == request_id]

    def written(self, wait_s):
        came = self.came.wait(wait_s)
        self.came.clear()
        return came

    def put(self, record, writer=None):
        self.latest[record.request_id] = record
        self.writes.append(record)
        self.came.set()

    def put_plan(self, plan, writer=None, with_parts=False):
        self.plan_headers[plan.request_id] = plan

    def put_lease(self, lease, writer=None):
        self.claims.append(lease)


class NotedReads:
    """A Ledger whose every read (`refresh`) hands the records it shows to `noted(records)` before its caller sees
    them. The job's controller notes there the requests Kafka accepted: whichever of its duties reads the ledger
    first after `execute` wrote (a tick, a batch's janitor, a sweep, a plan's step), a request is noted by that read,
    even if the same duty then marks it `done`."""

    def __init__(self, ledger, noted):
        self.ledger, self.noted = ledger, noted

    def refresh(self):
        self.ledger.refresh()
        self.noted(self.ledger.records())

    def __getattr__(self, name):  # every other read and every write goes to the ledger as it is
        return getattr(self.ledger, name)


def ensure_ownership_topic(applier, topic):
    """Create the ownership topic (compacted, one partition so it is totally ordered, RF min(3, brokers),
    min.insync.replicas 2 where there are 3) unless it exists, through the one writer (`applier`:
    streaming.control.applier.Applier); wait until it has a leader."""
    return applier.create_topic(topic, 1, OWNERSHIP_TOPIC_CONFIG, min_insync_replicas=OWNERSHIP_MIN_INSYNC_REPLICAS)
