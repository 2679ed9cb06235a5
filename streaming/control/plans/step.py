"""One step of a plan: `advance_once(admin, read, applier, request_id, now_ms, timeout_s) -> Step`.

What `execute --wait` loops on (streaming.commands.plan_execute) and what the job's controller calls for every
active plan whose lease it holds (one advancer per plan at a time). Reads go through `admin` and `read`; every
write through the one writer (`applier`, streaming.control.applier.Applier) and its ledger. Each step:

1. refresh the plans and the ownership records (both in the ownership topic) and read the cluster; a plan's
   topic the read does not show must be unknown to the cluster asked by name (`confirm_gone`), else the step
   stops there (a principal without Describe on it must not fail its partitions);
2. settle a wave left `pending` by an advancer that died mid-submission: its partitions that reassign
   to our target or reached it were accepted, the others were not (pending again), and the wave is
   marked `started` with the accepted ones, so the janitor may remove what the others' claims set;
3. classify every partition of the plan (streaming.control.plans.partition_states), with the refusals its waves recorded;
4. a CANCELLED plan: cancel its partitions in flight (KIP-455 reverts them) and let the janitor remove
   their throttles; nothing is submitted. A copy between log dirs is not stopped by KIP-455: one copying is
   left to finish, one never started counts as cancelled (`_not_copying`);
5. start the moves between log dirs of partitions in flight that do not copy yet (`_place`: a wave whose advancer
   stopped before it sent them, a new replica created outside its dir); then the janitor's sweep, as `verify`
   does: throttles of finished partitions are removed BEFORE new ones are set. A partition that finishes after
   the sweep's read keeps its entries until the next step's sweep, and holds its slot until then
   (streaming.control.plans.scheduler.load_of): so a throttled-replicas list names only partitions in flight or
   finished since this advancer's last step began, never more than --max-partitions-in-flight of them (docs/plans.md "What the throttled-replicas lists hold"). When the sweep
   removed something the cluster is read again, so the next wave records as prior rate what is there after the
   sweep (a rate the sweep deleted is not mistaken for someone else's and left behind), and so is it when the
   sweep's refresh of the ledger found a wave settled by another janitor since the first read;
6. nothing pending or in flight at the read of step 1 (states.settled: so the sweep came after every
   partition counted done; failed, cancelled and left-alone ones never hold it): the plan is DONE; PAUSED:
   nothing is submitted;
7. schedule (streaming.control.plans.scheduler) on what reassigns or moves between log dirs in the whole cluster
   (`dir_load`), and submit one wave (streaming.control.submission) with throttles for exactly its partitions;
8. read the plan again: cancelled meanwhile (by `cancel --request-id`), the wave is cancelled too, so a
   cancel racing a step never leaves a partition moving.

A partition reassigned by someone else is never submitted or cancelled here: it is LEFT_ALONE and
reported in `Step.left_alone`. A partition that is gone or that Kafka refused for good is FAILED, reported in
`Step.failed`, and never submitted again. Crash-safe: every decision is taken again from the plan, its waves and
the cluster, so a step may be cut off anywhere; nothing is submitted that reassigns at the read.
"""

from collections import Counter
from dataclasses import dataclass, field, replace

from streaming.control.ownership.records import Ownership, new_request_id
from streaming.control.ownership.store import find_plan
from streaming.control.placement import between_dirs, copies, logs_of, misplaced, to_place
from streaming.control.plans.partition_states import classify, final_refusal, refusal_reason, settled
from streaming.control.plans.scheduler import Candidate, load_of, schedule
from streaming.control.submission import submit
from streaming.control.sweep import sweep
from streaming.control.throttles.claims import log_dir_moves, throttle_setting
from streaming.control.throttles.view import view_of
from streaming.vocabulary.errors import BadInput, ClusterError
from streaming.vocabulary.throttle_actions import Policy
from streaming.vocabulary.throttle_entries import parse
from streaming.vocabulary.states import OwnershipState, PlanPartitionState, PlanState


