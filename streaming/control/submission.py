"""Starting moves with their throttles, crash-safe: what `execute` does for a request and a plan's step does
for each wave (one implementation, through the one writer, streaming.control.applier.Applier).

1. the ownership record (state `pending`) claiming exactly the throttles it will set, each prior rate it
   replaces, and the moves, written BEFORE any config is altered;
2. the throttles set and read back (Applier.set_throttles: APPEND entries, SET rates; what a read-back misses is
   set again: a janitor whose ledger predates this record may have swept a throttle it shares with an older request);
3. AlterPartitionReassignments;
4. the throttles applied again (APPEND and SET are idempotent): a janitor whose ledger predates this record may
   have taken out an entry it shares with an older finished request before the reassignment was registered;
   from now on the rules "Still reassigning" and "Broker in use" (docs/ownership.md) protect them whatever
   records a janitor has;
5. the replicas of the accepted moves that name a log dir are moved into it (AlterReplicaLogDirs, retried while a
   new replica does not exist yet, up to the timeout; a new replica's dir was sent before step 3, so it is created
   there: streaming.control.placement.new_replica_dirs). Before the record is `started`: while it is `pending` the
   janitor keeps the alter-log-dirs rate it claims, so the rate is never swept before the future logs exist;
6. the record marked `started` with only the moves the cluster accepted, those refused in `refused` with Kafka's
   error (streaming.control.plans.partition_states decides from it whether a plan's partition is pending again
   or failed).
When nothing was accepted, or step 2 or 3 failed, the record is marked `aborted` with no moves and what it set
is taken out again (`roll_back`: the sweep with the record released). A crash between 1 and 5 leaves a
`pending` record: the janitor treats it as started after its grace period, and a plan's step settles such a
wave from the cluster (streaming.control.plans.step).
"""

import time
from dataclasses import dataclass, replace

from sinks.throttle_records import describe, describe_claims
from streaming.control.ownership.records import Refusal
from streaming.control.placement import new_replica_dirs
from streaming.control.throttles.claims import log_dir_moves
from streaming.control.sweep import quiet, sweep
from streaming.vocabulary.errors import BUG, EXIT_BUG, ClusterError, MonitorError, bug_line, kind_of
from streaming.vocabulary.throttle_actions import FAILED, Policy
from streaming.vocabulary.states import OwnershipState


@dataclass(frozen=True)
class RolledBack:
    record: object  # the record as written, `aborted` (None when even that write failed)
    actions: tuple = ()  # the sweep's throttle actions (failed ones included)
    left: str = ""  # what could not be taken out, in one line ("" when nothing is left): the janitor retries it

    def summary(self):
        return (f"rolling back was refused too, left in place: {self.left}" if self.left
                else "every throttle it had set was rolled back")


@dataclass(frozen=True)
class Submitted:
    record: object  # the Ownership record as last written
    started: tuple  # the moves the cluster accepted
    refused: tuple  # (move, error name) of those it refused
    note: str | None = None  # re-applying the throttles failed (the moves run; the janitor cleans up)
    rolled_back: RolledBack | None = None  # nothing was accepted: the record aborted, its throttles taken out
    unplaced: tuple = ()  # ("<topic>-<partition> on broker <b>", error) whose move between log dirs did not start


class NotStarted(ClusterError):
    """Setting the throttles or AlterPartitionReassignments failed: nothing of the request runs, and what it set
    was taken out again (`rolled_back`). A refusal is exit 3; a bug (ours or a client library's) stays exit 4
    after the rollback, said as one."""

    def __init__(self, error, rolled_back):
        bug = kind_of(error) == BUG
        why = str(error) if isinstance(error, MonitorError) else bug_line(error) if bug else \
            f"{type(error).__name__}: {error}"
        super().__init__(f"{why}; {rolled_back.summary()}")
        self.rolled_back = rolled_back
        if bug:
            self.exit_code = EXIT_BUG


