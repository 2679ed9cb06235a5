"""One advancer per plan: a lease in the ownership topic, first claim wins. Pure but for `claim` and `release`, which
write through the one writer (streaming.control.applier.Applier) and read its ledger.

The job (every active plan, from its controller) and `execute|resume --wait` (one plan, in the
foreground) both advance plans; two advancers stepping one plan at once could each fill the same free slot.
Before each step an advancer claims the plan's lease (key `plan:<id>:advancer`, a record naming the holder
and the time the lease runs out): it may step while it holds it, renews it once half of it is used, and
steps nothing while someone else holds an unexpired one. A killed advancer's lease runs out after
LEASE_MS; then the first other advancer to claim takes the plan over.

Two advancers may claim at the same moment. Every reader replays the lease records in log order (one
partition: one order for all) with `holder_of`, where a claim counts only if the lease before it had run
out (by the claim's own time) or was the claimer's: so both agree the first claim won, and the second,
reading back its own claim, steps nothing.
"""

import json
import os
import socket
from dataclasses import dataclass

from streaming.control.ownership.records import PLAN_KEY_PREFIX

SCHEMA_ID = "kafka-reassign-monitor/plan-advancer/v1"
LEASE_KEY_SUFFIX = ":advancer"
# Long enough for a step on a loaded machine (a few seconds, each call bounded by --timeout) to renew it in
# time; short enough that a plan whose advancer was killed waits at most this long for another.
LEASE_MS = 15_000


@dataclass(frozen=True)
class Lease:
    request_id: str
    holder: str  # "job <host>:<pid>" or "execute --wait <host>:<pid>"
    claimed_ms: int
    until_ms: int


def lease_key(request_id):
    return f"{PLAN_KEY_PREFIX}{request_id}{LEASE_KEY_SUFFIX}"


def encode(lease):
    return json.dumps({"schema": SCHEMA_ID, "request_id": lease.request_id, "holder": lease.holder,
                       "claimed_ms": lease.claimed_ms, "until_ms": lease.until_ms},
                      separators=(",", ":")).encode("utf-8")


def decode(data):
    value = json.loads(data.decode("utf-8"))
    if value.get("schema") != SCHEMA_ID:
        raise ValueError(f"not a plan lease: schema {value.get('schema')!r}")
    return Lease(value["request_id"], value["holder"], int(value["claimed_ms"]), int(value["until_ms"]))


def holder_of(leases):
    """The lease in force after `leases` (in log order): a claim replaces the lease before it only when that
    one had run out at the claim's time or had the same holder. None when there is no lease."""
    current = None
    for lease in leases:
        if current is None or lease.holder == current.holder or lease.claimed_ms >= current.until_ms:
            current = lease
    return current


def held_by_other(current, me, now_ms):
    """Someone else holds an unexpired lease: `me` steps nothing."""
    return current is not None and current.holder != me and current.until_ms > now_ms


def needs_renewal(current, me, now_ms, lease_ms=LEASE_MS):
    """`me` must write a claim: it holds no lease, or half of its lease is used."""
    return current is None or current.holder != me or current.until_ms - now_ms < lease_ms / 2


def claim(applier, request_id, me, now_ms, lease_ms=LEASE_MS):
    """(whether `me` may step the plan now, the lease in force). Writes a claim when one is due (through the one
    writer, streaming.control.applier.Applier) and reads its ledger back, so of two simultaneous claims only the
    first wins."""
    ledger = applier.ledger
    ledger.refresh()
    current = holder_of(ledger.leases(request_id))
    if held_by_other(current, me, now_ms):
        return False, current
    if needs_renewal(current, me, now_ms, lease_ms):
        applier.record_lease(Lease(request_id, me, int(now_ms), int(now_ms + lease_ms)))
        ledger.refresh()
        current = holder_of(ledger.leases(request_id))
    return current is not None and current.holder == me, current


def holder_name(role):
    """`role host:pid`: who advances, as the lease and the plan's records name it."""
    return f"{role} {socket.gethostname()}:{os.getpid()}"


def release(applier, request_id, me, now_ms):
    """End `me`'s lease now (a one-step `execute` or `resume` without --wait): the job takes the plan over at
    its next tick instead of after LEASE_MS."""
    current = holder_of(applier.ledger.leases(request_id))
    if current is not None and current.holder == me and current.until_ms > now_ms:
        applier.record_lease(Lease(request_id, me, int(now_ms), int(now_ms)))
