"""The driver's watch: about every second, from the moment `run` starts (before Spark is up).

Each tick (`Watch.tick`):
1. ListPartitionReassignments, one request. A failure counts in
   kafka_reassignment_monitor_poll_errors_total{api="ListPartitionReassignments"} and asks for a batch.
2. While something reassigns or owned throttles are known (and until a first list succeeded), and otherwise once
   a trigger interval: read what others wrote to the ownership topic since then (the janitor's store) and take the
   owned partitions, and the moves Kafka accepted. A move accepted since the last read that is not listed now
   and was not at the last tick started and completed between two looks (rules.ended_unseen).
3. The moment an owned partition leaves the reassignment list (between ticks, while an owned partition
   reassigns, the watch looks at the list every quarter second and ticks at once when one left: `_wait`), or a
   move of ours came and went unseen - or at start, when ownership records are active (a removal due while the
   job was down), and again after a failed run - run the janitor's `sweep`: the same code path `verify` uses,
   with its safety rules applied on a fresh read of the cluster. Its `throttle` records go to the progress
   topic (kept and written again next tick if that write fails), with the id of the batch after the last one
   this run finished (the batch that reports the move finished), -1 before this run's first batch.
4. Decide whether a Spark batch is needed (streaming.watch.rules) and write it to the gate the source
   reads (streaming.watch.gate), with the moves it saw that left the list before a batch reported them (a
   move shorter than the wait for the next batch: that batch reports it finished) and the moves of ours that
   came and went unseen, as their ownership record names them; log each change of that decision. While none
   is needed, once a trigger interval the janitor observes the cluster (`Janitor.observe_now`: throttle
   configs of every topic and broker), so a move another tool starts with its throttles after an idle stretch
   is still adopted (README "Throttle janitor", rule 4): the first batch compares against a view at most a
   trigger old.
5. Advance liveness (kafka_reassignment_monitor_last_poll_timestamp_seconds) when rules.publishes_liveness,
   which also holds while a batch waits for Kafka to acknowledge its records (`batch_writing`): after a broker's
   SIGKILL Kafka holds acks=all writes until it fenced the broker, and the watch's poll still succeeds. While the
   controller answers nobody (the door's `listed_or_last`), the watch's poll is its last list, handed to the
   batches through the gate, and a batch whose poll failed before it was handed one is not late (`batch_ran`).
6. Plans: one step of every running or paused plan whose lease this job holds (streaming.watch.plans), at
   most once a second, before the decision of 4 (an active plan keeps batches running: rules.plans_active);
   read at start, then each tick while something reassigns, owned throttles exist or a plan is known active,
   and once a trigger interval while idle.
A tick longer than SLOW_TICK_S is logged with its duration ("slow tick: ..."): the gap between two of the
watch's polls.

Runs on the driver only, in a daemon thread of the `run` process; nothing here is pickled. The batch
handler (Spark's foreachBatch thread) calls `batch_done` after each successful batch and writes its records
inside `batch_writing()`. The janitor serializes its own callers. Every cluster call goes through the admin door;
the clock is injectable for tests.
"""

import contextlib
import functools
import sys
import threading
import time

from sinks import records
from sinks.throttles.actions import ALL
from streaming.cluster.own_topics import DELIVERY_OUTLASTS_FENCING_S
from streaming.vocabulary.kafka_apis import DESCRIBE_CONFIGS, LIST_REASSIGNMENTS, PRODUCE, READ
from streaming.vocabulary.replica_row import partition_of
from streaming.vocabulary.states import FINISHED_STATES
from streaming.watch import gate, rules

