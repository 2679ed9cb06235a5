"""The job's controller: the one part of the streaming job that changes the cluster or the ownership topic.

It runs on the driver, in one thread of the `run` process, from the moment `run` starts (before Spark is up).
Every change goes through its one writer (streaming.control.applier.Applier) and its one ledger of the ownership
topic; every decision is a pure function of what it knows (its one view of the cluster: its own looks, the
reads its decisions need, and what each Spark batch hands it). The Spark batches only compute and write their
records; they hand their findings over (`hand_over`) and never act.

The first tick is the first look: the reassignments listed, the ledger read, and the throttle baseline that adoption
compares against (`ViewHistory`) read, before liveness is first published. Until Spark's first batch, that read is a
whole poll of the cluster, and the picture of its moves (`picture_of`, the same rules as a batch's) is shown on
/metrics: a move in flight when `run` starts shows there seconds later, not after Spark's start. The same picture
of a poll of its own is shown while a batch is late (`_show_own_poll`). Each tick, about every second:
1. ListPartitionReassignments, one request, never waiting for a silent Kafka controller (the door's
   `impatient`; while it answers nobody, the door's last list, handed to the batches through the gate). A failure
   counts in kafka_reassignment_monitor_poll_errors_total{api="ListPartitionReassignments"} and asks for a batch.
   A list that waited out a request deadline - or a look between ticks (step 5) that did - leaves steps 2-7 to the
   next tick, at once (batch_rules.defers_the_rest: one wait per tick).
2. While something reassigns or owned throttles are known (and until a first list succeeded), and otherwise once
   a trigger interval: read what others wrote to the ledger since then, and take the owned partitions. Every read
   of the ledger, whichever duty makes it (this one, a batch's janitor, adoption's look, a sweep, a plan's step),
   notes the moves Kafka accepted since the read before (`_note_accepted`); a move noted since the last tick
   looked that is not listed now and was not at the last tick started and completed between two looks
   (batch_rules.ended_unseen), looked for after steps 3 and 4 have read.
3. The findings of each batch finished since the last tick, in order (`_on_batch`): `--throttle auto` steers the
   rates it owns (streaming.control.throttles.steering); throttles that appeared with a move another tool started
   are adopted (streaming.control.throttles.adoption, rule "observed"); when the batch's poll shows a removal due,
   a record settled or a claim given up, the janitor sweeps on a fresh read (streaming.control.sweep). Under
   `--dry-run` or `--throttle-cleanup off` the due actions are reported once as `dry_run` records instead.
4. A move that is not ours appears in the list: the throttles of the whole cluster are read at once, so the
   ones it brought are adopted however long the next batch takes.
5. The moment an owned partition leaves the reassignment list (between ticks, while an owned partition
   reassigns, the controller looks at the list every quarter second and ticks at once when one left: `_wait`),
   or a move of ours came and went unseen - or at start, when ownership records are active (a removal due while
   the job was down), and again after a failed sweep - the janitor sweeps (streaming.control.sweep).
6. Plans: one step of every running or paused plan whose lease this job holds (streaming.control.plans.advancer),
   at most once a second.
7. The `throttle` records of what it did go to the progress topic (kept and written again next tick if that
   write fails), with the id of the batch whose findings led to them, else of the batch after the last one this
   run finished (the batch that reports the move finished), -1 before this run's first batch.
8. Whether a Spark batch is needed (streaming.control.batch_rules), written to the gate the source reads
   (streaming.control.gate) with every move listed that no batch has reported yet: a batch's end offset carries
   them, so its replay after a crash reports them even if they ended meanwhile (their COMPLETED or CANCELLED is
   never lost). While no batch is needed, once a trigger interval the throttles of the whole cluster are read
   (adoption's view stays at most a trigger old).
9. Liveness (kafka_reassignment_monitor_last_poll_timestamp_seconds) when batch_rules.publishes_liveness - also right
   after step 1, on the last tick's decision, and from a second thread that lists once a tick interval while a tick
   is busy (`look_while_busy`), so that a duty waiting on Kafka (a sweep's write held until Kafka fenced a broker
   that died) does not delay it.
A tick longer than SLOW_TICK_S is logged with its steps' seconds ("slow tick: ..."), and so is a gap longer than that
between two lists of the reassignments by any of the controller's looks ("slow look: ..."): the tick's, the one
between ticks, the one while a tick is busy. A slow tick is not a slow look while the busy look lists.

Runs on the driver only; nothing here is pickled. The batch handler (Spark's foreachBatch thread) calls
`hand_over` after each successful batch, writes its records inside `batch_writing()` and reads
`plan_statuses()`; those are the only calls from another thread, and they touch only what the lock guards.
The clock is injectable for tests.
"""

import contextlib
import functools
import sys
import threading
import time
from collections import deque

