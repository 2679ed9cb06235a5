"""The throttle janitor's sweep: remove (or restore) every owned throttle that is due, on a read taken now.

What `verify` and `cancel` run, what the job's controller runs the moment an owned partition leaves the
reassignment list (and at start, and when a batch's poll shows something due), what a plan's step runs before
it submits a wave, and what rolls a failed submission back. One implementation, in this order:

1. Read the cluster now (streaming.control.throttles.read.read_for_plan: what the active records claim; under
   `--throttle-cleanup all` also what the `hint` names, or everything), AFTER the caller refreshed the ledger:
   a throttle is only removed when a read taken after its ownership record was seen shows its partitions not
   moving.
2. Decide (`decide_sweep`, pure): a record whose claimed rate that read shows changed gives the claim up
   (streaming.control.throttles.bookkeeping.given_up: the value is someone else's from then on), and the actions
   due on the records as they are then (streaming.control.throttles.removal.decide: the safety rules).
3. The one writer carries the decision out (streaming.control.applier.Applier.apply_sweep): the given-up records
   written back, the actions in IncrementalAlterConfigs, then read back; and marks `done` the records the read-back
   (or, failing that, the read of step 1) shows settled (`settlements`, pure).
A policy that does not act (`--dry-run`, `--throttle-cleanup off`) stops after deciding: the due actions come
back as dry runs and nothing is written.

The commands and a plan's step run the steps in one call (`sweep`); the job's controller runs them one by one, its
janitor duty deciding (streaming.control.duties.janitor) and its applier carrying out.
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


@dataclass(frozen=True)
class Decided:
    """What a sweep decided on one read (`decide_sweep`): the records written back without the claims they give up,
    the ledger's records as they are once those are written, and the throttle actions due on them."""
    fresh: object  # the Snapshot read in step 1
    policy: object  # the streaming.vocabulary.throttle_actions.Policy it was decided under
    given_up: tuple = ()
    records: tuple = ()
    actions: tuple = ()


@dataclass
class Swept:
    """A sweep's outcome: the actions (carried out, failed, or dry runs), the read they were decided on, and the
    seconds of each step (read, alter, read_back, records), which the controller logs."""
    actions: list
    fresh: object  # the Snapshot read in step 1
    steps: dict = field(default_factory=dict)


def decide_sweep(fresh, records, policy):
    """Step 2 on `fresh` (a read taken after the ledger's `records` were refreshed): a Decided."""
    if not policy.acts:
        return Decided(fresh, policy, records=tuple(records), actions=tuple(decide(fresh, records, policy)))
    rewritten = {r.request_id: r for r in given_up(fresh, records, policy)}
    now = tuple(rewritten.get(r.request_id, r) for r in records)
    return Decided(fresh, policy, tuple(rewritten.values()), now, tuple(decide(fresh, now, policy)))


def describe_given_up(record):
    """The line said of a record written back without the claims it gave up."""
    return (f"request {record.request_id} no longer owns what the cluster changed since: "
            f"now claims {describe_claims(record)}")


def sweep(admin, applier, records, policy, hint=None, log=quiet):
    """One sweep (module docstring) over `records` (the ledger's, refreshed by the caller), carried out by
    `applier`. Raises when the read of step 1 fails: nothing was decided or written then."""
    started = time.monotonic()
    fresh = read_for_plan(admin, records, policy, hint)
    steps = {"read": time.monotonic() - started}
    decided = decide_sweep(fresh, records, policy)
    if not policy.acts:
        return Swept(list(decided.actions), fresh, steps)
    swept = applier.apply_sweep(decided, steps)
    for record in decided.given_up:
        log(describe_given_up(record))
    return swept


def settle_candidates(snapshot, records, policy):
    """Records `snapshot` shows settled: the controller sweeps when a batch's poll shows one."""
    return [r for r in records if r.state != OwnershipState.DONE and settled(snapshot, r, records, policy)]


def settlements(now, records, policy):
    """The records that `now` - a read taken after the ledger's refresh, never a batch's older poll - shows settled,
    marked `done`."""
    return [record.with_state(OwnershipState.DONE, now.ts_ms, note="every claimed throttle is gone")
            for record in settle_candidates(now, records, policy)]