def submit(admin, applier, record, setting, timeout_s, now_ms):
    """Steps 1-6 for `record` (state `pending`, its moves and claims) and its ThrottleSetting
    (streaming.control.throttles.claims). Raises (after rolling back) when setting the throttles or the
    reassignment request failed; a request the cluster refused whole comes back with nothing started, rolled
    back too."""
    applier.record(record)
    throttled = bool(setting.appends or setting.rates)
    try:
        placed = new_replica_dirs(record.moves)
        if placed:
            applier.move_log_dirs(placed)  # Kafka answers REPLICA_NOT_AVAILABLE and notes the dir: no data moves yet
        if throttled:
            applier.set_throttles(setting, timeout_s)
        results = applier.start_moves({(m.topic, m.partition): list(m.target) for m in record.moves})
    except Exception as error:
        raise NotStarted(error, roll_back(admin, applier, record, now_ms, error)) from error
    started = tuple(m for m in record.moves if results.get((m.topic, m.partition), "no answer") is None)
    refused = tuple((m, results.get((m.topic, m.partition), "no answer")) for m in record.moves if m not in started)
    record = replace(record, refused=tuple(Refusal(m.topic, m.partition, error) for m, error in refused))
    if not started:
        rolled_back = roll_back(admin, applier, record, now_ms, "no partition reassignment was accepted")
        return Submitted(rolled_back.record, started, refused, rolled_back=rolled_back)
    note = None
    try:
        if throttled:
            applier.set_throttles(setting, timeout_s)
    except ClusterError as error:  # the moves run: recorded as started (the janitor cleans up), reported
        note = f"re-applying throttles failed: {error}"
    dirs = log_dir_moves(started)
    try:
        unplaced = tuple(move_log_dirs(applier, dirs, timeout_s)) if dirs else ()
    except ClusterError as error:  # the moves run; a plan's step starts what is left (streaming.control.plans.step)
        unplaced = tuple((f"{t}-{p} on broker {b}", str(error)) for t, p, b in dirs)
    record = replace(record.with_state(OwnershipState.STARTED, now_ms, note=note), moves=started)
    applier.record(record)
    return Submitted(record, started, refused, note, unplaced=unplaced)


REPLICA_NOT_AVAILABLE = "ReplicaNotAvailableError"  # AlterReplicaLogDirs before the new replica exists
PLACE_RETRY_S = 0.5


def move_log_dirs(applier, log_dirs, timeout_s):
    """AlterReplicaLogDirs of `log_dirs` ((topic, partition, broker) -> dir), retried while new replicas do not
    exist yet, up to `timeout_s`. Returns [("<topic>-<partition> on broker <b>", error)] of those not started."""
    wanted = dict(log_dirs)
    deadline = time.monotonic() + timeout_s
    results = {}
    while wanted:
        results = applier.move_log_dirs(wanted)
        wanted = {r: d for r, d in wanted.items() if results.get(r) is not None}
        retry = all(results.get(r) == REPLICA_NOT_AVAILABLE for r in wanted)
        if not wanted or not retry or time.monotonic() > deadline:
            break
        time.sleep(PLACE_RETRY_S)
    return [(f"{t}-{p} on broker {b}", results.get((t, p, b)) or "no answer") for (t, p, b) in wanted]


def roll_back(admin, applier, record, now_ms, why):
    """Mark `record` aborted (no moves: nothing of it runs) and take out what it set: the sweep with it released.
    Never raises: what it could not take out is said in `RolledBack.left`."""
    aborted = replace(record.with_state(OwnershipState.ABORTED, now_ms, note=f"not started: {why}"), moves=())
    try:
        applier.record(aborted)
        applier.ledger.refresh()
        swept = sweep(admin, applier, applier.ledger.records(), Policy(release=frozenset({record.request_id})),
                      log=quiet)
    except Exception as error:  # nothing could be read or marked: every claim may still be set
        return RolledBack(None, (), f"{describe_claims(record)} (rollback failed: {error})")
    left = "; ".join(describe(a) for a in swept.actions if a.action == FAILED)
    return RolledBack(aborted, tuple(swept.actions), left)