from sinks import records as progress_records
from sinks.throttle_records import describe, describe_observed, throttle_record
from streaming.cluster.own_topics import DELIVERY_OUTLASTS_FENCING_S
from streaming.cluster.poller import poll
from streaming.control import batch_rules, gate
from streaming.control.applier import Applier
from streaming.control.ownership.records import accepted_moves, new_request_id
from streaming.control.ownership.store import NotedReads
from streaming.control.plans.advancer import PlanAdvancer
from streaming.control.sweep import given_up, settle_candidates, sweep
from streaming.control.throttles.adoption import observe
from streaming.control.throttles.bookkeeping import settled
from streaming.control.throttles.read import read_cluster
from streaming.control.throttles.removal import decide
from streaming.control.throttles.steering import changed_brokers, followed, steer
from streaming.control.throttles.view import after_actions, view_of
from streaming.vocabulary.defaults import request_deadline_s
from streaming.vocabulary.kafka_apis import DESCRIBE_CONFIGS, LIST_REASSIGNMENTS, PRODUCE, READ
from streaming.vocabulary.replica_row import partition_of
from streaming.vocabulary.throttle_actions import ALL, ALTER_LOG_DIRS, REMOVED, RESTORED
from streaming.control.ownership.records import Origin

TICK_INTERVAL_S = 1.0
# A batch's durable write is given up by the producer after this long (streaming.cluster.own_topics): while a
# write is younger, the batch is held by Kafka, not late (batch_rules.batch_held_by_write).
WRITE_BOUND_S = DELIVERY_OUTLASTS_FENCING_S
SLOW_TICK_S = 2 * TICK_INTERVAL_S
# At most this many moves no batch has reported yet are handed to one batch (they go into its end offset, in the
# checkpoint's offset log): thousands of moves starting or ending at once are carried over several batches.
HANDOVER_LIMIT = 10_000
# The observer compares consecutive views of the whole cluster; views further apart than this many triggers (at
# least a minute, so long batches at scale still observe) had a gap in between, and a throttle someone set
# meanwhile must not pass for one set with the next foreign reassignment.
OBSERVE_GAP_TRIGGERS = 3
OBSERVE_GAP_MIN_S = 60.0

LOG_PREFIX = "reassign-monitor: controller: "
JANITOR_PREFIX = "throttle janitor: "
STEERING_PREFIX = "throttle auto: "
SLOW_TICK_LINE = "slow tick: "
SLOW_LOOK_LINE = "slow look: "
SWEPT_LINE = "throttle janitor swept in "  # with its steps' seconds (ownership, read, alter, read_back, records)
# The decision lines, logged when the decision changes (tests read them from the job's log).
IDLE_LINE = "idle: no Spark batch until something moves"
BATCHES_LINE = "Spark batches run: "


def _log(line):
    print(line, file=sys.stderr, flush=True)


def observe_gap_ms(trigger_interval_s):
    return int(max(OBSERVE_GAP_TRIGGERS * trigger_interval_s, OBSERVE_GAP_MIN_S) * 1000)


def _as_listed(move):
    """An ownership Move as ListPartitionReassignments listed it while it ran (streaming.vocabulary.snapshot
    "reassignments": the target, then the replicas it removes)."""
    removing = [b for b in move.sources if b not in move.target]
    return {"topic": move.topic, "partition": move.partition, "replicas": [*move.target, *removing],
            "adding": list(move.destinations), "removing": removing}


def _step(name):
    """Adds the seconds a tick spent in the decorated method to `self._tick_steps[name]` (said with a slow tick)."""
    def decorate(method):
        @functools.wraps(method)
        def timed(self, *args, **kwargs):
            started = self.clock()
            try:
                return method(self, *args, **kwargs)
            finally:
                self._tick_steps[name] = self._tick_steps.get(name, 0.0) + self.clock() - started
        return timed
    return decorate


class ViewHistory:
    """The controller's views of the whole cluster's throttles, as adoption compares them (the last two, newest
    last). A view older than the newest one, or than the read the last removals were decided on, is not taken:
    it would show throttles since removed as there, or our own restores as someone else's change."""

    def __init__(self, gap_ms=None):
        self.gap_ms = gap_ms
        self.views = deque(maxlen=2)
        self.acted_ms = -1  # the time of the fresh read the latest removals were decided on

    def takes(self, view):
        newest = self.views[-1].now_ms if self.views else -1
        return view.now_ms >= newest and view.now_ms > self.acted_ms

    def admit(self, view):
        """The history to compare `view` with, or None when it is not comparable (a gap, or incomplete: then
        what looks new after it may just have been unseen, and the history starts again)."""
        stale = bool(self.views) and self.gap_ms is not None and view.now_ms - self.views[-1].now_ms > self.gap_ms
        if not view.complete or stale:
            self.views.clear()
        return list(self.views) if view.complete else None

    def after(self, actions):
        """Our own removals and restores are nobody's new throttles: the newest view as it is after them."""
        if self.views and actions:
            self.views[-1] = after_actions(self.views[-1], actions)


