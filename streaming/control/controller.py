"""The job's controller: the one part of the streaming job that changes the cluster or the ownership topic, as a
scheduler over duties (streaming.control.duties), each a module that owns its state and returns what it decided;
this module only decides which duty runs when, and hands each what it needs (docs/architecture.md "The controller").

It runs on the driver, in one thread of the `run` process, from the moment `run` starts (before Spark is up). Every
change goes through its one writer (streaming.control.applier.applier_of) over its one ledger of the ownership topic.
The Spark batches only compute and write their records; they hand their findings over (`hand_over`) and never act.
The first tick is the first look: the reassignments listed, the ledger read, and adoption's throttle baseline read
(a whole poll whose picture /metrics shows: duties.pictures) before liveness is first published. Each tick, about
every second:
1. duties.looks lists the reassignments (never waiting for a silent Kafka controller). A list that waited out a
   request deadline - or a look between ticks (step 5) that did - leaves steps 2-7 to the next tick, at once
   (batch_rules.defers_the_rest: one wait per tick).
2. duties.owned reads the ledger while something reassigns or is owned and until Spark's first batch, else once a
   trigger; every read, whichever duty makes it, notes the moves Kafka accepted since the read before (a move of ours
   that came and went between two looks is looked for after steps 3 and 4 have read). What any look listed since the last tick counts as listed
   then (duties.looks `take_seen`): a move of ours a look saw that ended since left the list.
3. The findings of each batch finished since the last tick, in order (`on_batch`): duties.steering, duties.adoption,
   and duties.janitor's sweep when the batch's poll shows a removal due, a record settled or a claim given up
   (`dry_run` records instead under `--dry-run` or `--throttle-cleanup off`).
4. A move that is not ours appears in the list, or no view was taken for a trigger: adoption reads the throttles.
5. An owned partition left the list (between ticks, while an owned partition reassigns, the list is looked at every
   quarter second: `_wait`), a move of ours came and went unseen, the last future log on a broker whose
   alter-log-dirs rate we own ended (duties.log_dirs: moves between log dirs are in no list), at start, or after a
   failed sweep: the janitor sweeps (streaming.control.sweep).
6. duties.plans: one step of every plan whose lease this job holds.
7. duties.reports: the `throttle` records go to the progress topic (kept and written again next tick if that fails).
8. duties.liveness: whether a Spark batch is needed, written to the gate with every move no batch has reported yet
   (duties.handover: listed, or shown on /metrics by the controller's own polls); until Spark's first batch, and
   while a batch is late, duties.pictures polls the whole cluster for /metrics in a thread of its own.
9. Liveness when batch_rules.publishes_liveness - also right after step 1, on the last tick's decision, and from the
   busy look (`look_while_busy`), so that a duty waiting on Kafka does not delay it.
A tick longer than SLOW_TICK_S is logged with its steps' seconds ("slow tick: ..."), and so is a gap longer than that
between two lists by any of the controller's looks ("slow look: ...").

Threads, all on the driver (nothing here is pickled): the controller's (ticks, and the looks between them); the busy
look's (it lists through duties.looks, under that duty's lock, and reads duties.handover); duties.pictures' poll (it
offers a picture to /metrics and its moves to duties.handover); and the batch handler (Spark's foreachBatch), which
calls `hand_over`, `batch_ran`, `batch_writing`, `plan_statuses` and `requests`. What the batch handler and the
controller share is duties.handover, under its one lock; `plan_statuses` and `requests` are dicts replaced whole,
never mutated. The clock is injectable for tests.
"""

import contextlib
import functools
import sys
import threading
import time
from dataclasses import dataclass, field

from sinks.throttle_records import describe_observed
from streaming.control import batch_rules
from streaming.control.applier import applier_of
from streaming.control.duties.adoption import Adoption
from streaming.control.duties.handover import Handover
from streaming.control.duties.janitor import SWEPT_LINE, Janitor, why_it_sweeps
from streaming.control.duties.log_dir_moves import LogDirMoves
from streaming.control.duties.liveness import BATCHES_LINE, IDLE_LINE, WRITE_BOUND_S, Liveness
from streaming.control.duties.looks import SLOW_LOOK_LINE, Looks
from streaming.control.duties.owned import Owned
from streaming.control.duties.pictures import Pictures
from streaming.control.duties.plans import Plans
from streaming.control.duties.reports import JANITOR_PREFIX, Reports
from streaming.control.duties.steering import STEERING_PREFIX, Steering
from streaming.control.ownership.store import NotedReads
from streaming.control.plans.advancer import PlanAdvancer
from streaming.control.sweep import describe_given_up
from streaming.control.throttles.read import read_cluster, read_for_plan
from streaming.vocabulary.defaults import request_deadline_s
from streaming.vocabulary.kafka_apis import DESCRIBE_CONFIGS, LIST_REASSIGNMENTS, READ
from streaming.vocabulary.throttle_actions import ALL

