"""One wave of a plan onto the cluster, as `execute` starts a request (streaming.commands.execute):

1. an ownership record (state `pending`, `plan_id` = the plan) claiming the KIP-179 throttles of exactly
   these moves, written before any config is altered;
2. the throttles set and read back (streaming.control.throttles.setter);
3. AlterPartitionReassignments;
4. the throttles applied again (see execute's step 5), then the record marked `started` with only the
   moves the cluster accepted, and those refused in `refused` with Kafka's error (streaming.control.plans.partition_states decides
   from it whether such a partition is pending again or failed).
When nothing was accepted or a step failed, the record is marked `aborted` with no moves (and the
refusals, if any) and the
janitor takes out what it set. A crash between 1 and 4 leaves a `pending` wave: streaming.control.plans.advance
settles it from the cluster on its next step.
"""

from dataclasses import replace

from streaming.vocabulary.throttle_actions import Policy
from streaming.control.throttles.claims import throttle_setting
from streaming.control.throttles.janitor import Janitor
from streaming.control.ownership.records import ABORTED, PENDING, STARTED, Ownership, Refusal, new_request_id
from streaming.control.throttles.setter import set_throttles
from streaming.control.throttles.view import view_of
from streaming.vocabulary.errors import ClusterError


def quiet(_line):
    """The janitor's log here: the caller reports the actions."""


def submit_wave(admin, owners, plan, moves, snapshot, now_ms, timeout_s):
    """Submit `moves` (of `plan`) -> (started moves, [(move, error)] refused). Raises ClusterError when
    setting throttles failed (after taking them out again)."""
    records = owners.records()
    setting = throttle_setting(moves, view_of(snapshot), [r for r in records if r.active], plan.throttle)
    record = Ownership(request_id=new_request_id([r.request_id for r in records] + [plan.request_id], now_ms),
                       state=PENDING, created_ms=int(now_ms), updated_ms=int(now_ms), moves=tuple(moves),
                       entries=setting.entries, rates=setting.rate_claims, plan_id=plan.request_id)
    owners.put(record)
    throttled = bool(setting.appends or setting.rates)
    try:
        if throttled:
            set_throttles(admin, setting, timeout_s)
        results = admin.start_reassignments({(m.topic, m.partition): list(m.target) for m in moves})
    except Exception as error:
        _abort(admin, owners, record, now_ms, error)
        raise
    started = tuple(m for m in moves if results.get((m.topic, m.partition), "no answer") is None)
    refused = [(m, results.get((m.topic, m.partition), "no answer")) for m in moves if m not in started]
    record = replace(record, refused=tuple(Refusal(m.topic, m.partition, error) for m, error in refused))
    if not started:
        _abort(admin, owners, record, now_ms, "no partition reassignment was accepted")
        return started, refused
    note = None
    try:
        if throttled:
            set_throttles(admin, setting, timeout_s)
    except ClusterError as error:  # the moves run: recorded as started (the janitor cleans up), reported
        note = f"re-applying throttles failed: {error}"
    owners.put(replace(record.with_state(STARTED, now_ms, note=note), moves=started))
    return started, refused


def _abort(admin, owners, record, now_ms, error):
    owners.put(replace(record.with_state(ABORTED, now_ms, note=f"wave not started: {error}"), moves=()))
    Janitor(admin, owners, Policy(release=frozenset({record.request_id})), log=quiet).sweep()
