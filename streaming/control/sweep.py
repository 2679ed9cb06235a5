"""The throttle janitor's sweep: remove (or restore) every owned throttle that is due, on a read taken now.

What `verify` and `cancel` run, what the job's controller runs the moment an owned partition leaves the
reassignment list (and at start, and when a batch's poll shows something due), what a plan's step runs before
it submits a wave, and what rolls a failed submission back. One implementation, in this order:

1. Read the cluster now (streaming.control.throttles.read.read_for_plan: what the active records claim; under
   `--throttle-cleanup all` also what the `hint` names, or everything), AFTER the caller refreshed the ledger:
   a throttle is only removed when a read taken after its ownership record was seen shows its partitions not
   moving.
2. A record whose claimed rate that read shows changed gives the claim up and is written back without it
   (streaming.control.throttles.bookkeeping.given_up): the value is someone else's from then on.
3. Decide (streaming.control.throttles.removal.decide, pure: the safety rules) and apply through the one writer
   (streaming.control.applier.Applier.apply: IncrementalAlterConfigs, then read back).
4. Mark `done` the records the read-back (or, failing that, the read of step 1) shows settled.
A policy that does not act (`--dry-run`, `--throttle-cleanup off`) stops after deciding: the due actions come
back as dry runs and nothing is written.
"""

import time
from dataclasses import dataclass, field

from sinks.throttle_records import describe_claims
from streaming.control.throttles.bookkeeping import given_up, settled
from streaming.control.throttles.read import read_for_plan
from streaming.control.throttles.removal import decide
from streaming.vocabulary.states import OwnershipState


def quiet(_line):
    """A log that says nothing: the caller reports the actions itself."""


@dataclass
class Swept:
    """A sweep's outcome: the actions (carried out, failed, or dry runs), the read they were decided on, and the
    seconds of each step (read, alter, read_back, records), which the controller logs."""
    actions: list
    fresh: object  # the Snapshot read in step 1
    steps: dict = field(default_factory=dict)


def sweep(admin, applier, records, policy, hint=None, log=quiet):
    """One sweep (module docstring) over `records` (the ledger's, refreshed by the caller). Raises when the read
    of step 1 fails: nothing was decided or written then."""
    steps = {}
    started = time.monotonic()
    fresh = read_for_plan(admin, records, policy, hint)
    steps["read"] = time.monotonic() - started
    if not policy.acts:
        return Swept(decide(fresh, records, policy), fresh, steps)
    records = give_up(applier, records, fresh, policy, log)
    done, after = applier.apply(decide(fresh, records, policy), records, timings=steps)
    settling = time.monotonic()
    settle(applier, records, after or fresh, policy)
    steps["records"] = time.monotonic() - settling
    return Swept(done, fresh, steps)


def give_up(applier, records, now, policy, log=quiet):
    """Write back without them the rate claims that `now` - a read taken after the ledger's refresh - shows the
    cluster no longer holds. Returns the records as they are now."""
    rewritten = {r.request_id: r for r in given_up(now, records, policy)}
    for record in rewritten.values():
        applier.record(record)
        log(f"request {record.request_id} no longer owns what the cluster changed since: "
            f"now claims {describe_claims(record)}")
    return [rewritten.get(r.request_id, r) for r in records]


def settle_candidates(snapshot, records, policy):
    """Records `snapshot` shows settled: the controller sweeps when a batch's poll shows one."""
    return [r for r in records if r.state != OwnershipState.DONE and settled(snapshot, r, records, policy)]


def settle(applier, records, now, policy):
    """Mark `done` the records that `now` - a read taken after the ledger's refresh, never a batch's older poll -
    shows settled."""
    for record in settle_candidates(now, records, policy):
        applier.record(record.with_state(OwnershipState.DONE, now.ts_ms, note="every claimed throttle is gone"))