@dataclass(frozen=True)
class Step:
    plan: object  # streaming.control.ownership.plans.Plan, as it is after the step
    counts: dict  # PlanPartitionState -> number of partitions, after the step's submissions
    submitted: tuple = ()  # (topic, partition) submitted in this step
    refused: tuple = ()  # ((topic, partition), error) refused by AlterPartitionReassignments in this step
    cancelled: tuple = ()  # (topic, partition) cancelled in this step
    left_alone: tuple = ()  # ((topic, partition), reason): moved or moving by someone else
    failed: tuple = ()  # ((topic, partition), reason): gone, or refused by Kafka for good
    throttle_actions: tuple = ()  # streaming.vocabulary.throttle_actions.ThrottleAction taken by the sweep
    states: dict = field(default_factory=dict)  # (topic, partition) -> its PlanPartitionState as read
    sizes: dict = field(default_factory=dict)  # (topic, partition) -> its leader's log bytes as read (sizes_of)

    @property
    def finished(self):
        """Nothing more will happen: the plan is done, or cancelled with nothing of it moving."""
        return self.plan.state == PlanState.DONE or (self.plan.state == PlanState.CANCELLED
                                                     and not self.counts.get(PlanPartitionState.IN_FLIGHT))


def sizes_of(snapshot):
    """(topic, partition) -> bytes of its leader's current log (DescribeLogDirs); absent when unknown."""
    leaders = {(r["topic"], r["partition"]): r["leader"] for r in snapshot["partitions"]}
    return {(r["topic"], r["partition"]): r["size"] for r in snapshot["log_dirs"]
            if not r["is_future"] and leaders.get((r["topic"], r["partition"])) == r["broker"]}


def candidate(move, sizes, logs=None):
    """The scheduler's Candidate of a pending `move`: the brokers it involves (every replica of a reassignment,
    and each broker moving its replica between log dirs) and the bytes it copies (its leader's log per new
    replica, and each existing replica's log that moves between log dirs: streaming.control.placement)."""
    between = copies(move, logs or {})
    reassigns = tuple(move.target) != tuple(move.sources)
    brokers = (frozenset(move.sources) | frozenset(move.target) if reassigns else frozenset()) | frozenset(between)
    return Candidate((move.topic, move.partition), brokers,
                     sizes.get((move.topic, move.partition), 0) * len(move.destinations) + sum(between.values()))


def misplaced_of(plan, snapshot):
    """(topic, partition) -> the brokers whose replica is not yet in the log dir the plan names (empty for a
    move that names none)."""
    logs = logs_of(snapshot["log_dirs"])
    return {(m.topic, m.partition): misplaced(m, logs) if m.log_dirs else frozenset() for m in plan.moves}


def classified(plan, snapshot, submitted, refusals):
    """(topic, partition) -> (state, reason) for every partition of the plan."""
    current = {(r["topic"], r["partition"]): r["replicas"] for r in snapshot["partitions"]}
    ongoing = {(r["topic"], r["partition"]): r for r in snapshot["reassignments"]}
    away = misplaced_of(plan, snapshot)
    return {key: classify(m, key in submitted, current.get(key), ongoing.get(key), refusals.get(key), away[key])
            for m in plan.moves for key in [(m.topic, m.partition)]}


def names_log_dirs(plan):
    return any(m.log_dirs for m in plan.moves)


def confirm_log_dirs(plan, snapshot):
    """A plan naming log dirs decides from every alive broker's DescribeLogDirs (where its replicas are, which future
    logs count against its limits): a poll missing one is a ClusterError, and the next step reads again."""
    if not names_log_dirs(plan):
        return
    answered = {r["broker"] for r in snapshot["log_dirs_answered"]}
    missing = sorted({b["broker"] for b in snapshot["brokers"] if b["alive"]} - answered)
    if missing:
        raise ClusterError(f"DescribeLogDirs of broker {missing[0]} missing: a plan naming log dirs not stepped")


def dir_load(plan, snapshot, states):
    """(topic, partition) -> {broker: bytes} of the moves between log dirs that count against the limits: every
    future log in the cluster, and the plan's own partitions in flight whose copy has not started yet."""
    logs = logs_of(snapshot["log_dirs"])
    load = between_dirs(snapshot["log_dirs"])
    for m in plan.moves:
        key = (m.topic, m.partition)
        if m.log_dirs and states[key][0] == PlanPartitionState.IN_FLIGHT and key not in load:
            away, copying = misplaced(m, logs), copies(m, logs)
            if away:
                load[key] = {b: copying.get(b, 0) for b in away}
    return load


