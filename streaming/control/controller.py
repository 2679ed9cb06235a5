"""The job's controller: the one part of the streaming job that changes the cluster or the ownership topic, as a
scheduler over duties (streaming.control.duties): which duty runs when, on which thread, with what look and clock,
and where what it decided goes - the one writer (streaming.control.applier.applier_of, over the one ledger of the
ownership topic), the progress topic (duties.reports), the gate and /metrics (duties.liveness, duties.pictures).
Each duty owns its state and decides; none reads another's fields. Its tick, step by step, is docs/architecture.md
"The controller" ("Each tick"); in short, about every second: the list (duties.looks; a list or a look between ticks
that waited out a request deadline leaves the rest to the next tick: batch_rules.defers_the_rest), liveness
published on it, the ledger read (duties.owned), each finished batch's findings (`on_batch`: steering, adoption,
the janitor), adoption's own view when due, the janitor's sweep when an owned move ended, one step of the plans, the
`throttle` records written, and the gate decided (duties.liveness) with /metrics' own polls (duties.pictures).

It runs on the driver, in one thread of the `run` process, from the moment `run` starts (before Spark is up); the
Spark batches only compute and hand their findings over (`hand_over`). Threads, all on the driver (nothing here is
pickled): the controller's (ticks, and the looks between them: `_wait`); the busy look's (`look_while_busy`: it lists
through duties.looks, under that duty's lock, and reads duties.handover); duties.pictures' poll; and the batch
handler (Spark's foreachBatch), which calls `hand_over`, `batch_ran`, `batch_writing`, `plan_statuses` and
`requests`. What the batch handler and the controller share is duties.handover, under its one lock; `plan_statuses`
and `requests` are dicts replaced whole, never mutated. The clock is injectable for tests.
"""

import contextlib
import sys
import threading
import time
from dataclasses import dataclass

from sinks.metric_names import POLLED
from sinks.throttle_records import describe_observed
from streaming.control import batch_rules
from streaming.control.applier import applier_of
from streaming.control.duties.adoption import Adoption
from streaming.control.duties.handover import Handover
from streaming.control.duties.janitor import SWEPT_LINE, Janitor, clears_all, swept_line, why_it_sweeps
from streaming.control.duties.log_dir_moves import LogDirMoves
from streaming.control.duties.liveness import BATCHES_LINE, IDLE_LINE, WRITE_BOUND_S, Liveness, batch_view
from streaming.control.duties.looks import SLOW_LOOK_LINE, Looks
from streaming.control.duties.owned import Owned
from streaming.control.duties.pictures import Pictures
from streaming.control.duties.plans import Plans
from streaming.control.duties.reports import JANITOR_PREFIX, Reports
from streaming.control.duties.steering import STEERING_PREFIX, Steering
from streaming.control.ownership.store import NotedReads
from streaming.control.plans.advancer import PlanAdvancer
from streaming.control.rounds import QUIET_TICK_S, SLOW_TICK_LINE, SLOW_TICK_S, TICK_INTERVAL_S, Round, step
from streaming.control.sweep import describe_given_up
from streaming.control.throttles.read import read_for_plan
from streaming.vocabulary.defaults import request_deadline_s
from streaming.vocabulary.errors import UNREACHABLE, kind_of
from streaming.vocabulary.kafka_apis import DESCRIBE_CONFIGS, LIST_REASSIGNMENTS, READ

__all__ = ["BATCHES_LINE", "IDLE_LINE", "JANITOR_PREFIX", "LOG_PREFIX", "SLOW_LOOK_LINE", "SLOW_TICK_LINE",
           "STEERING_PREFIX", "SWEPT_LINE", "TICK_INTERVAL_S", "WRITE_BOUND_S", "Controller"]

LOG_PREFIX = "reassign-monitor: controller: "


