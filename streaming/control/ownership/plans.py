"""A plan's value types and codec: the whole reassignment, its limits and its state. Pure, no I/O.

A plan is recorded in the ownership topic (streaming.control.ownership.plan_store) before anything is submitted:
its moves in `PART_MOVES`-sized parts (key `plan:<id>:<n>`, written once), then the header
(key `plan:<id>`: state, limits, throttle, number of parts), rewritten on pause, resume, cancel and
completion. A header is only ever written after all its parts, so a plan that can be read is whole.
What was submitted is not in the plan: each wave is an ownership record naming the plan (`plan_id`).
Who advances it is not in the plan either: its lease is the record `plan:<id>:advancer` (streaming.control.ownership.leases).

States: streaming.vocabulary.states.PlanState.
"""

import json
from dataclasses import dataclass, replace

from streaming.control.plans.scheduler import FILE, Limits
from streaming.control.ownership.records import PLAN_KEY_PREFIX, Move, move_json, move_of
from streaming.vocabulary.states import PlanState

SCHEMA_ID = "kafka-reassign-monitor/plan/v1"
PART_SCHEMA_ID = "kafka-reassign-monitor/plan-part/v1"
# Moves per part record: ~100 bytes each in JSON, so a part stays far below Kafka's 1 MB default record limit.
PART_MOVES = 2000


@dataclass(frozen=True)
class Plan:
    request_id: str
    state: PlanState
    created_ms: int
    updated_ms: int
    limits: Limits
    moves: tuple[Move, ...]  # in the order they are submitted (streaming.control.plans.scheduler.ordered, at execute)
    order: str = FILE
    throttle: int | None = None  # bytes/s, set as execute sets it on each wave's brokers
    log_dir_throttle: int | None = None  # bytes/s, --replica-alter-log-dirs-throttle, set as execute sets it
    note: str | None = None

    def with_state(self, state, now_ms, note=None):
        return replace(self, state=state, updated_ms=int(now_ms), note=note)


def header_key(request_id):
    return f"{PLAN_KEY_PREFIX}{request_id}"


def part_key(request_id, index):
    return f"{PLAN_KEY_PREFIX}{request_id}:{index}"


def records_of(plan, with_parts):
    """[(key, JSON bytes)]: the parts (when `with_parts`), then the header."""
    parts = [plan.moves[i:i + PART_MOVES] for i in range(0, len(plan.moves), PART_MOVES)]
    out = []
    if with_parts:
        out += [(part_key(plan.request_id, i), _dump({"schema": PART_SCHEMA_ID, "request_id": plan.request_id,
                                                       "index": i, "moves": [move_json(m) for m in part]}))
                for i, part in enumerate(parts)]
    limits = plan.limits
    out.append((header_key(plan.request_id), _dump({
        "schema": SCHEMA_ID, "request_id": plan.request_id, "state": plan.state, "created_ms": plan.created_ms,
        "updated_ms": plan.updated_ms, "order": plan.order, "throttle": plan.throttle, "note": plan.note,
        **({"log_dir_throttle": plan.log_dir_throttle} if plan.log_dir_throttle is not None else {}),
        "limits": {"max_partitions_in_flight": limits.partitions_in_flight,
                   "max_moves_per_broker": limits.moves_per_broker, "max_bytes_in_flight": limits.bytes_in_flight},
        "parts": len(parts), "partitions": len(plan.moves)})))
    return out


def _dump(value):
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def decode_part(data):
    value = json.loads(data.decode("utf-8"))
    if value.get("schema") != PART_SCHEMA_ID:
        raise ValueError(f"not a plan part: schema {value.get('schema')!r}")
    return int(value["index"]), tuple(move_of(m) for m in value["moves"])


def decode_header(data, parts):
    """The Plan of a header, its moves from `parts` (index -> moves); ValueError when a part is missing."""
    value = json.loads(data.decode("utf-8"))
    if value.get("schema") != SCHEMA_ID:
        raise ValueError(f"not a plan: schema {value.get('schema')!r}")
    missing = [i for i in range(int(value["parts"])) if i not in parts]
    if missing:
        raise ValueError(f"plan {value['request_id']}: part {missing[0]} of {value['parts']} missing")
    limits = value["limits"]
    return Plan(request_id=value["request_id"], state=PlanState(value["state"]), created_ms=int(value["created_ms"]),
                updated_ms=int(value["updated_ms"]), order=value["order"], throttle=value.get("throttle"),
                log_dir_throttle=value.get("log_dir_throttle"), note=value.get("note"),
                limits=Limits(limits["max_partitions_in_flight"], limits.get("max_moves_per_broker"),
                              limits.get("max_bytes_in_flight")),
                moves=tuple(m for i in range(int(value["parts"])) for m in parts[i]))