def _place(applier, plan, snapshot, states):
    """Start the moves between log dirs of the plan's partitions in flight that are not copying yet (a wave
    submitted by an advancer that stopped before it sent them, a new replica that did not exist then). One
    AlterReplicaLogDirs without retries: what it does not start, the next step asks again."""
    logs = logs_of(snapshot["log_dirs"])
    wanted = {replica: d for m in plan.moves if m.log_dirs
              and states[(m.topic, m.partition)][0] == PlanPartitionState.IN_FLIGHT
              for replica, d in to_place(m, logs).items()}
    if wanted:
        applier.move_log_dirs(wanted)


def refusals_of(waves):
    """(topic, partition) -> the error of its latest refused submission, from the waves (in the store's order)."""
    return {(r.topic, r.partition): r.error for w in waves for r in w.refused}


def _named(states, wanted):
    return tuple((key, reason) for key, (state, reason) in states.items() if state == wanted)


def still_throttled(waves, snapshot):
    """(topic, partition) of the plan's active waves not reassigning whose claimed throttled-replicas entries
    are still set: they finished after the sweep's read, and the next step's sweep removes them. (A wave the
    janitor marked done claims nothing any more: an entry of its left in a list is someone else's now.)"""
    ongoing = {(r["topic"], r["partition"]) for r in snapshot["reassignments"]}
    listed = {(r["topic"], r["kind"]): parse(r["value"]) for r in snapshot["topic_throttles"]}
    return frozenset((c.topic, c.partition) for w in waves if w.active for c in w.entries
                     if (c.topic, c.partition) not in ongoing
                     and (c.partition, c.broker) in listed.get((c.topic, c.kind), ()))


def _settle_pending_waves(applier, waves, snapshot, now_ms):
    """Step 2: waves an advancer left `pending` become `started` with the moves the cluster shows accepted."""
    current = {(r["topic"], r["partition"]): tuple(r["replicas"]) for r in snapshot["partitions"]}
    ongoing = {(r["topic"], r["partition"]) for r in snapshot["reassignments"]}
    for wave in waves:
        if wave.state != OwnershipState.PENDING:
            continue
        accepted = tuple(m for m in wave.moves if (m.topic, m.partition) in ongoing
                         or current.get((m.topic, m.partition)) == tuple(m.target))
        settled_wave = wave.with_state(OwnershipState.STARTED, now_ms, note="settled after its advancer stopped mid-submission")
        applier.record(replace(settled_wave, moves=accepted))


def _waves(ledger, plan):
    return [r for r in ledger.records() if r.plan_id == plan.request_id]


def _submitted(waves):
    return {(m.topic, m.partition) for w in waves if w.state != OwnershipState.PENDING for m in w.moves}


def _read_plan(read, ledger, request_id):
    """(plan, snapshot of its topics, its waves), after reading what others wrote to the ledger."""
    ledger.refresh()
    plan = find_plan(ledger, request_id)
    if plan is None:
        raise BadInput(f"no plan with request id {request_id}")
    return plan, read(sorted({m.topic for m in plan.moves})), _waves(ledger, plan)


def confirm_gone(admin, plan, snapshot):
    """Before a step acts on partitions the snapshot does not show (states.gone: FAILED): their topics must be
    unknown to the cluster when asked by name. A Metadata of every topic hides a topic the principal may not
    describe, which must not fail the plan's partitions: NotAuthorized (nothing written yet). A topic shown by
    name but not in the snapshot (Metadata not yet caught up) is a ClusterError: the next step reads again."""
    shown = {r["topic"] for r in snapshot["partitions"]}
    missing = {m.topic for m in plan.moves} - shown
    if missing:
        still_there = missing - admin.unknown_topics(sorted(missing))
        if still_there:
            raise ClusterError(f"topic {sorted(still_there)[0]} exists but Metadata did not show it: not stepped")