class Controller:
    """`admin`: the driver's door; `ledger`: streaming.control.ownership.store.Ledger of the ownership topic;
    `metrics`: sinks.prometheus.MonitorMetrics; `gate_path`: the file streaming.control.gate writes; `policy`:
    the janitor's streaming.vocabulary.throttle_actions.Policy; `writer`: write(keyed records) to the progress
    topic; `steering`: the job's `--throttle auto` Steering bounds (None: no steering) with `throttle_interval_s`
    and `guard` (a callable, or None); `read(topics)`: a poll of those topics with every decision API answered
    (plans); `picture_of(snapshot)`: the Prometheus picture of a whole poll, shown until Spark's first batch
    and while a batch is late (None: /metrics shows the batches' pictures only)."""

    def __init__(self, admin, ledger, metrics, gate_path, trigger_interval_s, policy, writer=None, read=None,
                 timeout_s=10.0, steering=None, throttle_interval_s=30.0, guard=None, interval_s=TICK_INTERVAL_S,
                 clock=time.monotonic, wall=time.time, log=_log, plans=True, picture_of=None):
        self.admin, self.metrics, self.gate_path = admin, metrics, gate_path
        # Every read of the ledger - the applier's and the plans' too - notes the requests Kafka accepted.
        self.ledger = NotedReads(ledger, self._note_accepted)
        self.trigger_interval_s, self.policy, self.writer = trigger_interval_s, policy, writer
        self.steering, self.throttle_interval_s, self.guard = steering, throttle_interval_s, guard
        self.interval_s, self.clock, self.wall, self.log = interval_s, clock, wall, log
        self.picture_of = picture_of
        self.request_deadline_s = request_deadline_s(timeout_s)
        self.applier = Applier(admin, self.ledger, log=self._janitor_log)
        self.plans = PlanAdvancer(admin, self.applier, read, timeout_s, acts=policy.acts) if plans else None
        self.history = ViewHistory(observe_gap_ms(trigger_interval_s))
        self._plan_lines = {}  # request_id -> the last line logged about it
        self._plans_read_s = None  # when the plans were last read
        self._lock = threading.Lock()  # what the batch handler (foreachBatch thread) hands over
        self._findings = []  # BatchFindings handed over since the last tick, oldest first
        self._wake = threading.Event()
        self._batches_done = 0
        self._last_batch_id = -1
        self._tracks_moves = False
        self._throttles_to_clear = False
        self._last_batch_s = clock()
        self._deferred = False  # the last tick left its duties to this one (batch_rules.defers_the_rest)
        self._ticking_since_s = None  # when the tick under way started (`look_while_busy`)
        self._looked_s = 0.0  # the seconds of a look between ticks that ended the wait on a lapse or failure (`_wait`)
        self._last_batch_ran_s = clock()  # any batch, its poll failed or not (`batch_ran`)
        self._listed_for_batches = None  # the door's last list while Kafka's controller is silent (`_list`)
        self._listed_rows = ()  # the rows of the last list that succeeded (`_list`)
        self._writing_since_s = None  # a batch is waiting for its records' acknowledgement since then
        self._own_poll = threading.Thread()  # the last poll of its own for /metrics (`_show_own_poll`), never started
        self._own_poll_s = None  # when it was started
        self._tick_steps = {}  # seconds of the current tick's steps (_step)
        self._viewed_s = None  # when adoption last took a view of the whole cluster (a batch's poll or a read)
        self._reassigning = frozenset()
        # Moves listed that no batch has reported yet ((topic, partition) -> ListPartitionReassignments row),
        # and the partitions a batch reported while they are still listed (not handed over again).
        self._unreported, self._reported = {}, set()
        self._owned = frozenset()
        self._accepted = None  # (topic, partition) -> Move of the requests Kafka accepted, as last read (None: unread)
        self._newly_accepted = {}  # ... accepted since, by any read, until a tick looked for them (_ended_unseen)
        self._owned_unread = False  # the last read of the ledger failed
        self._owned_read_s = None  # when the ledger was last read
        # Ongoing `execute` requests as last read (request id -> its (topic, partition)s), for the batch's
        # per-request records: replaced whole, never mutated, so the batch's thread may read it.
        self.requests = {}
        self._listed_once = False
        self._listed_s = None  # when any look last listed the reassignments
        self._sweep_due = True  # at start: removals that came due while the job was down (if records are active)
        # Moves between log dirs are in no reassignment list: brokers whose alter-log-dirs rate an active record owns,
        # and those of them that held a future log at the last look (its end is near: looked at like a list).
        self._rate_brokers = frozenset()
        self._future_on = frozenset()
        self._unwritten = []
        self._dry_run_reported = set()  # dry-run actions already reported while they stay due
        self._observed = []  # dry run / off: observed ownership kept in memory only (nothing is written)
        self._last_change_s = {}  # --throttle auto: broker -> clock seconds of its last change
        self._reason = "not decided"
        self._wanted_since_s = None
        self._stop = threading.Event()
        self._thread = None

    def _janitor_log(self, line):
        self.log(f"{JANITOR_PREFIX}{line}")

    def _say(self, line):
        self.log(f"{LOG_PREFIX}{line}")

    # -- from the batch handler (foreachBatch thread) --

    def hand_over(self, findings):
        """After a successful batch (streaming.control.findings.BatchFindings): what its state still tracks and what
        it reported; its poll is acted on by the next tick, at once."""
        clear_all = self.policy.cleanup == ALL
        snapshot = findings.snapshot
        with self._lock:
            self._batches_done += 1
            self._last_batch_id = findings.batch_id
            self._tracks_moves = findings.tracks_moves
            self._throttles_to_clear = clear_all and bool(snapshot["topic_throttles"] or snapshot["broker_throttles"])
            self._last_batch_s = self._last_batch_ran_s = self.clock()
            self._reported |= findings.reported
            for partition in findings.reported:
                self._unreported.pop(partition, None)
            self._findings.append(findings)
        self._wake.set()

    def batch_ran(self):
        """After a batch whose poll failed. While Kafka's controller answers nobody (the list is the door's last
        one), such a batch is not late: its poll failed on that silence before the gate handed it the last list,
        not because batches stall."""
        with self._lock:
            self._last_batch_ran_s = self.clock()

    @contextlib.contextmanager
    def batch_writing(self):
        """Around a batch's durable write of its records (whether it succeeds or raises)."""
        with self._lock:
            self._writing_since_s = self.clock()
        try:
            yield
        finally:
            with self._lock:
                self._writing_since_s = None

    def plan_statuses(self):
        """The active plans' streaming.control.plans.advancer.PlanStatus as of the last round (for the batch's
        records): a dict the advancer replaces whole, never mutates, so it is safe to read from another thread."""
        return self.plans.statuses if self.plans is not None else {}

    # -- the thread --

    def start(self):
        """The thread, whose first tick is the first look (module docstring) and ends with the first published poll,
        and the one that looks while a tick is busy (`look_while_busy`)."""
        self._thread = threading.Thread(target=self._run, name="reassign-monitor-controller", daemon=True)
        self._thread.start()
        threading.Thread(target=self._looking_while_busy, name="reassign-monitor-busy-look", daemon=True).start()
        return self

    def _looking_while_busy(self):
        while not self._stop.wait(self.interval_s):
            self.look_while_busy()

    def look_while_busy(self):
        """While a tick has run for a tick interval or longer - a duty waiting on Kafka, such as a sweep's `acks=all`
        write held until Kafka fenced a broker that died (4.4-5.2 s measured at a 2 s trigger) - list the
        reassignments here and publish that look as liveness, by the same rule: liveness never waits on a duty."""
        ticking_since_s = self._ticking_since_s
        if ticking_since_s is None or self.clock() - ticking_since_s < self.interval_s or not self._listed_once:
            return
        now_wall = self.wall()
        try:
            self._listed_or_last()
        except Exception:  # the tick counts and reports failed lists
            return
        self._publish_look(now_wall)

    def _publish_look(self, now_wall):
        """A look that listed, published as liveness on the last decision (whether a batch is wanted), before the
        tick decides again."""
        if self._liveness(True, self._wanted_since_s is not None, self.clock())[0]:
            self.metrics.snapshot.touch(now_wall)

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self):
        waited_from = None  # the first tick is at once
        while not self._stop.is_set():
            if waited_from is not None:
                self._wait(waited_from)
                if self._stop.is_set():
                    return
            started = waited_from = self._ticking_since_s = self.clock()
            try:
                with self.admin.impatient():  # never waits for a silent Kafka controller (streaming.cluster.door)
                    self.tick()
            except Exception as error:  # a bug must not end the controller: the gate goes stale and fails open
                self._say(f"tick failed: {type(error).__name__}: {error}")
            finally:
                self._ticking_since_s = None
            took_s = self.clock() - started
            if took_s > SLOW_TICK_S:
                steps = ", ".join(f"{name} {s:.2f}" for name, s in self._tick_steps.items())
                self._say(f"{SLOW_TICK_LINE}{took_s:.1f} s ({steps})")

    def _wait(self, started):
        """Until the next tick, or a batch's findings. While an owned partition is reassigning (batch_rules.peeks),
        look at the reassignment list every batch_rules.peek_interval_s and end the wait as soon as an owned
        partition left it - or the look failed: the tick then lists again, and counts and reports the failure."""
        next_tick_s, took_s = started + self.interval_s, 0.0
        while not self._stop.is_set():
            left_s = next_tick_s - self.clock()
            if left_s <= 0 or self._wake.is_set():
                return
            if not (batch_rules.peeks(self._reassigning, self._owned, self.policy.acts)
                    or batch_rules.peeks_log_dirs(self._future_on, self.policy.acts)):
                self._wake.wait(left_s)
                return
            self._wake.wait(min(left_s, batch_rules.peek_interval_s(took_s)))
            if self._wake.is_set() or self.clock() >= next_tick_s:
                return
            looked = self.clock()
            try:
                listed = {partition_of(r) for r in self._listed_or_last()[0]}
            except Exception:
                listed = None
            took_s = self.clock() - looked
            if listed is None or took_s >= self.request_deadline_s:
                # A look that waited out a deadline is the next tick's one wait (batch_rules.defers_the_rest).
                self._looked_s = took_s
                return
            if batch_rules.partitions_left(self._reassigning, listed, self._owned):
                return
            if self._future_on and self._future_on - (self._future_log_brokers() or self._future_on):
                return

    def _future_log_brokers(self):
        """The brokers of `_rate_brokers` holding a future log now (DescribeLogDirs of each); None when a look failed."""
        try:
            return frozenset(b for b in self._rate_brokers if any(r["is_future"] for r in self.admin.describe_log_dirs(b)))
        except Exception:  # looked at again next tick
            return None

    def tick(self):
        """One round (module docstring); returns the reason a batch is wanted, or None."""
        now_wall = self.wall()
        self._tick_steps = {}
        listed = self._list()
        if listed is not None and self._listed_once:
            # The look is the list: liveness is published at once, not after duties that may wait on Kafka (a sweep's
            # acks=all write, held until Kafka fenced a broker that died: 4.4 s measured).
            self._publish_look(now_wall)
        waited_s, self._looked_s = self._tick_steps["list"] + self._looked_s, 0.0
        self._deferred = batch_rules.defers_the_rest(waited_s, self.request_deadline_s, self._deferred)
        if self._deferred:
            return self._decide(listed is not None, now_wall)
        ledger_read = None  # not read this tick
        if listed is not None and (not self._listed_once or listed or self._owned or self._owned_unread
                                   or self._a_trigger_since(self._owned_read_s)):
            ledger_read = self._refresh_owned()
        for findings in self._take_findings():
            self.on_batch(findings)
        if listed is not None and (self._a_trigger_since(self._viewed_s) or self._foreign_move_appeared(listed)):
            # Adoption must know every request of ours first, or it takes our own new move's throttles for another
            # tool's: only on a ledger read this tick.
            if ledger_read or (ledger_read is None and self._refresh_owned()):
                self._observe_now()
        unseen = {} if listed is None else self._ended_unseen(listed)  # after this tick's reads, before its sweep
        if listed is not None and self.policy.acts:
            left = batch_rules.partitions_left(self._reassigning, listed, self._owned)
            future_on = self._future_log_brokers() if self._rate_brokers else frozenset()
            ended = sorted(self._future_on - future_on) if future_on is not None else []
            self._future_on = self._future_on if future_on is None else future_on
            if left or unseen or ended or (self._sweep_due and self._owned):
                self._sweep(sorted(left), sorted(unseen), ended)
            elif not self._owned and not self._owned_unread:
                self._sweep_due = False
        if listed is not None:
            self._note_unreported(listed, unseen)
            self._reassigning = frozenset(listed)
            self._listed_once = True
        if listed is not None and self.plans is not None and (
                listed or self._owned or self.plans.statuses or self._a_trigger_since(self._plans_read_s)):
            self._step_plans(now_wall)
        self.write_records()
        return self._decide(listed is not None, now_wall)

    def _a_trigger_since(self, then_s):
        """Whether a duty done at `then_s` (None: never) is due again: a trigger interval has passed."""
        return then_s is None or self.clock() - then_s >= self.trigger_interval_s

    def _take_findings(self):
        self._wake.clear()  # before taking: findings handed over after this wake the next wait
        with self._lock:
            taken, self._findings = self._findings, []
        return taken

    @_step("list")
    def _list(self):
        """{(topic, partition): ListPartitionReassignments row}, or None when the list failed. While Kafka's
        controller answers nobody, the door's last list (streaming.cluster.door `listed_or_last`), also handed to
        the batches through the gate, since no reassignment changes meanwhile."""
        try:
            rows, last = self._listed_or_last()
            self._listed_for_batches = rows if last else None
            self._listed_rows = rows
            return {partition_of(r): r for r in rows}
        except Exception as error:
            self.metrics.poll_errors.labels(api=LIST_REASSIGNMENTS).inc()
            self._say(f"{LIST_REASSIGNMENTS} failed: {error}")
            return None

    def _listed_or_last(self):
        """The door's list (`listed_or_last`), by any look; a gap longer than SLOW_TICK_S since the last list is
        logged."""
        answer = self.admin.listed_or_last()
        now_s = self.clock()
        since_s, self._listed_s = self._listed_s, now_s
        if since_s is not None and now_s - since_s > SLOW_TICK_S:
            self._say(f"{SLOW_LOOK_LINE}{now_s - since_s:.1f} s between two lists")
        return answer

    def _foreign_move_appeared(self, listed):
        """A partition reassigns now that did not at the last tick and no record of ours moves."""
        return bool(set(listed) - self._reassigning - self._owned)

    def _note_accepted(self, records):
        """Each read of the ledger (NotedReads): the moves Kafka accepted since the read before are kept until a tick
        looks for them in the list, so a request is noted by the first read that shows it, whichever duty made that
        read - a later read would show it known, or already `done`. The first read only sets the baseline: at start
        every request is new, the start's sweep covers them, and their moves were reported, or not, by the run
        before."""
        accepted = accepted_moves(records)
        if self._accepted is not None:
            self._newly_accepted.update(batch_rules.newly_accepted(self._accepted, accepted))
        self._accepted = accepted

    def _ended_unseen(self, listed):
        """(topic, partition) -> Move of the moves noted accepted that came and went between two looks; the others
        noted are listed now or were at the last tick (batch_rules.partitions_left has them)."""
        noted, self._newly_accepted = self._newly_accepted, {}
        return {p: noted[p] for p in batch_rules.ended_unseen(noted, self._reassigning, listed)}

    def _note_unreported(self, listed, unseen):
        """Moves adding a replica that no batch reported are kept until one does (hand_over), listed or not;
        `unseen`: (topic, partition) -> ownership Move of the moves that came and went between two looks."""
        with self._lock:
            self._reported &= set(listed)  # a partition that left and moves again is a new move
            for partition, row in [*listed.items(), *((p, _as_listed(m)) for p, m in unseen.items())]:
                if row["adding"] and partition not in self._reported:
                    self._unreported[partition] = row

    @_step("ownership")
    def _refresh_owned(self):
        """Read the ledger; whether that read succeeded."""
        try:
            self.ledger.refresh()
            records = self.ledger.records()
            self._owned = frozenset((m.topic, m.partition) for r in records + self._observed if r.active for m in r.moves)
            self._rate_brokers = frozenset(c.broker for r in records + self._observed if r.active for c in r.rates
                                           if c.kind == ALTER_LOG_DIRS)
            self.requests = {r.request_id: [(m.topic, m.partition) for m in r.moves]
                             for r in records if r.active and r.origin == Origin.EXECUTE}
            self._owned_unread = False
            self._owned_read_s = self.clock()
            return True
        except Exception as error:  # keep what was known; read again every tick until a read succeeds
            # A request written while the read failed (its move may end meanwhile: the ownership topic's leader
            # was SIGKILLed mid-move) is unknown here: batches run and a sweep is due once it is read.
            self._owned_unread = self._sweep_due = True
            self.metrics.poll_errors.labels(api=READ).inc()
            self._say(f"reading ownership records failed: {error}")
            return False

    # -- a batch's findings --

    @_step("batch")
    def on_batch(self, findings):
        """Act on one batch's findings (module docstring, step 3); the throttle actions taken or reported."""
        if self.plans is not None:
            self.plans.reported(findings.plans_reported)
        actions = self._steer(findings)
        try:
            self.ledger.refresh()
            snapshot = findings.snapshot
            if self.history.takes(view_of(snapshot)):
                self._observe(snapshot)
            records = self.ledger.records() + self._observed
            due = decide(snapshot, records, self.policy)
            if not self.policy.acts:
                self._observed = [r for r in self._observed if not settled(snapshot, r, records, self.policy)]
                actions += self._report(self._new_dry_runs(due), snapshot.cluster_id, findings.batch_id)
            elif due or settle_candidates(snapshot, records, self.policy) or given_up(snapshot, records, self.policy):
                actions += self._sweep_now(findings.batch_id, hint=due)
        except Exception as error:  # the next batch's findings, or a completion, try again
            self._janitor_log(f"batch {findings.batch_id}: skipped: {type(error).__name__}: {error}")
        return actions

    def _steer(self, findings):
        """`--throttle auto`: the owned rates moved as the batch's findings say (streaming.control.throttles.steering)."""
        if self.steering is None or not self.policy.acts:
            return []
        try:
            view = view_of(findings.snapshot)
            if not view.complete:
                return []
            self.ledger.refresh()
            now_s = self.wall()
            actions, steered = steer(view, self.ledger.records(), self.steering, self.throttle_interval_s,
                                     findings.falling_behind, findings.throttles_binding,
                                     findings.snapshot["partitions"], self.guard, now_s, self._last_change_s)
            if not actions:
                return []
            done, _ = self.applier.apply(actions)
            for record in followed(done, steered, now_s * 1000):
                self.applier.record(record)
            for broker, _ in changed_brokers(done):
                self._last_change_s[broker] = now_s
            return self._report(done, findings.snapshot.cluster_id, findings.batch_id, prefix=STEERING_PREFIX)
        except Exception as error:  # steered next batch
            self.log(f"{STEERING_PREFIX}batch {findings.batch_id}: skipped: {type(error).__name__}: {error}")
            return []

    def _new_dry_runs(self, actions):
        """Dry run: each due action is reported once, and again only after it stopped being due for a batch."""
        identities = {a: (a.scope, a.name, a.kind, a.op, a.entries, a.value, a.restored_value) for a in actions}
        new = [a for a in actions if identities[a] not in self._dry_run_reported]
        self._dry_run_reported = set(identities.values())
        return new

    # -- adoption --

    def _observe(self, snapshot):
        """Throttles that appeared together with a reassignment another tool started become an `observed` record."""
        if self.policy.cleanup == ALL:
            return
        view = view_of(snapshot)
        history = self.history.admit(view)
        if history is None:
            return
        records = self.ledger.records()
        request_id = new_request_id([r.request_id for r in records], view.now_ms)
        found = observe(history, view, records + self._observed, request_id, view.now_ms)
        self.history.views.append(view)
        self._viewed_s = self.clock()
        if found is None:
            return
        if self.policy.acts:
            self.applier.record(found)
            self._owned |= {(m.topic, m.partition) for m in found.moves}
        else:
            self._observed.append(found)
        self._janitor_log(describe_observed(found))

    @_step("observe")
    def _observe_now(self):
        """The throttles of every topic and broker and the reassignments, read now, as adoption's next view: at
        the first look (the baseline), when a move that is not ours appears, and whenever no view was taken for
        a trigger interval (no batch ran: idle, or Spark still starting). Before Spark's first batch, the read is
        a whole poll whose picture /metrics shows (module docstring)."""
        self._viewed_s = self.clock()
        first_look = self.picture_of is not None and not self._batches_done
        if self.policy.cleanup == ALL and not first_look:
            return
        try:
            if first_look:
                snapshot = poll(self.admin, all_partitions=True)
                picture = self.picture_of(snapshot)
                if picture is not None:
                    self.metrics.snapshot.offer(picture)
            else:
                snapshot = read_cluster(self.admin, {row["topic"] for row in self.admin.describe_partitions(None)})
            self._observe(snapshot)
        except Exception as error:  # read again next time; a batch's findings observe as well
            self.metrics.poll_errors.labels(api=DESCRIBE_CONFIGS).inc()
            self._say(f"observing throttles failed: {error}")

    # -- removal --

    @_step("sweep")
    def _sweep(self, left, unseen=(), log_dir_brokers=()):
        if log_dir_brokers and not (left or unseen):
            self._say(f"the moves between log dirs on broker(s) {', '.join(map(str, log_dir_brokers))} ended: "
                      f"running the throttle janitor")
        elif left or unseen:
            first = (left or unseen)[0]
            said = [f"{len(left)} owned partition(s) left the reassignment list"] if left else []
            said += [f"{len(unseen)} move(s) of ours came and went between two looks"] if unseen else []
            self._say(f"{'; '.join(said)} ({first[0]}-{first[1]}{', ...' if len(left) + len(unseen) > 1 else ''}): "
                      f"running the throttle janitor")
        elif not self._listed_once:
            self._say("ownership records are active at start: running the throttle janitor for removals that "
                      "came due while the job was down")
        else:
            self._say("running the throttle janitor again (its last run failed)")
        with self._lock:  # its records go with the next batch's: the one that reports the move finished
            batch_id = self._last_batch_id + 1 if self._batches_done else -1
        try:
            self._sweep_now(batch_id)
        except Exception as error:  # retried next tick, on a fresh read again
            self._sweep_due = True
            self._janitor_log(f"skipped: {type(error).__name__}: {error}")
            return
        self._sweep_due = False
        self._refresh_owned()  # the sweep settled what it removed: do not keep batches running for it

    def _sweep_now(self, batch_id, hint=None):
        """The janitor's sweep on a fresh read (streaming.control.sweep); its actions, reported."""
        started = self.clock()
        self.ledger.refresh()
        ownership_s = self.clock() - started
        swept = sweep(self.admin, self.applier, self.ledger.records(), self.policy, hint, log=self._janitor_log)
        self.history.acted_ms = max(self.history.acted_ms, swept.fresh.ts_ms)
        self.history.after([a for a in swept.actions if a.action in (REMOVED, RESTORED)])
        steps = {"ownership": ownership_s, **swept.steps}
        self._say(f"{SWEPT_LINE}{self.clock() - started:.2f} s ({', '.join(f'{n} {s:.2f}' for n, s in steps.items())})")
        return self._report(swept.actions, swept.fresh.cluster_id, batch_id)

    def _report(self, actions, cluster_id, batch_id, prefix=JANITOR_PREFIX):
        """Log, count and queue the `throttle` record of each action; the actions."""
        ts_ms = int(self.wall() * 1000)
        for action in actions:
            self.log(f"{prefix}{describe(action)}")
            self.metrics.throttle_actions.labels(scope=action.scope, action=action.action).inc()
            key, value = throttle_record(action, ts_ms, batch_id, cluster_id)
            self._unwritten.append((key, progress_records.encode(value)))
        return list(actions)

    # -- plans --

    @_step("plans")
    def _step_plans(self, now_wall):
        try:
            statuses = self.plans.tick(self.clock(), now_wall * 1000)
            self._plans_read_s = self.clock()
        except Exception as error:  # the ledger could not be read: retried next tick
            self.metrics.poll_errors.labels(api=READ).inc()
            self._say(f"reading plans failed: {error}")
            return
        for request_id, status in statuses.items():
            step = status.step
            # A plan's step sweeps: what it removed counts like the controller's own sweeps.
            for action in step.throttle_actions if step is not None else ():
                self.metrics.throttle_actions.labels(scope=action.scope, action=action.action).inc()
            if step is not None and (step.submitted or step.cancelled or step.refused):
                self._say(f"plan {request_id}: submitted {len(step.submitted)}, refused {len(step.refused)}, "
                          f"cancelled {len(step.cancelled)}; " +
                          ", ".join(f"{state} {n}" for state, n in sorted(step.counts.items())))
            line = (f"plan {request_id} {status.state}: not advanced: {status.not_advanced}" if status.not_advanced
                    else f"plan {request_id} {status.state}: advanced by {status.advanced_by}")
            if self._plan_lines.get(request_id) != line:
                self._say(line)
                self._plan_lines[request_id] = line

    # -- records, the gate, liveness --

    @_step("records")
    def write_records(self):
        """The `throttle` records of what was done, to the progress topic (kept for the next tick if that fails)."""
        if not self._unwritten or self.writer is None:
            return
        try:
            self.writer.write(self._unwritten)
            self._unwritten = []
        except Exception as error:
            self.metrics.poll_errors.labels(api=PRODUCE).inc()
            self._say(f"writing {len(self._unwritten)} throttle record(s) failed, retrying next tick: {error}")

    @_step("decide")
    def _decide(self, listed, now_wall):
        with self._lock:
            unreported = list(self._unreported.values())
            view = batch_rules.BatchView(
                listed=listed, reassigning=self._reassigning, owned=self._owned, batches_done=self._batches_done,
                tracks_moves=self._tracks_moves, throttles_to_clear=self._throttles_to_clear,
                owned_unread=self._owned_unread, active_plans=len(self.plans.statuses) if self.plans is not None else 0,
                unreported=bool(unreported))
        reason = batch_rules.batch_reason(view)
        now_s = self.clock()
        if reason is None:
            self._wanted_since_s = None
        elif self._wanted_since_s is None:
            self._wanted_since_s = now_s
        gate.write(self.gate_path, reason, now_wall * 1000, unreported[:HANDOVER_LIMIT], self._listed_for_batches)
        if reason != self._reason:
            self._say(f"{BATCHES_LINE}{reason}" if reason else IDLE_LINE)
            self._reason = reason
        publishes, waiting_since_s = self._liveness(listed, reason is not None, now_s)
        if publishes:
            self.metrics.snapshot.touch(now_wall)
        if (self.picture_of is not None and view.batches_done and not self._own_poll.is_alive()
                and batch_rules.shows_own_poll(reason is not None, waiting_since_s, self._own_poll_s, now_s,
                                               self.trigger_interval_s, self.request_deadline_s)):
            self._own_poll_s = now_s
            self._own_poll = threading.Thread(target=self._show_own_poll, name="reassign-monitor-own-poll", daemon=True)
            self._own_poll.start()
        return reason

    def _liveness(self, listed, wanted, now_s):
        """(whether this look is published as the job's liveness: batch_rules.publishes_liveness; the clock second
        from which the batch it waits for is counted late)."""
        with self._lock:
            last_batch_s, writing_since_s, batches_done = self._last_batch_s, self._writing_since_s, self._batches_done
            if self._listed_for_batches is not None:  # Kafka's controller is silent: see batch_ran
                last_batch_s = self._last_batch_ran_s
        waiting_since_s = max(last_batch_s, self._wanted_since_s or now_s)
        late_s = batch_rules.late_after_s(self.trigger_interval_s, batches_done)
        return (batch_rules.publishes_liveness(listed, wanted, waiting_since_s, now_s, late_s, writing_since_s,
                                               WRITE_BOUND_S), waiting_since_s)

    def _show_own_poll(self):
        """A whole poll through the driver's door and its picture (`picture_of`, the batches' rules) offered to
        /metrics, while a batch is late (batch_rules.shows_own_poll). The door holds a node that stopped answering
        after one request deadline, so the picture shows its replicas BROKER_OFFLINE and every other replica's
        progress; the progress topic gets them from the next batch. In a thread of its own: a poll that waits out a
        lapse never delays a tick, and ticks publish liveness."""
        try:  # with the tick's list: a silent Kafka controller is the likeliest reason for a late batch
            picture = self.picture_of(poll(self.admin, all_partitions=True, listed=self._listed_rows))
        except Exception as error:  # another one a trigger later while the batch is still late
            self._say(f"a poll of its own while a batch is late failed: {type(error).__name__}: {error}")
            return
        if picture is not None:
            self.metrics.snapshot.offer(picture)