WATCH_INTERVAL_S = 1.0
# A batch's durable write is given up by the producer after this long (streaming.cluster.own_topics): while a
# write is younger, the batch is held by Kafka, not late (rules.batch_held_by_write).
WRITE_BOUND_S = DELIVERY_OUTLASTS_FENCING_S
SLOW_TICK_S = 2 * WATCH_INTERVAL_S
# At most this many finished moves are handed to one batch (they go into its offset, in the checkpoint's offset
# log): thousands of moves ending unseen at once are reported over several batches, each running for them.
HANDOVER_LIMIT = 10_000
SLOW_TICK_LINE = "slow tick: "
SWEPT_LINE = "throttle janitor swept in "  # with its steps' seconds (Janitor.last_sweep_steps)
LOG_PREFIX = "reassign-monitor: watch: "
# The decision lines, logged when the decision changes (tests read them from the job's log).
IDLE_LINE = "idle: no Spark batch until something moves"
BATCHES_LINE = "Spark batches run: "
FINISHED_NAMES = frozenset(s.name for s in FINISHED_STATES)


def _log(line):
    print(f"{LOG_PREFIX}{line}", file=sys.stderr, flush=True)


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


class Watch:
    """`admin`: list_reassignments() (the driver's door); `metrics`: sinks.prometheus.MonitorMetrics;
    `gate_path`: the file streaming.watch.gate writes; `janitor`: sinks.throttles.janitor.Janitor or None
    (then the watch only decides batches and liveness); `writer`: write(keyed records)."""

    def __init__(self, admin, metrics, gate_path, trigger_interval_s, janitor=None, writer=None,
                 interval_s=WATCH_INTERVAL_S, clock=time.monotonic, wall=time.time, log=_log, plans=None):
        self.admin, self.metrics, self.gate_path = admin, metrics, gate_path
        self.trigger_interval_s, self.janitor, self.writer = trigger_interval_s, janitor, writer
        self.plans = plans  # streaming.watch.plans.PlanAdvancer, or None (then plans are not advanced)
        self._plan_lines = {}  # request_id -> the last line logged about it
        # Plans are read at start, then every tick while something reassigns, owned throttles exist or a plan is
        # known active, and once a trigger interval while idle: a plan whose first wave finished between two
        # ticks (never listed) is still picked up.
        self._plans_read_s = None
        self.interval_s, self.clock, self.wall, self.log = interval_s, clock, wall, log
        self._lock = threading.Lock()  # what batch_done (foreachBatch thread) hands over
        self._batches_done = 0
        self._last_batch_id = -1
        self._tracks_moves = False
        self._throttles_to_clear = False
        self._last_batch_s = clock()
        self._last_batch_ran_s = clock()  # any batch, its poll failed or not (`batch_ran`)
        self._writing_since_s = None  # a batch is waiting for its records' acknowledgement since then
        self._tick_steps = {}  # seconds of the current tick's steps (_step)
        self._observed_s = None  # when the janitor last observed for an idle stretch
        self._reassigning = frozenset()
        # Moves listed that no batch has reported yet ((topic, partition) -> ListPartitionReassignments row),
        # and the partitions a batch reported while they are still listed (not handed over again).
        self._unreported, self._reported = {}, set()
        self._owned = frozenset()
        self._accepted = {}  # (topic, partition) -> Move of the requests Kafka accepted, as last read
        self._owned_unread = False  # the last read of the ownership records failed
        self._owned_read_s = None  # when the ownership records were last read
        self._listed_for_batches = None  # the door's last list while the controller is silent (`_list`)
        self._listed_once = False
        self._sweep_due = True  # at start: removals that came due while the job was down (if records are active)
        self._unwritten = []
        self._reason = "not decided"
        self._wanted_since_s = None
        self._stop = threading.Event()
        self._thread = None

    # -- from the batch handler (foreachBatch thread) --

    def batch_done(self, output, batch_id):
        """After a successful batch: what its state tracks and what its janitor may still have to clear."""
        snapshot = output.snapshot
        clear_all = self.janitor is not None and self.janitor.policy.cleanup == ALL
        with self._lock:
            self._batches_done += 1
            self._last_batch_id = batch_id
            self._tracks_moves = any(row["state"] not in FINISHED_NAMES for row in output.replicas)
            self._throttles_to_clear = clear_all and bool(snapshot["topic_throttles"] or snapshot["broker_throttles"])
            self._last_batch_s = self._last_batch_ran_s = self.clock()
            reported = {partition_of(row) for row in output.replicas}
            self._reported |= reported
            for partition in reported:
                self._unreported.pop(partition, None)

    def batch_ran(self, batch_id):
        """After a batch whose poll failed. While the controller answers nobody (the watch's list is the last one),
        such a batch is not late: its poll failed on the controller's silence before the watch handed it its last
        list (streaming.watch.gate), not because batches stall."""
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

    # -- the thread --

    def start(self):
        self._thread = threading.Thread(target=self._run, name="reassign-monitor-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self):
        while not self._stop.is_set():
            started = self.clock()
            self._tick_steps = {}
            try:
                with self.admin.impatient():  # never waits for a silent controller (streaming.cluster.door)
                    self.tick()
            except Exception as error:  # a bug must not end the watch: the gate goes stale and fails open
                self.log(f"tick failed: {type(error).__name__}: {error}")
            took_s = self.clock() - started
            if took_s > SLOW_TICK_S:
                steps = ", ".join(f"{name} {s:.2f}" for name, s in self._tick_steps.items())
                self.log(f"{SLOW_TICK_LINE}{took_s:.1f} s ({steps})")
            self._wait(started)

    def _wait(self, started):
        """Until the next tick. While an owned partition is reassigning (rules.peeks), look at the reassignment
        list every rules.peek_interval_s and end the wait as soon as an owned partition left it - or the look
        failed: the tick then lists again, and counts and reports the failure. Only the tick acts."""
        next_tick_s, took_s = started + self.interval_s, 0.0
        while not self._stop.is_set():
            left_s = next_tick_s - self.clock()
            if left_s <= 0:
                return
            if self.janitor is None or not rules.peeks(self._reassigning, self._owned, self.janitor.policy.acts):
                self._stop.wait(left_s)
                return
            self._stop.wait(min(left_s, rules.peek_interval_s(took_s)))
            if self._stop.is_set() or self.clock() >= next_tick_s:
                return
            looked = self.clock()
            try:
                listed = {partition_of(r) for r in self.admin.listed_or_last()[0]}
            except Exception:
                return
            took_s = self.clock() - looked
            if rules.partitions_left(self._reassigning, listed, self._owned):
                return

    def tick(self):
        """One round (module docstring); returns the reason a batch is wanted, or None."""
        now_wall = self.wall()
        listed = self._list()
        # Before the first read, every request is new: the sweep due at start covers them, and their moves
        # were reported, or not, by the run before.
        accepted_before = self._accepted if self._owned_read_s is not None else None
        if listed is not None and (not self._listed_once or listed or self._owned or self._owned_unread
                                   or self._a_trigger_since(self._owned_read_s)):
            self._refresh_owned()
        unseen = {} if listed is None or accepted_before is None else {
            p: self._accepted[p]
            for p in rules.ended_unseen(accepted_before, self._accepted, self._reassigning, listed)}
        if listed is not None and self.janitor is not None and self.janitor.policy.acts:
            left = rules.partitions_left(self._reassigning, listed, self._owned)
            if left or unseen or (self._sweep_due and self._owned):
                self._sweep(sorted(left), sorted(unseen))
            elif not self._owned and not self._owned_unread:
                self._sweep_due = False
        if listed is not None:
            self._note_unreported(listed, unseen)
            self._reassigning = frozenset(listed)
            self._listed_once = True
        if listed is not None and self.plans is not None and (
                listed or self._owned or self.plans.statuses or self._a_trigger_since(self._plans_read_s)):
            self._step_plans(now_wall)
        self._write_unwritten()
        reason = self._decide(listed is not None, now_wall)
        if reason is None:
            self._observe_while_idle()
        return reason

    def _a_trigger_since(self, then_s):
        """Whether an idle duty done at `then_s` (None: never) is due again: a trigger interval has passed."""
        return then_s is None or self.clock() - then_s >= self.trigger_interval_s

    @_step("list")
    def _list(self):
        """{(topic, partition): ListPartitionReassignments row}, or None when the list failed. While the controller
        answers nobody, the door's last list (streaming.cluster.door `listed_or_last`), also handed to the batches
        through the gate, since no reassignment changes meanwhile."""
        try:
            rows, last = self.admin.listed_or_last()
            self._listed_for_batches = rows if last else None
            return {partition_of(r): r for r in rows}
        except Exception as error:
            self.metrics.poll_errors.labels(api=LIST_REASSIGNMENTS).inc()
            self.log(f"{LIST_REASSIGNMENTS} failed: {error}")
            return None

    def _note_unreported(self, listed, unseen):
        """Moves adding a replica that no batch reported are kept until one does (batch_done), listed or not;
        `unseen`: (topic, partition) -> ownership Move of the moves that came and went between two looks."""
        with self._lock:
            self._reported &= set(listed)  # a partition that left and moves again is a new move
            for partition, row in [*listed.items(), *((p, _as_listed(m)) for p, m in unseen.items())]:
                if row["adding"] and partition not in self._reported:
                    self._unreported[partition] = row

    @_step("ownership")
    def _refresh_owned(self):
        if self.janitor is None:
            return
        try:
            self._owned = frozenset(self.janitor.owned_partitions())
            self._accepted = self.janitor.accepted_moves()
            self._owned_unread = False
            self._owned_read_s = self.clock()
        except Exception as error:  # keep what was known; read again every tick until a read succeeds
            # A request written while the read failed (its move may end meanwhile: the ownership topic's leader
            # was SIGKILLed mid-move) is unknown here: batches run and a sweep is due once it is read.
            self._owned_unread = self._sweep_due = True
            self.metrics.poll_errors.labels(api=READ).inc()
            self.log(f"reading ownership records failed: {error}")

    @_step("sweep")
    def _sweep(self, left, unseen=()):
        if left or unseen:
            first = (left or unseen)[0]
            said = [f"{len(left)} owned partition(s) left the reassignment list"] if left else []
            said += [f"{len(unseen)} move(s) of ours came and went between two looks"] if unseen else []
            self.log(f"{'; '.join(said)} ({first[0]}-{first[1]}{', ...' if len(left) + len(unseen) > 1 else ''}): "
                     f"running the throttle janitor")
        elif not self._listed_once:
            self.log("ownership records are active at start: running the throttle janitor for removals that "
                     "came due while the job was down")
        else:
            self.log("running the throttle janitor again (its last run failed)")
        with self._lock:  # its records go with the next batch's: the one that reports the move finished
            batch_id = self._last_batch_id + 1 if self._batches_done else -1
        started = self.clock()
        try:
            outputs = self.janitor.sweep(batch_id)
        except Exception as error:  # retried next tick, on a fresh read again
            self._sweep_due = True
            self.log(f"throttle janitor skipped: {type(error).__name__}: {error}")
            return
        self._sweep_due = False
        steps = ", ".join(f"{name} {s:.2f}" for name, s in getattr(self.janitor, "last_sweep_steps", {}).items())
        self.log(f"{SWEPT_LINE}{self.clock() - started:.2f} s ({steps})")
        for action, key, value in outputs:
            self.metrics.throttle_actions.labels(scope=action.scope, action=action.action).inc()
            self._unwritten.append((key, records.encode(value)))
        self._refresh_owned()  # the sweep settled what it removed: do not keep batches running for it

    def plan_statuses(self):
        """The active plans' streaming.watch.plans.PlanStatus as of the last round (for the batch's records)."""
        # PlanAdvancer.tick replaces its dict whole, never mutates it: reading it from another thread is safe.
        return self.plans.statuses if self.plans is not None else {}

    def plans_reported(self, request_ids):
        """From the batch handler, once the plans' records are written (a finished plan is kept until then)."""
        if self.plans is not None:
            self.plans.reported(request_ids)

    @_step("plans")
    def _step_plans(self, now_wall):
        try:
            statuses = self.plans.tick(self.clock(), now_wall * 1000)
            self._plans_read_s = self.clock()
        except Exception as error:  # the plan store could not be read: retried next tick
            self.metrics.poll_errors.labels(api=READ).inc()
            self.log(f"reading plans failed: {error}")
            return
        for request_id, status in statuses.items():
            step = status.step
            # A plan's step sweeps with a janitor of its own: what it removed counts like the watch's own sweeps.
            for action in step.throttle_actions if step is not None else ():
                self.metrics.throttle_actions.labels(scope=action.scope, action=action.action).inc()
            if step is not None and (step.submitted or step.cancelled or step.refused):
                self.log(f"plan {request_id}: submitted {len(step.submitted)}, refused {len(step.refused)}, "
                         f"cancelled {len(step.cancelled)}; " +
                         ", ".join(f"{state} {n}" for state, n in sorted(step.counts.items())))
            line = (f"plan {request_id} {status.state}: not advanced: {status.not_advanced}" if status.not_advanced
                    else f"plan {request_id} {status.state}: advanced by {status.advanced_by}")
            if self._plan_lines.get(request_id) != line:
                self.log(line)
                self._plan_lines[request_id] = line

    @_step("observe")
    def _observe_while_idle(self):
        if self.janitor is None or not self._a_trigger_since(self._observed_s):
            return
        self._observed_s = self.clock()
        try:
            self.janitor.observe_now()
        except Exception as error:  # the next idle trigger reads again; a batch observes as before
            self.metrics.poll_errors.labels(api=DESCRIBE_CONFIGS).inc()
            self.log(f"observing throttles failed: {error}")

    @_step("records")
    def _write_unwritten(self):
        if not self._unwritten or self.writer is None:
            return
        try:
            self.writer.write(self._unwritten)
            self._unwritten = []
        except Exception as error:
            self.metrics.poll_errors.labels(api=PRODUCE).inc()
            self.log(f"writing {len(self._unwritten)} throttle record(s) failed, retrying next tick: {error}")

    @_step("decide")
    def _decide(self, listed, now_wall):
        with self._lock:
            left_unreported = [row for partition, row in self._unreported.items() if partition not in self._reassigning]
            view = rules.WatchView(listed=listed, reassigning=self._reassigning, owned=self._owned,
                                   batches_done=self._batches_done, tracks_moves=self._tracks_moves,
                                   throttles_to_clear=self._throttles_to_clear, owned_unread=self._owned_unread,
                                   active_plans=len(self.plans.statuses) if self.plans is not None else 0,
                                   left_unreported=bool(left_unreported))
            last_batch_s, writing_since_s = self._last_batch_s, self._writing_since_s
            if self._listed_for_batches is not None:  # the controller is silent: see batch_ran
                last_batch_s = self._last_batch_ran_s
        reason = rules.batch_reason(view)
        now_s = self.clock()
        if reason is None:
            self._wanted_since_s = None
        elif self._wanted_since_s is None:
            self._wanted_since_s = now_s
        gate.write(self.gate_path, reason, now_wall * 1000, left_unreported[:HANDOVER_LIMIT], self._listed_for_batches)
        if reason != self._reason:
            self.log(f"{BATCHES_LINE}{reason}" if reason else IDLE_LINE)
            self._reason = reason
        waiting_since_s = max(last_batch_s, self._wanted_since_s or now_s)
        if rules.publishes_liveness(listed, reason is not None, waiting_since_s, now_s,
                                    rules.late_after_s(self.trigger_interval_s, view.batches_done),
                                    writing_since_s, WRITE_BOUND_S):
            self.metrics.snapshot.touch(now_wall)
        return reason