def advance_once(admin, read, applier, request_id, now_ms, timeout_s):
    """One step of the plan `request_id` (see the module docstring). `read(topics) -> Snapshot`: a poll of
    those topics with every answer a decision needs (streaming.cluster.poller), raising otherwise; `admin`:
    the door the reads go through; `applier`: the one writer, with the ledger the plan is in."""
    ledger = applier.ledger
    plan, snapshot, waves = _read_plan(read, ledger, request_id)
    read_against = ledger.records()
    confirm_gone(admin, plan, snapshot)
    confirm_log_dirs(plan, snapshot)
    if any(w.state == OwnershipState.PENDING for w in waves):
        _settle_pending_waves(applier, waves, snapshot, now_ms)
        waves = _waves(ledger, plan)
    refusals = refusals_of(waves)
    states = classified(plan, snapshot, _submitted(waves), refusals)
    left_alone, failed = _named(states, PlanPartitionState.LEFT_ALONE), _named(states, PlanPartitionState.FAILED)
    if plan.state == PlanState.CANCELLED:
        in_flight = [key for key, (state, _) in states.items() if state == PlanPartitionState.IN_FLIGHT]
        idle = _not_copying(plan, snapshot, in_flight)
        cancelled = _cancel(applier, [key for key in in_flight if key not in idle]) + idle
        actions = _sweep(admin, applier, waves)
        return Step(plan, _counts(states, cancelled=cancelled), cancelled=cancelled, left_alone=left_alone,
                    failed=failed, throttle_actions=actions, states=_bare(states), sizes=sizes_of(snapshot))
    _place(applier, plan, snapshot, states)  # a paused plan's partitions in flight keep moving
    actions = _sweep(admin, applier, ())
    counts = _counts(states)  # as read before the sweep: every partition counted done had its throttles swept
    if plan.state != PlanState.DONE and settled(counts):
        plan = plan.with_state(PlanState.DONE, now_ms, note="nothing pending or in flight")
        applier.record_plan(plan)
    if plan.state != PlanState.RUNNING:
        return Step(plan, counts, left_alone=left_alone, failed=failed, throttle_actions=actions,
                    states=_bare(states), sizes=sizes_of(snapshot))
    fresh = states
    # The wave's claims judge the throttles they find (their prior values) against the ledger: the read must be of
    # the cluster after the sweep, and after what the sweep's refresh of the ledger brought in (another janitor
    # settled a wave whose throttles the first read still showed: taken for foreign, they would be restored).
    if actions or ledger.records() != read_against:
        snapshot = read(sorted({m.topic for m in plan.moves}))
        confirm_gone(admin, plan, snapshot)
        confirm_log_dirs(plan, snapshot)
        fresh = classified(plan, snapshot, _submitted(waves), refusals)
    sizes, logs = sizes_of(snapshot), logs_of(snapshot["log_dirs"])
    pending = [candidate(m, sizes, logs) for m in plan.moves
               if fresh[(m.topic, m.partition)][0] == PlanPartitionState.PENDING]
    ongoing = {(r["topic"], r["partition"]): r for r in snapshot["reassignments"]}
    load = load_of(ongoing, sizes, still_throttled(waves, snapshot), dir_load(plan, snapshot, fresh))
    chosen = set(schedule(pending, load, plan.limits))
    if not chosen:
        return Step(plan, counts, left_alone=left_alone, failed=failed, throttle_actions=actions, states=_bare(fresh),
                    sizes=sizes)
    started, refused = submit_wave(admin, applier, plan, [m for m in plan.moves if (m.topic, m.partition) in chosen],
                                   snapshot, now_ms, timeout_s)
    submitted = tuple((m.topic, m.partition) for m in started)
    ledger.refresh()
    latest = find_plan(ledger, request_id)
    cancelled = ()
    if latest.state == PlanState.CANCELLED:  # cancelled while this wave was being submitted: it is cancelled too
        cancelled, plan = _cancel(applier, submitted), latest
    refused = tuple(((m.topic, m.partition), e) for m, e in refused)
    newly_failed = {key: (PlanPartitionState.FAILED, refusal_reason(e)) for key, e in refused if final_refusal(e)}
    in_flight = {key: (PlanPartitionState.IN_FLIGHT, "") for key in submitted}
    after = {**fresh, **in_flight, **{key: (PlanPartitionState.CANCELLED, "") for key in cancelled}, **newly_failed}
    counts = _counts({**states, **in_flight, **newly_failed}, cancelled=cancelled)
    return Step(plan, counts, submitted, refused, cancelled, left_alone, failed + tuple(
        (key, reason) for key, (_, reason) in newly_failed.items()), actions, _bare(after), sizes)