__all__ = ["BATCHES_LINE", "IDLE_LINE", "JANITOR_PREFIX", "LOG_PREFIX", "SLOW_LOOK_LINE", "SLOW_TICK_LINE",
           "STEERING_PREFIX", "SWEPT_LINE", "TICK_INTERVAL_S", "WRITE_BOUND_S", "Controller"]

TICK_INTERVAL_S = 1.0
SLOW_TICK_S = 2 * TICK_INTERVAL_S
LOG_PREFIX = "reassign-monitor: controller: "
SLOW_TICK_LINE = "slow tick: "


def _log(line):
    print(line, file=sys.stderr, flush=True)


def _step(name):
    """Adds the seconds a tick spent in the decorated method to the round's steps (said with a slow tick)."""
    def decorate(method):
        @functools.wraps(method)
        def timed(self, *args, **kwargs):
            started = self.clock()
            try:
                return method(self, *args, **kwargs)
            finally:
                self.round.steps[name] = self.round.steps.get(name, 0.0) + self.clock() - started
        return timed
    return decorate


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


@dataclass
class Round:
    """The controller thread's own bookkeeping of its ticks."""
    steps: dict = field(default_factory=dict)  # seconds of the current tick's steps (_step)
    deferred: bool = False  # the last tick left its duties to this one (batch_rules.defers_the_rest)
    looked_s: float = 0.0  # the seconds of a look between ticks that ended the wait on a lapse or failure (`_wait`)
    ticking_since_s: float | None = None  # when the tick under way started (read by `look_while_busy`)


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
            pictures=Pictures(admin, picture_of, metrics.snapshot.offer, self.handover.note_shown, self._say),
            liveness=Liveness(gate_path, trigger_interval_s, request_deadline_s(timeout_s), self._say),
            reports=Reports(writer, metrics, wall, log, self._say))
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
        snapshot = findings.snapshot
        clears_all = self.policy.cleanup == ALL and bool(snapshot["topic_throttles"] or snapshot["broker_throttles"])
        self.handover.hand_over(findings, clears_all, self.clock())
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
        ticking_since_s = self.round.ticking_since_s
        if ticking_since_s is None or self.clock() - ticking_since_s < self.interval_s or not self.duties.looks.listed_once:
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
        silent = self.duties.looks.kafka_controller_silent()
        if self.duties.liveness.publishes(True, self.handover.facts(), silent, self.clock())[0]:
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
            started = waited_from = self.round.ticking_since_s = self.clock()
            try:
                with self.admin.impatient():  # never waits for a silent Kafka controller (streaming.cluster.door)
                    self.tick()
            except Exception as error:  # a bug must not end the controller: the gate goes stale and fails open
                self._say(f"tick failed: {type(error).__name__}: {error}")
            finally:
                self.round.ticking_since_s = None
            took_s = self.clock() - started
            if took_s > SLOW_TICK_S:
                steps = ", ".join(f"{name} {s:.2f}" for name, s in self.round.steps.items())
                self._say(f"{SLOW_TICK_LINE}{took_s:.1f} s ({steps})")

    def _wait(self, started):
        """Until the next tick, or a batch's findings. While an owned partition is reassigning (batch_rules.peeks),
        look at the reassignment list every batch_rules.peek_interval_s and end the wait as soon as an owned
        partition left it - or the look failed: the tick then lists again, and counts and reports the failure."""
        looks, owned = self.duties.looks, self.duties.owned
        next_tick_s, took_s = started + self.interval_s, 0.0
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
            looked = self.clock()
            try:
                listed = looks.partitions()
            except Exception:
                listed = None
            took_s = self.clock() - looked
            if listed is None or took_s >= self.duties.liveness.request_deadline_s:
                # A look that waited out a deadline is the next tick's one wait (batch_rules.defers_the_rest).
                self.round.looked_s = took_s
                return
            if batch_rules.partitions_left(looks.reassigning, listed, owned.partitions):
                return
            if self.duties.log_dirs.ended_between_ticks(owned.log_dir_rate_brokers):
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
        if listed is not None and (not looks.listed_once or looked or listed or owned.partitions or owned.unread
                                   or not self.handover.facts().batches_done or self._a_trigger_since(owned.read_s)):
            # Every tick until Spark's first batch too: Spark's start slows the looks, and a move of ours that came
            # and went between two of them is known only from the ledger.
            ledger_read = self._read_ledger()
        self._wake.clear()  # before taking: findings handed over after this wake the next wait
        for findings in self.handover.take():
            self.on_batch(findings)
        if listed is not None and (adoption.due(self.clock()) or looks.foreign_move_appeared(listed, owned.partitions)):
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

    def _a_trigger_since(self, then_s):
        """Whether a duty done at `then_s` (None: never) is due again: a trigger interval has passed."""
        return then_s is None or self.clock() - then_s >= self.trigger_interval_s

    @_step("list")
    def _list(self):
        """{(topic, partition): ListPartitionReassignments row}, or None when the list failed (duties.looks)."""
        try:
            return self.duties.looks.tick_list()
        except Exception as error:
            self.metrics.poll_errors.labels(api=LIST_REASSIGNMENTS).inc()
            self._say(f"{LIST_REASSIGNMENTS} failed: {error}")
            return None

    @_step("ownership")
    def _read_ledger(self):
        """Read the ledger (duties.owned); whether that read succeeded."""
        try:
            self.duties.owned.refresh(self.ledger, self.duties.adoption.kept)
            return True
        except Exception as error:  # keep what was known; read again every tick until a read succeeds
            # A request written while the read failed (its move may end meanwhile: the ownership topic's leader
            # was SIGKILLed mid-move) is unknown here: batches run and a sweep is due once it is read.
            self.duties.janitor.due = True
            self.metrics.poll_errors.labels(api=READ).inc()
            self._say(f"reading ownership records failed: {error}")
            return False

    # -- a batch's findings --

    @_step("batch")
    def on_batch(self, findings):
        """Act on one batch's findings (module docstring, step 3); the throttle actions taken or reported."""
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

    @_step("observe")
    def _observe_now(self):
        """The throttles of every topic and broker and the reassignments, read now, as adoption's next view: at
        the first look (the baseline), when a move that is not ours appears, and whenever no view was taken for
        a trigger interval (no batch ran: idle, or Spark still starting). The first look's read is a whole poll whose
        picture /metrics shows (duties.pictures); until Spark's first batch, the pictures after it are polled in a
        thread of their own (`_decide`), so a whole poll never holds a tick while Spark starts."""
        pictures = self.duties.pictures
        self.duties.adoption.looking()
        first_look = pictures.shown and pictures.poll_s is None and not self.handover.facts().batches_done
        try:
            if first_look:
                snapshot = pictures.first_look(self.clock())
            else:
                snapshot = read_cluster(self.admin, {row["topic"] for row in self.admin.describe_partitions(None)})
                # No batch shows what changed while nothing moves: /metrics shows this read's throttles, and under
                # `--throttle-cleanup all` one it saw asks for a batch, whose janitor clears it.
                throttles = snapshot["topic_throttles"], snapshot["broker_throttles"]
                self.metrics.snapshot.offer_throttles(*throttles, snapshot.ts_ms / 1000)
                self.handover.throttles_read(self.policy.cleanup == ALL and any(throttles))
            self._observe(snapshot)
        except Exception as error:  # read again next time; a batch's findings observe as well
            self.metrics.poll_errors.labels(api=DESCRIBE_CONFIGS).inc()
            self._say(f"observing throttles failed: {error}")

    # -- removal --

    @_step("sweep")
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
        self._say(f"{SWEPT_LINE}{self.clock() - started:.2f} s ({', '.join(f'{n} {s:.2f}' for n, s in steps.items())})")
        return self.duties.reports.report(swept.actions, fresh.cluster_id, batch_id)

    # -- plans, records, the gate and liveness --

    @_step("plans")
    def _step_plans(self, now_wall):
        self.duties.plans.step(now_wall)

    @_step("records")
    def write_records(self):
        """The `throttle` records of what was done, to the progress topic (kept for the next tick if that fails)."""
        self.duties.reports.write()

    @_step("decide")
    def _decide(self, listed, now_wall):
        duties, facts = self.duties, self.handover.facts()
        view = batch_rules.BatchView(
            listed=listed, reassigning=duties.looks.reassigning, owned=duties.owned.partitions,
            batches_done=facts.batches_done, tracks_moves=facts.tracks_moves,
            throttles_to_clear=facts.throttles_to_clear, owned_unread=duties.owned.unread,
            active_plans=len(duties.plans.statuses) if duties.plans is not None else 0,
            unreported=bool(facts.unreported))
        now_s = self.clock()
        reason = duties.liveness.decide(view, facts, duties.looks.for_batches, now_s, now_wall)
        publishes, waiting_since_s = duties.liveness.publishes(listed, facts, duties.looks.kafka_controller_silent(),
                                                               now_s)
        if publishes:
            self.metrics.snapshot.touch(now_wall)
        pictures = duties.pictures
        if pictures.shown and not pictures.busy():
            if batch_rules.shows_first_look(facts.batches_done, pictures.poll_s, now_s, self.trigger_interval_s):
                pictures.in_background(None, now_s)
            elif duties.liveness.shows_own_poll(facts, waiting_since_s, pictures.poll_s, now_s):
                pictures.in_background(duties.looks.rows, now_s)
        return reason
