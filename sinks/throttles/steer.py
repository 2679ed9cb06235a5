"""`run --throttle auto`: each batch, steer the broker rates that requests executed with `--throttle auto` own.

Driver side, called by the batch handler before the janitor, with the batch's snapshot and replica rows:

    outputs = steerer.on_batch(snapshot, behind, throttles_binding, batch_id)   # JanitorOutput: (action, key, value)

1. Which rates are steered (`steered_rates`, pure): a broker's leader and follower rates that our records
   hold (ownership.holders: the newest claim is of the value the broker has), every holder executed with
   `--throttle auto`, the broker alive and used by an ongoing reassignment. Rates it does not own, or owned
   by a request with a fixed throttle, are never changed. Bounds: the job's, narrowed by each holder's.
2. The signals (pure): the brokers of FALLING_BEHIND moves (`behind`: destination and leader of each inter-broker
   move, streaming.spark.outputs.BatchOutput.falling_behind_brokers), whether the
   broker's throttle binds (`throttles_binding`: the brokers whose throttle sets some move's share in the budget
   model, streaming.core.budget_view, computed where the batch's rows meet), and cluster stress (`stress_of`: a partition NOT moving out of its ISR,
   a broker of a move offline, the guard).
3. The decision: sinks.throttles.autothrottle.decide (pure, the clock an argument).
4. Apply each change with the janitor's apply (SET, read back), then write every holder's record with the
   new rate (the claim follows the value, so it is not given up; the prior stays, so completion restores
   exactly as in part 1 of issue 19). A crash between the two leaves the claim on the old rate: the janitor
   gives it up and the steered value stays until an operator removes it (logged; a narrow window).
Never raises (the query must keep running): a failure is logged and the batch steers nothing.
"""

import sys
import time
from dataclasses import replace

from sinks.throttles.actions import LOWERED, RAISED, ThrottleAction
from sinks.throttles.apply import READBACK_TIMEOUT_S, apply
from sinks.throttles.autothrottle import BrokerSignals, Bounds, Window, decide
from sinks.throttles.claims import FOLLOWER, LEADER
from sinks.throttles.janitor import JanitorOutput
from sinks.throttles.ownership import holders, rate_owners
from sinks.throttles.report import describe, throttle_record
from sinks.throttles.view import view_of
from streaming.vocabulary.config_keys import BROKER, SET


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


class Steerer:
    """See the module docstring. `admin`: the admin door; `store`: the janitor's OwnershipStore; `steering`:
    the job's Steering bounds; `guard`: a callable (sinks.throttles.guard.PrometheusGuard) or None."""

    def __init__(self, admin, store, steering, interval_s, guard=None, clock=time.time,
                 readback_timeout_s=READBACK_TIMEOUT_S, log=None):
        self.admin, self.store, self.steering, self.interval_s = admin, store, steering, interval_s
        self.guard, self.clock, self.readback_timeout_s = guard, clock, readback_timeout_s
        self.log = log or (lambda line: print(f"throttle auto: {line}", file=sys.stderr, flush=True))
        self.last_change_s = {}  # broker -> clock seconds of its last change

    def on_batch(self, snapshot, behind, throttles_binding, batch_id):
        try:
            return self._steer(snapshot, behind, throttles_binding, batch_id)
        except Exception as error:  # the streaming query must survive a cluster hiccup: steer next batch
            self.log(f"batch {batch_id}: skipped: {type(error).__name__}: {error}")
            return []

    def _steer(self, snapshot, behind, throttles_binding, batch_id):
        view = view_of(snapshot)
        if not view.complete:
            return []
        self.store.refresh()
        steered = steered_rates(view, self.store.records())
        if not steered:
            return []
        now_s = self.clock()
        rates = {b: min(rate for rate, _ in kinds.values()) for b, kinds in steered.items()}
        signals = {b: BrokerSignals(falling_behind=b in behind, binds=b in throttles_binding) for b in rates}
        stress = stress_of(view, snapshot["partitions"], self.guard)
        actions = []
        for broker, kinds in sorted(steered.items()):
            bounds = bounds_for(self.steering, [r.steering for _, held in kinds.values() for r in held], self.interval_s)
            change = decide({broker: rates[broker]}, signals, stress, bounds, now_s, self.last_change_s).get(broker)
            if change is None:
                continue
            for kind, (rate, held) in sorted(kinds.items()):
                if change.new == rate:
                    continue
                actions.append(ThrottleAction(
                    BROKER, str(broker), kind, RAISED if change.new > rate else LOWERED, SET, value=str(rate),
                    restored_value=str(change.new), reason=change.reason, signal=change.signal,
                    request_ids=tuple(sorted({r.request_id for r in held}))))
        if not actions:
            return []
        done, _ = apply(self.admin, actions, readback_timeout_s=self.readback_timeout_s, log=self.log)
        self._follow(done, steered, now_s)
        ts_ms = int(now_s * 1000)
        for action in done:
            self.log(describe(action))
        return [JanitorOutput(a, *throttle_record(a, ts_ms, batch_id, snapshot.cluster_id)) for a in done]

    def _follow(self, done, steered, now_s):
        """Move every holder's claim to the rate now set (the prior stays)."""
        new_rates = {}
        for action in done:
            if action.action in (RAISED, LOWERED):
                new_rates[(int(action.name), action.kind)] = int(action.restored_value)
                self.last_change_s[int(action.name)] = now_s
        records = {}
        for (broker, kind), rate in new_rates.items():
            for record in steered[broker][kind][1]:
                record = records.get(record.request_id, record)
                records[record.request_id] = replace(record, updated_ms=int(now_s * 1000), rates=tuple(
                    replace(c, rate=rate) if (c.broker, c.kind) == (broker, kind) else c for c in record.rates))
        for record in records.values():
            self.store.put(record)


def steerer_factory(config, admin, store):
    """The Steerer the streaming job runs with `--throttle auto` (None without it)."""
    from sinks.throttles.guard import PrometheusGuard

    if config.steering is None:
        return None
    guard = PrometheusGuard(config.guard_url, config.guard_query) if config.guard_url else None
    return Steerer(admin, store, config.steering, config.throttle_interval_s, guard)
