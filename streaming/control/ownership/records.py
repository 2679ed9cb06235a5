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
  When several active records claim one rate, the value is ours only if the newest claim is of it, and
  the newest one's prior decides what is restored (`holders`, `prior_of`); a record whose claimed value the cluster no longer holds gives that claim up
  (streaming.control.throttles.bookkeeping.given_up), so a value someone set by hand later is never taken for ours.

Store: a compacted Kafka topic (streaming.control.ownership.store; default
streaming.vocabulary.defaults.OWNERSHIP_TOPIC, one partition so it is totally ordered, replication factor
min(3, brokers)), key = request id, value = the record as JSON (`encode`/`decode` here).
The latest record per request id wins; `done` records stay as an audit trail (one per request).
Plans (streaming.control.plans) share the topic under keys starting with PLAN_KEY_PREFIX: not ownership records.
Each wave a plan submits is an ownership record of its own, naming the plan in `plan_id`; the partitions
AlterPartitionReassignments refused are in its `refused`, each with Kafka's error (streaming.control.plans.partition_states).

Request ids: `YYYYMMDDTHHMMSS.mmmZ-xxxx` (UTC, milliseconds, 4 random hex digits). `new_request_id`
bumps the time past the newest id in the store, so ids sort in creation order (monotonic for one
store); the random suffix keeps two concurrent `execute` runs apart.

