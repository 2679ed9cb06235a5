"""A plan's progress row, from what the controller knows of the plan (streaming.control.plans.advancer.PlanStatus: its
partitions' states and sizes as its last step read them) and what the batch knows of the moves (replica
rows, throttle tables). Pure; runs on the driver in the batch handler (streaming.spark.job).

- bytes_total: every partition of the plan, its leader's log times its new replicas (DescribeLogDirs at
  the step); bytes_remaining: pending partitions whole, in-flight ones as their replica rows say (whole
  while a row is missing), done / cancelled / left alone ones nothing.
- rate: the copy rates of the plan's replica rows in flight.
- ETA: the ONE budget model (streaming.core.budget): every move copying in the cluster as the batch's model
  runs it, plus the pending partitions as the plan's waves will start them - admitted by the plan's own
  scheduler under its limits, each using the budgets its wave throttles (the plan's rate on its leader's
  leader budget and its destination's follower budget; without a throttle, the destination's unthrottled
  budget, which runs at the observed rate of the moves into it). `simulate_admitted` runs it to the last
  of the plan's moves. Null when a move of the plan has no known finish (an unthrottled destination
  nothing copies into yet, a share below the leader's growth), a pending partition can never start, a
  partition in flight has no replica row in this batch (submitted after its poll), or a partition pending or
  in flight names a log dir (a move between log dirs is not in the plan's model; bytes count only what
  moves between brokers).
"""

from collections import Counter

import numpy as np

from streaming.control.plans.scheduler import Candidate, Load, schedule
from streaming.core.budget import FOLLOWER, LEADER, BudgetKey, Move, budget_rates, simulate_admitted
from streaming.core.budget_view import Throttles, is_copying, moves_of, remaining_bytes
from streaming.vocabulary.columns import member, partition_ids
from streaming.vocabulary.replica_row import KEY, key_of, partition_of
from streaming.vocabulary.states import PlanPartitionState


def _destinations(move):
    return [b for b in move.target if b not in move.sources]


def _pending_moves(plan, states, sizes, leaders):
    """budget.Move per new replica of each pending partition (key (topic, partition, broker, False), as a
    replica row's), with the budgets its wave will throttle."""
    out = []
    for m in plan.moves:
        key = (m.topic, m.partition)
        if states.get(key) != PlanPartitionState.PENDING:
            continue
        for broker in _destinations(m):
            if plan.throttle:
                budgets = (BudgetKey(LEADER, leaders.get(key, m.sources[0]), True), BudgetKey(FOLLOWER, broker, True))
            else:
                budgets = (BudgetKey(FOLLOWER, broker, False),)
            out.append(Move((m.topic, m.partition, broker, False), float(sizes.get(key, 0)), budgets=budgets))
    return out


def _admit(plan, sizes, ongoing_brokers):
    """The plan's scheduler as `simulate_admitted` asks it: which waiting replica moves start now, given the
    replica moves running (ours and others', each partition's brokers counted once)."""
    brokers_of = dict(ongoing_brokers)
    bytes_of = {}
    for m in plan.moves:
        brokers_of[(m.topic, m.partition)] = frozenset(m.sources) | frozenset(m.target)
        bytes_of[(m.topic, m.partition)] = sizes.get((m.topic, m.partition), 0) * len(_destinations(m))

    def admit(running_keys, waiting):
        running = {key[:2] for key in running_keys}
        load = Load(len(running), Counter(b for p in running for b in brokers_of.get(p, ())),
                    sum(bytes_of.get(p, 0) for p in running))
        partitions = list(dict.fromkeys(m.key[:2] for m in waiting))
        chosen = set(schedule([Candidate(p, brokers_of[p], bytes_of[p]) for p in partitions], load, plan.limits))
        return [m.key for m in waiting if m.key[:2] in chosen]

    return admit


def _mine(plan, rows):
    """The plan's inter-broker replica rows (columns), as dicts with the bytes each has left and whether it copies."""
    keys = sorted({(m.topic, m.partition) for m in plan.moves})
    row_ids, plan_ids = partition_ids((rows["topic"], rows["partition"]),
                                      (np.array([t for t, _ in keys], dtype=object), np.array([p for _, p in keys])))
    mine = rows.take(member(plan_ids, row_ids) & ~rows["intra_broker"])
    left, copying = remaining_bytes(mine), is_copying(mine)
    rates = mine.get("copy_rate", np.full(len(mine), np.nan)).tolist()  # a one-shot report's rows have none
    return [{**row, "copy_rate": None if rate != rate else rate, "remaining": None if left_ != left_ else left_,
             "copying": copies}
            for row, rate, left_, copies in zip(mine.select(KEY).rows(), rates, left.tolist(), copying.tolist())]


