"""The plans' store: their records in the ownership topic (streaming.control.ownership.plans), read through the admin door.

`PlanStore` is the protocol the commands and `advance_once` need; `KafkaPlanStore` reads the topic's
one partition fully on open and incrementally on `refresh()`, keeping only keys of plans (the ownership
records in the same topic are streaming.control.ownership.store's). `MemoryPlanStore` is the fake.
"""

import sys
from dataclasses import dataclass, field
from typing import Protocol

from streaming.control.ownership import leases
from streaming.control.ownership.leases import Lease
from streaming.control.ownership.plans import Plan, decode_header, decode_part, records_of
from streaming.control.ownership.records import PLAN_KEY_PREFIX
from streaming.control.ownership.store import KafkaOwnershipStore, ensure_ownership_topic
from streaming.vocabulary.defaults import OWNERSHIP_TOPIC


class PlanStore(Protocol):
    def refresh(self) -> None: ...
    def plans(self) -> list[Plan]: ...
    def put(self, plan: Plan, with_parts: bool = False) -> None: ...  # durable when it returns
    def leases(self, request_id: str) -> list[Lease]: ...  # in log order (streaming.control.ownership.leases)
    def put_lease(self, lease: Lease) -> None: ...  # durable when it returns


def find(store, request_id):
    """The plan `request_id`, or None."""
    return next((p for p in store.plans() if p.request_id == request_id), None)


class KafkaPlanStore:
    PARTITION = KafkaOwnershipStore.PARTITION

    def __init__(self, admin, topic=OWNERSHIP_TOPIC, create=False):
        self.admin, self.topic = admin, topic
        self._headers, self._parts, self._leases, self._next = {}, {}, {}, 0
        if create:
            ensure_ownership_topic(admin, topic)
        self.refresh()

    def refresh(self):
        for offset, key, value in self.admin.read_log(self.topic, self.PARTITION, self._next):
            self._next = offset + 1
            key = key.decode("utf-8")
            if not key.startswith(PLAN_KEY_PREFIX) or value is None:
                continue
            rest = key[len(PLAN_KEY_PREFIX):]
            try:
                if rest.endswith(leases.LEASE_KEY_SUFFIX):
                    claim = leases.decode(value)
                    self._leases.setdefault(claim.request_id, []).append(claim)
                elif ":" in rest:
                    request_id, _ = rest.rsplit(":", 1)
                    index, moves = decode_part(value)
                    self._parts.setdefault(request_id, {})[index] = moves
                else:
                    self._headers[rest] = value
            except (ValueError, KeyError) as error:
                print(f"ownership topic {self.topic}: skipping unreadable plan record {key}: {error}", file=sys.stderr)

    def plans(self):
        out = []
        for request_id, header in sorted(self._headers.items()):
            try:
                out.append(decode_header(header, self._parts.get(request_id, {})))
            except (ValueError, KeyError) as error:
                print(f"ownership topic {self.topic}: skipping plan {request_id}: {error}", file=sys.stderr)
        return out

    def put(self, plan, with_parts=False):
        records = records_of(plan, with_parts)
        if with_parts:
            self.admin.produce(self.topic, records[:-1])
            self._parts[plan.request_id] = dict(decode_part(value) for _, value in records[:-1])
        self.admin.produce(self.topic, records[-1:])  # the header only after every part is acknowledged
        self._headers[plan.request_id] = records[-1][1]

    def leases(self, request_id):
        return list(self._leases.get(request_id, ()))

    def put_lease(self, lease):  # read back by refresh(): the log's order decides between two claims
        self.admin.produce(self.topic, [(leases.lease_key(lease.request_id), leases.encode(lease))])


@dataclass
class MemoryPlanStore:
    latest: dict = field(default_factory=dict)
    claims: list = field(default_factory=list)  # every lease written, in order

    def refresh(self):
        pass

    def plans(self):
        return [self.latest[k] for k in sorted(self.latest)]

    def put(self, plan, with_parts=False):
        self.latest[plan.request_id] = plan

    def leases(self, request_id):
        return [claim for claim in self.claims if claim.request_id == request_id]

    def put_lease(self, lease):
        self.claims.append(lease)