`entry_owners` and `rate_owners` index active records by what they claim (the plan, `execute` and the
observer ask who owns an entry or a rate). Value types and pure functions only: the topic's reader and
writer is streaming.control.ownership.store (one store for records, plans and leases).
"""

import json
import secrets
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from enum import StrEnum

from streaming.vocabulary.reassignment_file import ANY_LOG_DIR
from streaming.vocabulary.states import OwnershipState
from streaming.vocabulary.throttle_entries import entry, parse_entry

SCHEMA_ID = "kafka-reassign-monitor/ownership/v1"



class Origin(StrEnum):
    EXECUTE = "execute"  # written by `execute` (a plan's wave too) before it set anything
    OBSERVED = "observed"  # throttles the job saw appear with a move another tool started (adoption)

PLAN_KEY_PREFIX = "plan:"  # keys of the plans' records (streaming.control.ownership.plan_store) in the same topic


@dataclass(frozen=True)
class Move:
    """One partition of a request: `sources` are the replicas it moves from (the current replicas, or the
    original ones of an ongoing reassignment), `target` the replica list it asked for, `log_dirs` the log dir
    asked for each replica of `target`, in its order (`any`: the broker's choice; empty: none named)."""
    topic: str
    partition: int
    sources: tuple[int, ...]
    target: tuple[int, ...]
    log_dirs: tuple[str, ...] = ()

    @property
    def destinations(self):
        return tuple(b for b in self.target if b not in self.sources)

    @property
    def named_dirs(self):
        """broker -> the log dir its replica must end in, for the replicas of `target` given one."""
        return {b: d for b, d in zip(self.target, self.log_dirs) if d != ANY_LOG_DIR}


def move_json(move):
    return {"topic": move.topic, "partition": move.partition, "sources": list(move.sources),
            "target": list(move.target), **({"log_dirs": list(move.log_dirs)} if move.log_dirs else {})}


def move_of(value):
    return Move(value["topic"], int(value["partition"]), tuple(value["sources"]), tuple(value["target"]),
                tuple(value.get("log_dirs", ())))


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
class Steering:
    """`--throttle auto`: the job steers the rates this record claims within these bounds (bytes/s);
    `schedule`: (start minute, end minute, ceiling) windows of the UTC day, ceilings while in force."""
    floor: int
    ceiling: int
    schedule: tuple = ()


@dataclass(frozen=True)
class Refusal:
    topic: str
    partition: int
    error: str  # the door's name of Kafka's error (streaming.cluster.writes)


@dataclass(frozen=True)
class Ownership:
    request_id: str
    state: OwnershipState
    created_ms: int
    updated_ms: int
    auto_remove: bool = True
    origin: Origin = Origin.EXECUTE
    moves: tuple[Move, ...] = ()
    entries: tuple[EntryClaim, ...] = ()
    rates: tuple[RateClaim, ...] = ()
    note: str | None = None
    plan_id: str | None = None  # the plan this record is a wave of (streaming.control.plans), else None
    steering: Steering | None = None  # `--throttle auto`: the job steers its rates
    refused: tuple[Refusal, ...] = ()  # a plan's wave: the partitions AlterPartitionReassignments refused

    def with_state(self, state, now_ms, note=None):
        return replace(self, state=state, updated_ms=int(now_ms), note=note if note is not None else self.note)

    @property
    def active(self):
        return self.state != OwnershipState.DONE


def to_json(record):
    entries = {}
    for claim in record.entries:
        entries.setdefault((claim.topic, claim.kind), []).append(entry(claim.partition, claim.broker))
    return {
        "schema": SCHEMA_ID, "request_id": record.request_id, "state": record.state,
        "created_ms": record.created_ms, "updated_ms": record.updated_ms, "auto_remove": record.auto_remove,
        "origin": record.origin, "note": record.note,
        "moves": [move_json(m) for m in record.moves],
        "entries": [{"topic": t, "kind": k, "entries": sorted(e, key=parse_entry)} for (t, k), e in sorted(entries.items())],
        "rates": [{"broker": r.broker, "kind": r.kind, "rate": r.rate, "prior": r.prior} for r in record.rates],
        **({"plan_id": record.plan_id} if record.plan_id is not None else {}),
        **({"refused": [{"topic": r.topic, "partition": r.partition, "error": r.error} for r in record.refused]}
           if record.refused else {}),
        "steering": None if record.steering is None else {
            "floor": record.steering.floor, "ceiling": record.steering.ceiling,
            "schedule": [list(w) for w in record.steering.schedule]},
    }


def from_json(value):
    if value.get("schema") != SCHEMA_ID:
        raise ValueError(f"not an ownership record: schema {value.get('schema')!r}")
    return Ownership(
        request_id=value["request_id"], state=OwnershipState(value["state"]), created_ms=int(value["created_ms"]),
        updated_ms=int(value["updated_ms"]), auto_remove=bool(value.get("auto_remove", True)),
        origin=Origin(value.get("origin", Origin.EXECUTE)), note=value.get("note"), plan_id=value.get("plan_id"),
        moves=tuple(move_of(m) for m in value.get("moves", ())),
        entries=tuple(EntryClaim(e["topic"], e["kind"], *parse_entry(text))
                      for e in value.get("entries", ()) for text in e["entries"]),
        rates=tuple(RateClaim(int(r["broker"]), r["kind"], int(r["rate"]), None if r.get("prior") is None else int(r["prior"]))
                    for r in value.get("rates", ())),
        refused=tuple(Refusal(r["topic"], int(r["partition"]), str(r["error"])) for r in value.get("refused", ())),
        steering=None if not value.get("steering") else Steering(
            int(value["steering"]["floor"]), int(value["steering"]["ceiling"]),
            tuple(tuple(int(x) for x in w) for w in value["steering"].get("schedule", ()))),
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


def accepted_moves(records):
    """(topic, partition) -> Move of every active `execute` request (a plan's waves included) that Kafka accepted
    (`started`), less the partitions it refused; the newest request's move where several name a partition."""
    moves = {}
    for record in sorted(records, key=lambda r: (r.created_ms, r.request_id)):
        if record.state == OwnershipState.STARTED and record.origin == Origin.EXECUTE:
            refused = {(r.topic, r.partition) for r in record.refused}
            moves.update(((m.topic, m.partition), m) for m in record.moves if (m.topic, m.partition) not in refused)
    return moves


def entry_owners(records):
    """(topic, kind) -> (partition, broker) -> [records claiming it]."""
    owners = defaultdict(lambda: defaultdict(list))
    for record in records:
        for claim in record.entries:
            owners[(claim.topic, claim.kind)][(claim.partition, claim.broker)].append(record)
    return owners


def rate_owners(records):
    """(broker, kind) -> [(record, claim)], earliest request first."""
    owners = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.created_ms, r.request_id)):
        for claim in record.rates:
            owners[(claim.broker, claim.kind)].append((record, claim))
    return owners


def holders(owned, value):
    """The (record, claim) pairs of `owned` (one key of rate_owners) that hold the value the cluster holds,
    earliest first; none unless the NEWEST claim is of that value. The newest request read the cluster last
    and carried the prior over from ours, so an older claim of the same number either shares its value or
    was overwritten in between (by hand, by another tool) and the number came back: not ours then."""
    if not owned or value is None or owned[-1][1].rate != value:
        return []
    return [(record, claim) for record, claim in owned if claim.rate == value]


def prior_of(owned, value):
    """The value before any of our throttles, for a key holding `value`: the prior the newest claim saved
    when the value is ours (holders), else `value` itself (someone else's, or none)."""
    return owned[-1][1].prior if holders(owned, value) else value