def plan_row(status, rows, tables, now_ms):
    """The plan's progress row (docs/records.md "plan"), or None before its first read. `rows`: the batch's
    replica rows (columns, with a state)."""
    seen = status.seen
    if seen is None:
        return None
    plan, states, sizes = status.plan, seen.states, seen.sizes
    mine = _mine(plan, rows)
    in_flight_rows = {key_of(row): row for row in mine
                      if states.get(partition_of(row)) == PlanPartitionState.IN_FLIGHT}
    whole = {key: sizes.get(key, 0) * len(_destinations(m)) for m in plan.moves for key in [(m.topic, m.partition)]}
    remaining = 0.0
    for key, state in states.items():
        if state == PlanPartitionState.PENDING:
            remaining += whole[key]
        elif state == PlanPartitionState.IN_FLIGHT:
            known = [r["remaining"] for r in in_flight_rows.values() if partition_of(r) == key]
            remaining += sum(known) if known and None not in known else whole[key]
    throttles = Throttles(tables.get("topic_throttles", ()), tables.get("broker_throttles", ()))
    running = moves_of(rows, throttles)
    leaders = {(p["topic"], p["partition"]): p["leader"] for p in tables.get("partitions", ())}
    pending = _pending_moves(plan, states, sizes, leaders)
    rates = dict(throttles.rates)
    if plan.throttle:  # a wave sets the plan's rate on the brokers it uses
        rates.update({b: float(plan.throttle) for m in pending for b in m.budgets})
    ongoing = {(r["topic"], r["partition"]): frozenset(r["replicas"]) | frozenset(r["adding"])
               for r in tables.get("reassignments", ())}
    # The plan's moves still copying: in flight by the step's read, which may be newer than the batch's poll.
    ours = {m.key for m in running if states.get(m.key[:2]) == PlanPartitionState.IN_FLIGHT} | {m.key for m in pending}
    unseen = {key for key, state in states.items() if state == PlanPartitionState.IN_FLIGHT} - {partition_of(r) for r in mine}
    # A move between log dirs runs on the broker's alter-log-dirs rate, which the plan's model does not hold.
    between_dirs = any(m.log_dirs and states.get((m.topic, m.partition)) in (PlanPartitionState.PENDING, PlanPartitionState.IN_FLIGHT)
                       for m in plan.moves)
    finish_s = None if unseen or between_dirs else simulate_admitted(  # a partition submitted after the batch's poll: not modelled
        running, pending, _admit(plan, sizes, ongoing), budget_rates(rates, running + pending), now_ms / 1000.0,
        keys=ours)
    counts = Counter(states.values())
    return {"request_id": plan.request_id, "state": status.state,
            "partitions": {state: counts.get(state, 0) for state in tuple(PlanPartitionState)},
            "partitions_total": len(plan.moves), "partitions_completed": counts.get(PlanPartitionState.DONE, 0),
            "bytes_total": round(sum(whole.values())), "bytes_remaining": round(remaining),
            "rate_bytes_per_sec": sum(r["copy_rate"] or 0.0 for r in in_flight_rows.values() if r["copying"]),
            "eta_seconds": None if finish_s is None else max(finish_s - now_ms / 1000.0, 0.0),
            "advanced_by": status.advanced_by, "not_advanced": status.not_advanced,
            "limits": {"max_partitions_in_flight": plan.limits.partitions_in_flight,
                       "max_moves_per_broker": plan.limits.moves_per_broker,
                       "max_bytes_in_flight": plan.limits.bytes_in_flight}}


def describe_plan(row):
    """The plan's row in one line for the terminal (`progress`)."""
    parts = ", ".join(f"{state.replace('_', ' ')} {n}" for state, n in row["partitions"].items() if n)
    eta = "unknown" if row["eta_seconds"] is None else f"{row['eta_seconds']:.0f}s"
    who = f"; not advanced: {row['not_advanced']}" if row["not_advanced"] else \
        f"; advanced by {row['advanced_by']}" if row["advanced_by"] else "; no advancer holds it"
    return (f"Plan {row['request_id']} {row['state']}: {parts or 'no partitions'}; "
            f"{row['bytes_remaining'] / 1e6:.1f} of {row['bytes_total'] / 1e6:.1f} MB remaining, "
            f"{row['rate_bytes_per_sec'] / 1e6:.2f} MB/s, ETA {eta}{who}")