def observe(read, ledger, request_id):
    """The plan as it is, without acting (no settling, sweep or submission): a Step with nothing done, for
    reports on a plan another advancer steps or a job that may not act. A wave left `pending` counts as
    submitted (its partitions are not taken for someone else's). A topic Metadata does not show counts as
    gone without asking it by name (`confirm_gone`): this only reports, and every reader holds Describe on
    Topic `*` (docs/security.md "Kafka ACLs")."""
    plan, snapshot, waves = _read_plan(read, ledger, request_id)
    states = classified(plan, snapshot, {(m.topic, m.partition) for w in waves for m in w.moves}, refusals_of(waves))
    return Step(plan, _counts(states), left_alone=_named(states, PlanPartitionState.LEFT_ALONE),
                failed=_named(states, PlanPartitionState.FAILED), states=_bare(states), sizes=sizes_of(snapshot))


def _bare(states):
    return {key: state for key, (state, _) in states.items()}


def _counts(states, cancelled=()):
    counts = Counter(state for state, _ in states.values())
    if cancelled:
        counts[PlanPartitionState.IN_FLIGHT] -= len(cancelled)
        counts[PlanPartitionState.CANCELLED] += len(cancelled)
    return dict(counts)


def _not_copying(plan, snapshot, in_flight):
    """The partitions of a cancelled plan in flight only for a move between log dirs that never started (at their
    target, no future log): nothing to stop, so they count as cancelled. One whose future log copies is left to
    finish: KIP-455 cancels reassignments, not moves between log dirs."""
    current = {(r["topic"], r["partition"]): tuple(r["replicas"]) for r in snapshot["partitions"]}
    moving = set(between_dirs(snapshot["log_dirs"])) | {(r["topic"], r["partition"]) for r in snapshot["reassignments"]}
    away = misplaced_of(plan, snapshot)
    targets = {(m.topic, m.partition): tuple(m.target) for m in plan.moves}
    return tuple(k for k in in_flight if away[k] and k not in moving and current.get(k) == targets[k])


def _cancel(applier, keys):
    """Cancel `keys` (KIP-455): those the cluster accepted (or that finished meanwhile) are returned."""
    if not keys:
        return ()
    answers = applier.cancel_moves(keys)
    return tuple(k for k in keys if answers.get(k) is None)


def _sweep(admin, applier, released_waves):
    """The janitor's sweep (owned policy) on a fresh read, releasing `released_waves`; its actions."""
    applier.ledger.refresh()
    policy = Policy(release=frozenset(w.request_id for w in released_waves))
    return tuple(sweep(admin, applier, applier.ledger.records(), policy).actions)


def submit_wave(admin, applier, plan, moves, snapshot, now_ms, timeout_s):
    """Submit `moves` (of `plan`) as one wave: an ownership record naming the plan, with the KIP-179 throttles
    of exactly these moves (streaming.control.submission) -> (started moves, [(move, error)] refused). Raises
    (after rolling back) when setting throttles or the request failed."""
    records = applier.ledger.records()
    setting = throttle_setting(moves, view_of(snapshot), [r for r in records if r.active], plan.throttle,
                               log_dir_moves(moves), plan.log_dir_throttle)
    record = Ownership(request_id=new_request_id([r.request_id for r in records] + [plan.request_id], now_ms),
                       state=OwnershipState.PENDING, created_ms=int(now_ms), updated_ms=int(now_ms), moves=tuple(moves),
                       entries=setting.entries, rates=setting.rate_claims, plan_id=plan.request_id)
    submitted = submit(admin, applier, record, setting, timeout_s, now_ms)
    return submitted.started, list(submitted.refused)