def _log(line):
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Duties:
    looks: Looks
    owned: Owned
    log_dirs: LogDirMoves
    janitor: Janitor
    adoption: Adoption
    steering: Steering
    plans: Plans | None
    pictures: Pictures
    liveness: Liveness
    reports: Reports


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
        self.admin, self.metrics, self.policy = admin, metrics, policy
        self.interval_s = interval_s
        self.clock, self.wall, self.log = clock, wall, log
        owned = Owned(clock)
        # Every read of the ledger - the applier's and the plans' too - notes the requests Kafka accepted.
        self.ledger = NotedReads(ledger, owned.note)
        self.applier = applier_of(admin, self.ledger, log=self._janitor_log)
        advancer = PlanAdvancer(admin, self.applier, read, timeout_s, acts=policy.acts) if plans else None
        self.handover = Handover(clock())
        self.duties = Duties(
            looks=Looks(admin, clock, self._say, slow_s=SLOW_TICK_S), owned=owned, log_dirs=LogDirMoves(admin),
            janitor=Janitor(policy), adoption=Adoption(policy, trigger_interval_s, clock),
            steering=Steering(steering, throttle_interval_s, guard),
            plans=Plans(advancer, metrics, clock, self._say) if advancer is not None else None,
            pictures=Pictures(admin, picture_of, metrics.snapshot, self.handover.note_shown, trigger_interval_s,
                              self._say),
            liveness=Liveness(gate_path, trigger_interval_s, request_deadline_s(timeout_s), metrics.snapshot,
                              self._say),
            reports=Reports(writer, metrics, metrics.cluster, wall, log, self._say))
        self.round = Round()
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread = None

    def _janitor_log(self, line):
        self.log(f"{JANITOR_PREFIX}{line}")

    def _say(self, line):
        self.log(f"{LOG_PREFIX}{line}")

    # -- from the batch handler (foreachBatch thread) --

    def hand_over(self, findings):
        """After a successful batch (streaming.control.findings.BatchFindings): what its state still tracks and what
        it reported; its poll is acted on by the next tick, at once."""
        self.handover.hand_over(findings, clears_all(self.policy, findings.snapshot), self.clock())
        self._wake.set()

    def ownership_written(self):
        """A record was written to the ownership topic (`_watching_ownership`): the next tick, at once, reads the
        ledger."""
        self.duties.owned.written()
        self._wake.set()

    def batch_ran(self):
        """After a batch whose poll failed. While Kafka's controller answers nobody (the list is the door's last
        one), such a batch is not late: its poll failed on that silence before the gate handed it the last list,
        not because batches stall."""
        self.handover.batch_ran(self.clock())

    @contextlib.contextmanager
    def batch_writing(self):
        """Around a batch's durable write of its records (whether it succeeds or raises)."""
        self.handover.writing(self.clock())
        try:
            yield
        finally:
            self.handover.writing(None)

    def plan_statuses(self):
        """The active plans' streaming.control.plans.advancer.PlanStatus as of the last round (for the batch's
        records)."""
        return self.duties.plans.statuses if self.duties.plans is not None else {}

    @property
    def trigger_interval_s(self):
        return self.duties.liveness.trigger_interval_s

    @property
    def gate_path(self):
        return self.duties.liveness.gate_path

    @property
    def requests(self):
        """Ongoing `execute` requests as last read (request id -> its (topic, partition)s), for the batch's records."""
        return self.duties.owned.requests

    # -- the threads --

    def start(self):
        """The thread, whose first tick is the first look (module docstring) and ends with the first published poll,
        the one that looks while a tick is busy (`look_while_busy`) and the one that watches the ownership topic."""
        self._thread = threading.Thread(target=self._run, name="reassign-monitor-controller", daemon=True)
        self._thread.start()
        threading.Thread(target=self._looking_while_busy, name="reassign-monitor-busy-look", daemon=True).start()
        threading.Thread(target=self._watching_ownership, name="reassign-monitor-ownership-watch", daemon=True).start()
        return self

    def _watching_ownership(self):
        """A record written to the ownership topic (an `execute`'s, before it moves anything) wakes the controller,
        which reads the ledger at once: while quiet it looks only once a trigger (rounds.Round.interval_s), and a small
        move may start and end in between, its throttles to be removed within a second of its end. At most one watch
        per interval_s when the ledger cannot tell (it failed at once)."""
        while not self._stop.is_set():
            started = self.clock()
            try:
                written = self.ledger.written(QUIET_TICK_S)
            except Exception:  # the ticks read the ledger anyway
                written = False
            if written:
                self.ownership_written()
            else:
                self._stop.wait(max(0.0, self.interval_s - (self.clock() - started)))

    def _looking_while_busy(self):
        while not self._stop.wait(self.interval_s):
            self.look_while_busy()

    def look_while_busy(self):
        """While a tick has run for a tick interval or longer - a duty waiting on Kafka, such as a sweep's `acks=all`
        write held until Kafka fenced a broker that died (4.4-5.2 s measured at a 2 s trigger) - list the
        reassignments here and publish that look as liveness, by the same rule: liveness never waits on a duty."""
        ticking_since_s = self.round.ticking_since_s
        if (ticking_since_s is None or self.clock() - ticking_since_s < self.interval_s
                or not self.duties.looks.listed_once):
            return
        now_wall = self.wall()
        try:
            self.duties.looks.listed_or_last()
        except Exception:  # the tick counts and reports failed lists
            return
        self._publish_look(now_wall)

    def _publish_look(self, now_wall):
        """A look that listed, published as liveness on the last decision (whether a batch is wanted), before the
        tick decides again."""
        self.duties.liveness.publish(True, self.handover.facts(), self.duties.looks.kafka_controller_silent(),
                                     self.clock(), now_wall)

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self):
        waited_from, interval_s = None, self.interval_s  # the first tick is at once
        while not self._stop.is_set():
            if waited_from is not None:
                self._wait(waited_from, interval_s)
                if self._stop.is_set():
                    return
            started = waited_from = self.round.ticking_since_s = self.clock()
            self.round.quiet = False
            try:
                with self.admin.impatient():  # never waits for a silent Kafka controller (streaming.cluster.door)
                    self.round.quiet = self.tick() is None
            except Exception as error:  # a bug must not end the controller: the gate goes stale and fails open
                self._say(f"tick failed: {type(error).__name__}: {error}")
            finally:
                self.round.ticking_since_s = None
                interval_s = self.round.interval_s(self.interval_s, self.trigger_interval_s)
                self.duties.looks.expect(interval_s)
            slow = self.round.slow_tick_line(self.clock() - started)
            if slow:
                self._say(slow)

    def _wait(self, started, interval_s):
        """Until the next tick, or a batch's findings. While an owned partition is reassigning (batch_rules.peeks),
        look at the reassignment list every batch_rules.peek_interval_s and end the wait as soon as an owned
        partition left it - or the look failed: the tick then lists again, and counts and reports the failure."""
        looks, owned = self.duties.looks, self.duties.owned
        next_tick_s, took_s = started + interval_s, 0.0
        while not self._stop.is_set():
            left_s = next_tick_s - self.clock()
            if left_s <= 0 or self._wake.is_set():
                return
            if not (batch_rules.peeks(looks.reassigning, owned.partitions, self.policy.acts)
                    or batch_rules.peeks_log_dirs(self.duties.log_dirs.future_on, self.policy.acts)):
                self._wake.wait(left_s)
                return
            self._wake.wait(min(left_s, batch_rules.peek_interval_s(took_s)))
            if self._wake.is_set() or self.clock() >= next_tick_s:
                return
            left, took_s = looks.peek(owned.partitions)
            if left is None or took_s >= self.duties.liveness.request_deadline_s:
                # A look that waited out a deadline is the next tick's one wait (batch_rules.defers_the_rest).
                self.round.looked_s = took_s
                return
            if left or self.duties.log_dirs.ended_between_ticks(owned.log_dir_rate_brokers):
                return

    # -- one tick: which duty runs when --

    def tick(self):
        """One round (module docstring); returns the reason a batch is wanted, or None."""
        duties, now_wall = self.duties, self.wall()
        looks, owned, adoption = duties.looks, duties.owned, duties.adoption
        self.round.steps = {}
        listed = self._list()
        if listed is not None and looks.listed_once:
            # The look is the list: liveness is published at once, not after duties that may wait on Kafka (a sweep's
            # acks=all write, held until Kafka fenced a broker that died: 4.4 s measured).
            self._publish_look(now_wall)
        waited_s, self.round.looked_s = self.round.steps["list"] + self.round.looked_s, 0.0
        self.round.deferred = batch_rules.defers_the_rest(waited_s, duties.liveness.request_deadline_s,
                                                          self.round.deferred)
        if self.round.deferred:
            return self._decide(listed is not None, now_wall)
        # What the last tick listed and what any look listed since: a move that a look between ticks or while this
        # tick's predecessor was busy saw, and that ended before this list, left the list (it did not go unseen).
        looked = looks.reassigning | (looks.take_seen() if listed is not None else frozenset())
        ledger_read = None  # not read this tick
        if listed is not None and owned.due(looks.listed_once, looked, listed, self.handover.facts().batches_done,
                                            self.clock(), self.trigger_interval_s):
            ledger_read = self._read_ledger()
        self._wake.clear()  # before taking: findings handed over after this wake the next wait
        for findings in self.handover.take():
            self.on_batch(findings)
        if listed is not None and (adoption.due(self.clock(), self.round.quiet)
                                   or looks.foreign_move_appeared(listed, owned.partitions)):
            # Adoption must know every request of ours first, or it takes our own new move's throttles for another
            # tool's: only on a ledger read this tick.
            if ledger_read or (ledger_read is None and self._read_ledger()):
                self._observe_now()
        unseen = {} if listed is None else owned.ended_unseen(looked, listed)  # before the sweep
        if listed is not None and self.policy.acts:
            left = batch_rules.partitions_left(looked, listed, owned.partitions)
            ended = duties.log_dirs.ended(owned.log_dir_rate_brokers)
            if duties.janitor.sweeps_after(left, unseen, owned.partitions) or ended:
                self._sweep(sorted(left), sorted(unseen), ended)
            else:
                duties.janitor.settled(owned.partitions, owned.unread)
        if listed is not None:
            self.handover.note_listed(listed, unseen)
            looks.listed(listed)
        if listed is not None and duties.plans is not None and duties.plans.due(
                listed, owned.partitions, self.clock(), self.trigger_interval_s):
            self._step_plans(now_wall)
        self.write_records()
        return self._decide(listed is not None, now_wall)

    @step("list")
    def _list(self):
        """{(topic, partition): ListPartitionReassignments row}, or None when the list failed (duties.looks)."""
        try:
            listed = self.duties.looks.tick_list()
        except Exception as error:
            self.metrics.poll_errors.labels(api=LIST_REASSIGNMENTS).inc()
            self.metrics.snapshot.looked(kind_of(error))
            self._say(f"{LIST_REASSIGNMENTS} failed: {error}")
            return None
        # The door's last list while Kafka's controller answers nobody: the batches go on with it, but no answer came.
        self.metrics.snapshot.looked(UNREACHABLE if self.duties.looks.kafka_controller_silent() else POLLED)
        return listed

    @step("ownership")
    def _read_ledger(self):
        """Read the ledger (duties.owned); whether that read succeeded."""
        try:
            self.duties.owned.refresh(self.ledger, self.duties.adoption.kept)
            return True
        except Exception as error:  # keep what was known; read again every tick until a read succeeds
            self.duties.janitor.unread()
            self.metrics.poll_errors.labels(api=READ).inc()
            self._say(f"reading ownership records failed: {error}")
            return False

    # -- a batch's findings --

    @step("batch")
    def on_batch(self, findings):
        """Act on one batch's findings (docs/architecture.md "The controller", its tick's step 3); the throttle
        actions taken or reported."""
        duties = self.duties
        if duties.plans is not None:
            duties.plans.reported(findings.plans_reported)
        actions = self._steer(findings)
        try:
            self.ledger.refresh()
            snapshot = findings.snapshot
            if duties.adoption.takes(snapshot):
                self._observe(snapshot)
            records = self.ledger.records() + duties.adoption.kept
            sweeps, due, dry_runs = duties.janitor.batch(snapshot, records)
            if not self.policy.acts:
                duties.adoption.settle_kept(snapshot, records)
                actions += duties.reports.report(dry_runs, snapshot.cluster_id, findings.batch_id)
            elif sweeps:
                actions += self._sweep_now(findings.batch_id, hint=due)
        except Exception as error:  # the next batch's findings, or a completion, try again
            self._janitor_log(f"batch {findings.batch_id}: skipped: {type(error).__name__}: {error}")
        return actions

    def _steer(self, findings):
        """`--throttle auto` (duties.steering): its actions applied through the one writer, reported."""
        steering = self.duties.steering
        try:
            if not self.policy.acts or not steering.steers(findings):
                return []
            self.ledger.refresh()
            now_s = self.wall()
            actions, steered = steering.decide(findings, self.ledger.records(), now_s)
            if not actions:
                return []
            done, _ = self.applier.apply(actions)
            for record in steering.applied(done, steered, now_s):
                self.applier.record(record)
            return self.duties.reports.report(done, findings.snapshot.cluster_id, findings.batch_id,
                                              prefix=STEERING_PREFIX)
        except Exception as error:  # steered next batch
            self.log(f"{STEERING_PREFIX}batch {findings.batch_id}: skipped: {type(error).__name__}: {error}")
            return []

    # -- adoption --

    def _observe(self, snapshot):
        """duties.adoption on `snapshot`: an `observed` record it found is written (or kept, under a dry run)."""
        found = self.duties.adoption.observe(snapshot, self.ledger.records())
        if found is None:
            return
        if self.policy.acts:
            self.applier.record(found)
            self.duties.owned.adopted(found)
        self._janitor_log(describe_observed(found))

    @step("observe")
    def _observe_now(self):
        """Adoption's own view (duties.pictures.throttle_view), read now: at the first look (the baseline, a whole poll
        /metrics shows), when a move that is not ours appears, and whenever no view was taken for a trigger interval
        (no batch ran: idle, or Spark still starting)."""
        self.duties.adoption.looking()
        try:
            snapshot, first_look = self.duties.pictures.throttle_view(self.handover.facts().batches_done, self.clock())
            if not first_look:  # under `--throttle-cleanup all` a throttle it saw asks for a batch, which clears it
                self.handover.throttles_read(clears_all(self.policy, snapshot))
            self._observe(snapshot)
        except Exception as error:  # read again next time; a batch's findings observe as well
            self.metrics.poll_errors.labels(api=DESCRIBE_CONFIGS).inc()
            self._say(f"observing throttles failed: {error}")

    # -- removal --

    @step("sweep")
    def _sweep(self, left, unseen=(), log_dir_brokers=()):
        self._say(why_it_sweeps(left, unseen, log_dir_brokers, self.duties.looks.listed_once))
        facts = self.handover.facts()  # its records go with the next batch's: the one that reports the move finished
        try:
            self._sweep_now(facts.last_batch_id + 1 if facts.batches_done else -1)
        except Exception as error:  # retried next tick, on a fresh read again
            self.duties.janitor.swept(failed=True)
            self._janitor_log(f"skipped: {type(error).__name__}: {error}")
            return
        self.duties.janitor.swept(failed=False)
        self._read_ledger()  # the sweep settled what it removed: do not keep batches running for it

    def _sweep_now(self, batch_id, hint=None):
        """The janitor's sweep (streaming.control.sweep) on a fresh read: the duty decides, the applier carries the
        decision out; its actions, reported."""
        started = self.clock()
        self.ledger.refresh()
        records = self.ledger.records()
        read_s = self.clock()
        fresh = read_for_plan(self.admin, records, self.policy, hint)
        steps = {"ownership": read_s - started, "read": self.clock() - read_s}
        decided = self.duties.janitor.sweep(fresh, records)
        swept = self.applier.apply_sweep(decided, steps)
        for record in decided.given_up:
            self._janitor_log(describe_given_up(record))
        self.duties.adoption.swept(swept)
        self._say(swept_line(self.clock() - started, steps))
        return self.duties.reports.report(swept.actions, fresh.cluster_id, batch_id)

    # -- plans, records, the gate and liveness --

    @step("plans")
    def _step_plans(self, now_wall):
        self.duties.plans.step(now_wall)

    @step("records")
    def write_records(self):
        """The `throttle` records of what was done, to the progress topic (kept for the next tick if that fails)."""
        self.duties.reports.write()

    @step("decide")
    def _decide(self, listed, now_wall):
        """The gate and liveness (duties.liveness) on this tick's look, and /metrics' own polls when due."""
        duties, facts, now_s = self.duties, self.handover.facts(), self.clock()
        view = batch_view(listed, duties.looks.reassigning, duties.owned.partitions, duties.owned.unread,
                          len(duties.plans.statuses) if duties.plans is not None else 0, facts)
        reason = duties.liveness.decide(view, facts, duties.looks.for_batches, now_s, now_wall,
                                        self.admin.unanswered_since())
        waiting_since_s = duties.liveness.publish(listed, facts, duties.looks.kafka_controller_silent(), now_s,
                                                  now_wall)
        late = duties.liveness.shows_own_poll(facts, waiting_since_s, duties.pictures.poll_s, now_s)
        duties.pictures.show_when_due(facts.batches_done, late, duties.looks.rows, now_s)
        return reason
