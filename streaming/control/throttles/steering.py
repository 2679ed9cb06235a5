"""`run --throttle auto`: after each batch, steer the broker rates that requests executed with `--throttle auto`
own. Pure: the job's controller (streaming.control.controller) calls `steer` with the batch's findings and
applies what it returns through the one writer (streaming.control.applier.Applier).

1. Which rates are steered (`steered_rates`, pure): a broker's leader and follower rates that our records
   hold (ownership.holders: the newest claim is of the value the broker has), every holder executed with
   `--throttle auto`, the broker alive and used by an ongoing reassignment. Rates it does not own, or owned
   by a request with a fixed throttle, are never changed. Bounds: the job's, narrowed by each holder's.
2. The signals (pure): FALLING_BEHIND moves per broker (destination and leader of the replica), whether the
   broker's throttle binds (`throttles_binding`: the brokers whose throttle sets some move's share in the budget
   model, streaming.core.budget_view, computed where the batch's rows meet), and cluster stress (`stress_of`: a partition NOT moving out of its ISR,
   a broker of a move offline, the guard).
3. The decision: streaming.control.throttles.autothrottle.decide (pure, the clock an argument).
4. The controller applies each change (SET, read back), then writes every holder's record with the new rate
   (`followed`: the claim follows the value, so it is not given up; the prior stays, so completion restores
   exactly as before steering). A crash between the two leaves the claim on the old rate: the janitor gives
   it up and the steered value stays until an operator removes it (logged; a narrow window).
"""

from dataclasses import replace

from streaming.control.ownership.records import holders, rate_owners
from streaming.control.throttles.autothrottle import BrokerSignals, Bounds, Window, decide
from streaming.control.throttles.claims import FOLLOWER, LEADER
from streaming.vocabulary.config_keys import BROKER, SET
from streaming.vocabulary.throttle_actions import LOWERED, RAISED, ThrottleAction


def steered_rates(view, records):
    """broker -> {kind: (rate, [holder records])} for the rates `--throttle auto` may change now."""
    steered = {}
    for (broker, kind), owned in rate_owners([r for r in records if r.active]).items():
        if kind not in (LEADER, FOLLOWER) or broker not in view.moving_brokers or broker not in view.alive:
            continue
        rate = view.broker_rates.get((broker, kind))
        held = [record for record, _ in holders(owned, rate)]
        if held and all(r.steering is not None for r in held):
            steered.setdefault(broker, {})[kind] = (rate, held)
    return steered


def bounds_for(job, holders_steering, interval_s):
    """The job's bounds narrowed by every holder's (the tightest floor and ceiling; every schedule applies)."""
    all_bounds = [job, *holders_steering]
    floor = max(b.floor for b in all_bounds)
    ceiling = max(floor, min(b.ceiling for b in all_bounds))
    windows = tuple(Window(*w) for b in all_bounds for w in b.schedule)
    return Bounds(floor, ceiling, windows, interval_s)


def stress_of(view, partitions, guard=None):
    """One line saying why the cluster is under stress, or None: a partition that is not moving out of its ISR,
    a broker of a move offline, or the guard (called only when the rest is calm)."""
    shrunk = sorted((p["topic"], p["partition"], len(p["isr"] or ()), len(p["replicas"] or ())) for p in partitions
                    if (p["topic"], p["partition"]) not in view.reassigning and len(p["isr"] or ()) < len(p["replicas"] or ()))
    if shrunk:
        topic, partition, isr, replicas = shrunk[0]
        more = f" and {len(shrunk) - 1} more" if len(shrunk) > 1 else ""
        return f"partition {topic}-{partition} (not moving) has {isr} of {replicas} replicas in ISR{more}"
    offline = sorted(view.moving_brokers - view.alive)
    if offline:
        return f"broker {offline[0]} of an ongoing move is offline"
    return guard() if guard is not None else None


def steer(view, records, job_bounds, interval_s, falling_behind, binding, partitions, guard, now_s, last_change_s):
    """(actions, steered) for one batch: the SET actions that move the steered rates (streaming.control.throttles
    .autothrottle.decide, per broker), and `steered_rates` for `followed`. `falling_behind`: brokers a
    FALLING_BEHIND inter-broker move goes into or out of; `binding`: brokers whose throttle sets some move's
    share (the budget model); `partitions`: the poll's metadata rows (stress: a partition not moving out of its
    ISR); `guard`: the operator's guard query or None; `last_change_s`: broker -> clock seconds of its last
    change."""
    steered = steered_rates(view, records)
    if not steered:
        return [], steered
    rates = {b: min(rate for rate, _ in kinds.values()) for b, kinds in steered.items()}
    signals = {b: BrokerSignals(falling_behind=b in falling_behind, binds=b in binding) for b in rates}
    stress = stress_of(view, partitions, guard)
    actions = []
    for broker, kinds in sorted(steered.items()):
        bounds = bounds_for(job_bounds, [r.steering for _, held in kinds.values() for r in held], interval_s)
        change = decide({broker: rates[broker]}, signals, stress, bounds, now_s, last_change_s).get(broker)
        if change is None:
            continue
        for kind, (rate, held) in sorted(kinds.items()):
            if change.new == rate:
                continue
            actions.append(ThrottleAction(
                BROKER, str(broker), kind, RAISED if change.new > rate else LOWERED, SET, value=str(rate),
                restored_value=str(change.new), reason=change.reason, signal=change.signal,
                request_ids=tuple(sorted({r.request_id for r in held}))))
    return actions, steered


def changed_brokers(done):
    """(broker, kind) -> the rate now set, of the steering actions carried out."""
    return {(int(a.name), a.kind): int(a.restored_value) for a in done if a.action in (RAISED, LOWERED)}


def followed(done, steered, now_ms):
    """Every holder's record with its claim moved to the rate now set (the prior stays): what the controller
    writes after the changes were carried out."""
    records = {}
    for (broker, kind), rate in changed_brokers(done).items():
        for record in steered[broker][kind][1]:
            record = records.get(record.request_id, record)
            records[record.request_id] = replace(record, updated_ms=int(now_ms), rates=tuple(
                replace(c, rate=rate) if (c.broker, c.kind) == (broker, kind) else c for c in record.rates))
    return list(records.values())
