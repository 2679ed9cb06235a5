"""What the fault tests (tests/test_faults_*_cluster.py) share: the job's settings, a watch on its batches,
throttle configs as sets of atoms, `execute` in this process, and the figures each test prints.

The job under test is the session's `fault_job` (conftest) on the dedicated `fault_cluster`: one Spark
start serves every fault test (a start costs 20-45 s on the 2-core machine)."""

import json
import re
import threading
import time

from sinks.metric_names import POLL_DURATION as POLL_DURATION_METRIC
from streaming.cluster.door import HELD_AS
from streaming.cluster.door import LOG_PREFIX as DOOR_LOG_PREFIX
from streaming.commands.cancel import NOT_REASSIGNING
from streaming.vocabulary.kafka_apis import LIST_REASSIGNMENTS
from streaming.control.controller import LOG_PREFIX, SLOW_LOOK_LINE, SLOW_TICK_LINE, TICK_INTERVAL_S
from tests.cluster_cli import clear_broker_throttles, cli, reassigning, throttles
from tests.job_process import LAST_POLL, batch_lines, idle, read_topic, sample_value
from tests.kafka_fixtures import wait_for

TRIGGER_S = 2.0
ADMIN_TIMEOUT_S = 5.0
POLL_DURATION = POLL_DURATION_METRIC.name
# No --quiet: each batch's log line (with its id) is how the tests tell which batch did what.
# --debug: should the job die, its log has the traceback for the report.
JOB_FLAGS = ("--trigger-interval", f"{TRIGGER_S:g}s", "--master", "local[2]", "--timeout", f"{ADMIN_TIMEOUT_S:g}",
             "--rate-window", "10s", "--debug")
# bytes/s: tens of MB at ~1 MB/s keep a move in flight for seconds (docs/progress.md "Kafka's replication throttle")
RATE = 1_000_000
FOREIGN_RATE = 77_000_000  # a broker rate somebody else set: never ours to remove


def figure(test, **values):
    """Print the measured figures (pytest -s shows them) in one greppable line."""
    shown = ", ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
    print(f"\nFAULT FIGURES {test}: {shown}", flush=True)


class BatchWatch(threading.Thread):
    """Samples the job every 0.2 s from its own thread: when each batch's log line first appeared (so gaps
    between batches are measured while the test waits on something else), the last-poll gauge (so gaps
    between published polls are) and the `tracked` series [(metric name, {label: value})], all from one scrape:
    `series[i]` is [(monotonic time, value)] of the i-th."""

    def __init__(self, job, tracked=()):
        super().__init__(daemon=True)
        self.job = job
        self.seen = {}  # batch id -> (monotonic time its line appeared, ok)
        self.polls = []  # (monotonic time, Unix time, last-poll gauge)
        self.tracked = list(tracked)
        self.series = [[] for _ in self.tracked]
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            now = time.monotonic()
            try:
                text = self.job.log()
            except OSError:
                text = ""
            for batch, ok, _ in batch_lines(text):
                self.seen.setdefault(batch, (now, ok))
            samples = self.job.samples()
            gauge = sample_value(samples, LAST_POLL)
            if gauge is not None:
                self.polls.append((now, time.time(), gauge))
            for series, (name, labels) in zip(self.series, self.tracked):
                value = sample_value(samples, name, **labels)
                if value is not None:
                    series.append((now, value))
            self.sampled(now, samples)
            self._halt.wait(0.2)

    def sampled(self, now, samples):
        """What a test watches besides, from the same scrape (at monotonic `now`)."""

    def __enter__(self):
        self.started_at = time.monotonic()
        self.start()
        return self

    def __exit__(self, *_):
        self._halt.set()
        self.join(10)

    def last(self):
        return max(self.seen, default=-1)

    def longest_gap(self, since, until=float("inf")):
        """Longest time between consecutive batch lines between monotonic times `since` and `until` (and from
        `since`)."""
        times = sorted([since] + [t for t, _ in self.seen.values() if since <= t <= until])
        return max((b - a for a, b in zip(times, times[1:])), default=0.0)

    def gauge_advanced(self, since, until):
        """Did the last-poll gauge take a newer value between `since` and `until` (monotonic)?"""
        before = [g for t, _, g in self.polls if t <= since]
        during = [g for t, _, g in self.polls if since < t <= until]
        return bool(before and during and max(during) > before[-1])

    def longest_published_gap(self, since, until=float("inf")):
        """Longest time between two published polls from monotonic `since` to `until`: between consecutive
        values the last-poll gauge took (each the Unix time of a poll the job published), starting from the
        value in force at `since`, and from the last value to the last sample (a gauge that stopped). A value
        taken and replaced between two samples is missed, which can only make a gap look longer. None
        without samples on both sides of `since`."""
        before = [g for t, _, g in self.polls if t <= since]
        during = [(wall, g) for t, wall, g in self.polls if since < t <= until]
        if not before or not during:
            return None
        values = sorted({before[-1]} | {g for _, g in during if g > before[-1]})
        return max([b - a for a, b in zip(values, values[1:])] + [during[-1][0] - values[-1]])


def watch_ticks(log_text):
    """(the controller's gaps of more than 2 s between two of its polls, its slow ticks' lines, its failed polls,
    its failed ownership reads) in a stretch of the job's log. The controller polls (ListPartitionReassignments) at
    each tick, between ticks while a move of ours is in flight, and once a second while a tick is busy, and logs a
    gap longer than 2 s between two polls; a slow tick's line names its steps' seconds. An ownership read fails
    while the dead broker still leads the ownership topic's partition (nobody can read it until Kafka fenced that
    broker): the controller keeps what it read last."""
    lines = [line for line in log_text.splitlines() if line.startswith(LOG_PREFIX)]
    gaps = [float(line.split(SLOW_LOOK_LINE, 1)[1].split()[0]) for line in lines
            if line.startswith(LOG_PREFIX + SLOW_LOOK_LINE)]
    slow_ticks = [line[len(LOG_PREFIX + SLOW_TICK_LINE):] for line in lines
                  if line.startswith(LOG_PREFIX + SLOW_TICK_LINE)]
    failed = [line for line in lines if line.startswith((f"{LOG_PREFIX}{LIST_REASSIGNMENTS} failed",
                                                         f"{LOG_PREFIX}tick failed"))]
    unread = [line for line in lines if line.startswith(f"{LOG_PREFIX}reading ownership records failed")]
    return gaps, slow_ticks, failed, unread


def liveness_since(watch, killed, log_offset, until=float("inf")):
    """What check_no_wait_on_the_dead reads about published polls and the controller's own polls since the
    kill (monotonic `killed`; `log_offset`: the job log's length then)."""
    gaps, slow_ticks, failed, unread = watch_ticks(watch.job.log()[log_offset:])
    return {"published_gap_s": watch.longest_published_gap(killed, until),
            "watch_gap_s": max(gaps, default=TICK_INTERVAL_S), "slow_ticks": slow_ticks, "watch_failures": failed,
            "ownership_reads_failed": len(unread)}


def published_gap_bound_s(trigger_s):
    """After a node is SIGKILLed, no gap between two published polls (advances of the last-poll
    gauge on /metrics: docs/metrics.md "Liveness: kafka_reassignment_monitor_last_poll_timestamp_seconds")
    longer than two triggers plus 1 s; the same for the polls of the controller."""
    return 2 * trigger_s + 1


class FencingProbe(threading.Thread):
    """How long Kafka itself holds a durable write after a node's SIGKILL: an acks=all write to every
    partition of a 3-replica topic, sent at the kill, is acknowledged only once the controller has fenced the
    dead broker (broker.session.timeout.ms, 9 s by default) and taken it out of every ISR. A batch's progress
    records are written just so, so a batch under way at the kill ends that much later whatever the poll does
    (while the controller keeps publishing polls): `held_s`, a figure that explains the gap between batches."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.topic = cluster.create_topic(cluster.unique_topic("fencing-probe"),
                                          {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
        self.held_s = None

    def run(self):
        from confluent_kafka import Producer

        producer = Producer({**self.cluster.settings(), "acks": "all", "message.timeout.ms": 60_000, "log_level": 0})
        started = time.monotonic()
        for partition in (0, 1, 2):
            producer.produce(self.topic, b"probe", partition=partition)
        if producer.flush(60) == 0:
            self.held_s = time.monotonic() - started

    def result(self):
        """Seconds Kafka held the write (the thread joined); None when it was not acknowledged within 60 s."""
        self.join(70)
        self.cluster.delete_topics([self.topic])
        return self.held_s


def failed_polls(log_text, after_batch):
    """[(batch id, line)] of the polls that failed in batches later than `after_batch` (not the janitor's
    skips: failures_after has both)."""
    return [(b, f"batch {b}: {rest}") for b, ok, rest in batch_lines(log_text) if not ok and b > after_batch]


def check_no_wait_on_the_dead(found, test):
    """Issue 21, with one node SIGKILLed (two alive all along): no poll failed - the batches' nor the driver
    watch's -, none waited out its --timeout on the dead node, and no gap between two published polls (the
    last-poll gauge) nor between two of the controller's polls was longer than two triggers plus 1 s. Batches
    themselves may be further apart: Kafka holds their durable write until it fenced the dead node
    (`fencing_held_s`), and while it does the controller's polls are what the job publishes (docs/metrics.md
    "Liveness: kafka_reassignment_monitor_last_poll_timestamp_seconds"); that gap is reported, not bounded."""
    trigger_s, bound_s = found["trigger_s"], published_gap_bound_s(found["trigger_s"])
    figure(test, trigger_s=trigger_s, bound_s=bound_s, published_gap_s=found["published_gap_s"],
           watch_gap_s=found["watch_gap_s"], slow_ticks=found["slow_ticks"],
           watch_failures=len(found["watch_failures"]),
           ownership_reads_failed=found["ownership_reads_failed"],
           longest_batch_gap_s=found["longest_batch_gap_s"], kafka_held_writes_s=found["fencing_held_s"],
           slowest_batch_before_s=found["slowest_batch_before_s"],
           polls_since_kill=found["polls_since_kill"], polls_waiting_out_timeout=found["polls_waiting_out_timeout"],
           polls_failed_since_kill=len(found["polls_failed_since_kill"]))
    assert not found["polls_failed_since_kill"], (
        f"{test}: polls failed with two brokers alive: {found['polls_failed_since_kill'][:4]}")
    assert not found["watch_failures"], f"{test}: the controller failed with two brokers alive: {found['watch_failures'][:4]}"
    assert found["polls_waiting_out_timeout"] == 0, (
        f"{test}: {found['polls_waiting_out_timeout']} of {found['polls_since_kill']} polls since the kill took "
        f"longer than --timeout {found['timeout_s']:g}s (waiting on the dead node)")
    assert found["published_gap_s"] is not None and found["published_gap_s"] <= bound_s, (
        f"{test}: {found['published_gap_s']} s between two published polls after the kill (last-poll gauge; bound "
        f"two triggers + 1 s = {bound_s:g} s; None: no sample); batches {found['longest_batch_gap_s']:.1f} s apart, "
        f"Kafka held acks=all writes {found['fencing_held_s']} s")
    assert found["watch_gap_s"] <= bound_s, (
        f"{test}: the controller went {found['watch_gap_s']:.1f} s between two polls (bound {bound_s:g} s)")


def batches_done(job):
    """Spark batches the job handled so far (its poll-duration histogram's count, observed in foreachBatch)."""
    return job.metric(f"{POLL_DURATION}_count") or 0


def polls_longer_than(job, seconds):
    """(polls so far, of which longer than `seconds`), from the job's poll-duration histogram (`seconds` one
    of its bucket bounds)."""
    samples = {(name, dict(labels).get("le")): v for (name, labels), v in job.samples().items()
               if name.startswith(POLL_DURATION)}
    total = samples.get((f"{POLL_DURATION}_count", None), 0)
    within = next((v for (name, le), v in samples.items()
                   if name == f"{POLL_DURATION}_bucket" and le not in (None, "+Inf") and float(le) == seconds), None)
    assert within is not None, f"no bucket le={seconds} in {POLL_DURATION}"
    return total, total - within


def atoms(cluster, topics, admin=None):
    """The cluster's throttle configs as a set: (topic, kind, entry) per throttled-replicas entry,
    (broker, kind, rate) per broker rate. Owned = what execute added; foreign = what was there before. `admin`: as
    cluster_cli.throttles."""
    out = set()
    for (name, kind), value in throttles(cluster, topics, admin).items():
        if isinstance(value, int):
            out.add((name, kind, value))
        else:
            out |= {(name, kind, e) for e in (value if value != "*" else {"*"})}
    return out


class BeforeFirstConfigChange:
    """The real admin door, whose writer runs `action()` once just before its first IncrementalAlterConfigs: a
    fault placed between what a command wrote before (its ownership record) and its first config change."""

    def __init__(self, door, action):
        self._door, self._action, self.fired = door, action, False

    def writer(self, grant):
        return _FaultBeforeAlter(self, self._door.writer(grant))

    def __getattr__(self, name):
        return getattr(self._door, name)


class _FaultBeforeAlter:
    def __init__(self, door, writer):
        self._door, self._writer = door, writer

    def alter_throttles(self, changes):
        if not self._door.fired:
            self._door.fired = True
            self._door._action()
        return self._writer.alter_throttles(changes)

    def __getattr__(self, name):
        return getattr(self._writer, name)


def execute(cluster, tmp_path, moves, throttle=RATE, *extra, connect=None):
    """`reassign-monitor execute` in this process; moves: [(topic, partition, replicas)] -> request id.
    `connect`: the admin door (default: the real cluster's)."""
    plan = tmp_path / f"plan-{time.monotonic_ns()}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r)} for t, p, r in moves]}))
    code, out, err = cli("execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", plan,
                         "--throttle", throttle, "--output", "json", "--timeout", "15", *extra, connect=connect)
    assert code == 0, f"execute exited {code}: {err.strip()}"
    return json.loads(out)["request_id"]


def moving(cluster, topic):
    return any(t == topic for t, _ in reassigning(cluster))


def records(job, prefix):
    """[(key, value)] of the job's progress records whose key starts with `prefix`, once its spool delivered
    what it holds (a removal's record reaches the topic after the removal itself: read right after it, while Kafka
    elected a new controller, none was there yet)."""
    return [(k, v) for k, v in read_topic(job.bootstrap, job.delivered().progress_topic) if k.startswith(prefix)]


def removals(job, names, since_batch):
    """{(scope, name, kind): sorted batch ids} of `removed`/`restored` throttle records for `names`
    (topic names and broker ids) written after `since_batch`. A batch replayed after a crash rewrites its
    records with the same id, so one removal is one batch id, however often it was written."""
    out = {}
    for key, value in records(job, "throttle:"):
        throttle = value.get("throttle") or {}
        if (value["batch_id"] > since_batch and str(throttle.get("name")) in {str(n) for n in names}
                and throttle.get("action") in ("removed", "restored")):
            out.setdefault((throttle["scope"], str(throttle["name"]), throttle["kind"]), set()).add(value["batch_id"])
    return {k: sorted(v) for k, v in out.items()}


def wait_batches_or_idle(job_watch, count, timeout_s=60):
    """Wait until `count` more batches have run or the job's controller said no batch is needed (it runs
    none while nothing moves and nothing is owned: docs/architecture.md "The controller")."""
    start = job_watch.last()
    return wait_for(lambda: job_watch.last() >= start + count or idle(job_watch.job.log()), timeout_s,
                    interval_s=0.2, message=f"{count} more batches after batch {start}, or the job idle")


def wait_batches(job_watch, count, timeout_s=60):
    """Wait until `count` more batches have run (by their log lines)."""
    start = job_watch.last()
    return wait_for(lambda: job_watch.last() >= start + count, timeout_s, interval_s=0.2,
                    message=f"{count} more batches after batch {start}")


def replica_states(job, topic, partition, broker, after_batch=-1):
    """[(batch id, state, value)] of one replica's records after `after_batch`, the last write of a batch
    winning (a replayed batch is written again with the same id)."""
    by_batch = {}
    key = f"{topic}:{partition}:{broker}"
    for k, value in records(job, key):
        if k == key and value["batch_id"] > after_batch and value["kind"] == "replica":
            by_batch[value["batch_id"]] = value
    return [(b, v["state"], v) for b, v in sorted(by_batch.items())]


def seconds_until(condition, timeout_s, interval_s=0.2):
    """Seconds until `condition` held, or None when it did not within `timeout_s`: a figure to report,
    asserted by the caller with a message that says what was measured."""
    started = time.monotonic()
    try:
        wait_for(condition, timeout_s, interval_s=interval_s)
    except AssertionError:
        return None
    return time.monotonic() - started


def owned_configs(owned):
    """(scope, name, kind) of each config an owned atom lives in: what one removal record names."""
    return {("broker" if isinstance(name, int) else "topic", str(name), kind) for name, kind, _ in owned}


def prepare(cluster, source, bystander, megabytes):
    """Partition 0 on `source` with data to move; partition 1 carries a foreign leader entry and the
    bystander broker a foreign follower rate: somebody else's throttles the janitor must never touch."""
    topic = cluster.unique_topic("fault")
    cluster.create_topic(topic, {0: [source], 1: [source]})
    cluster.produce(topic, [0], megabytes)
    cluster.set_configs({topic: {"leader.replication.throttled.replicas": f"1:{source}"}},
                        {bystander: {"follower.replication.throttled.rate": FOREIGN_RATE}})
    return topic


def cleanup(cluster, topics):
    """Whatever happened: all nodes up (a fault cluster), ISR full, no move of these topics running, no throttle
    left."""
    from kafka import TopicPartition

    if hasattr(cluster, "ensure_whole"):  # only the fault cluster's nodes are ever stopped
        cluster.ensure_whole()
    admin = cluster.admin()
    try:
        ongoing = [tp for tp in admin.list_partition_reassignments() if tp.topic in topics]
        if ongoing:
            admin.alter_partition_reassignments({TopicPartition(tp.topic, tp.partition): None for tp in ongoing})
    finally:
        admin.close()
    clear_broker_throttles(cluster)
    cluster.delete_topics(topics)


def check_a_move_ending_while_the_job_is_down_is_closed(cluster, job, tmp_path, test, megabytes, *flags):
    """The job is SIGKILLed the moment the first record of a move is written (the batch that wrote it
    may not be in the checkpoint yet), the move completes while the job is down and a second one is cancelled;
    after the restart each replica's last record is COMPLETED or CANCELLED, written by exactly one batch.
    `megabytes` at RATE keep the move in flight past the job's first batch after it started; `flags` go to
    execute and cancel (an ownership topic of the test's own)."""
    from tests.job_process import FIRST_POLL_S

    completing = prepare(cluster, 1, 3, megabytes)
    # Twice the data: the cancel must find its move still running after the job's kill, even when the CLI's start
    # is slow on a loaded machine (seen: a 1:1 pair ended before the cancel at a load of 25).
    cancelled = prepare(cluster, 2, 3, 2 * megabytes)
    topics = [completing, cancelled]
    try:
        execute(cluster, tmp_path, [(completing, 0, [1, 2])], RATE, *flags)
        execute(cluster, tmp_path, [(cancelled, 0, [2, 1])], RATE, *flags)  # the same brokers: the same rate
        wait_for(lambda: replica_states(job, completing, 0, 2) and replica_states(job, cancelled, 0, 1), 120,
                 interval_s=0.1, message="the first records of both moves")
        job.kill()
        killed_at = time.monotonic()
        plan = tmp_path / "cancel.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": cancelled, "partition": 0}]}))
        code, out, err = cli("cancel", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", plan, *flags)
        assert code == 0 and NOT_REASSIGNING not in out, (out, err)
        wait_for(lambda: not moving(cluster, completing), 120, message="the move to complete while the job is down")
        job.start()

        def closed():
            last = {t: replica_states(job, t, 0, b) for t, b in ((completing, 2), (cancelled, 1))}
            return all(states and states[-1][1] in ("COMPLETED", "CANCELLED") for states in last.values()) and last

        last = wait_for(closed, FIRST_POLL_S + 60, interval_s=0.5, message="both moves closed after the restart")
        figure(test, closed_after_kill_s=time.monotonic() - killed_at,
               records={t: [s for _, s, _ in states] for t, states in last.items()})
        for topic, wanted in ((completing, "COMPLETED"), (cancelled, "CANCELLED")):
            states = [s for _, s, _ in last[topic]]
            assert states[-1] == wanted and states.count(wanted) == 1, f"{topic}: {states}"
    finally:
        cleanup(cluster, topics)


def advances(series, since, until):
    """(how often a tracked series (BatchWatch.series) rose between monotonic `since` and `until`, the longest
    stretch of that window without a rise): whether a figure on /metrics "keeps advancing"."""
    before = [v for t, v in series if t < since]
    last = before[-1] if before else None
    rises = [since]
    for t, v in series:
        if since <= t <= until:
            if last is not None and v > last:
                rises.append(t)
            last = v if last is None else max(last, v)
    marks = rises + [until]
    return len(rises) - 1, max(b - a for a, b in zip(marks, marks[1:]))


def first_sample(series, holds, since=float("-inf")):
    """Monotonic time of the first sample of a tracked series at or after `since` whose value `holds`, or None."""
    return next((t for t, v in series if t >= since and holds(v)), None)


class FenceWatch(threading.Thread):
    """When Kafka fenced `node` (DescribeCluster leaves it out, or says it is fenced) and when it took it back, asked
    every 0.5 s of each other node by name (never of the stopped one: a client choosing its node itself may pick it
    and wait out its request timeout) by the test's own client. `fenced_at`, `back_at`: monotonic times of the first
    answers that showed each, seen at most about 0.5 s late."""

    def __init__(self, cluster, node):
        super().__init__(daemon=True)
        self.others = [n for n in cluster.NODES if n != node]
        self.bootstrap = ",".join(f"127.0.0.1:{cluster.base_port + n}" for n in self.others)
        self.node = node
        self.fenced_at = self.back_at = None
        self._halt = threading.Event()

    def _listed_unfenced(self, admin, asked):
        from kafka.protocol.admin import DescribeClusterRequest

        async def ask():
            return await admin._manager.send(DescribeClusterRequest(include_cluster_authorized_operations=False),
                                             node_id=asked)
        brokers = {b.broker_id: b for b in admin._manager.run(ask).brokers}
        return self.node in brokers and not getattr(brokers[self.node], "is_fenced", False)

    def run(self):
        from kafka import KafkaAdminClient

        admin = None
        while not self._halt.is_set():
            answers = []
            for asked in self.others:
                try:
                    admin = admin or KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=1500,
                                                      bootstrap_timeout_ms=3000)
                    answers.append(self._listed_unfenced(admin, asked))
                except Exception:  # a node mid-election or a client gone stale: asked again with a new client
                    if admin is not None:
                        admin.close()
                    admin = None
            now = time.monotonic()
            if answers and not all(answers) and self.fenced_at is None:
                self.fenced_at = now
            if answers and all(answers) and self.fenced_at is not None and self.back_at is None:
                self.back_at = now
            self._halt.wait(0.5)
        if admin is not None:
            admin.close()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *_):
        self._halt.set()
        self.join(10)


# The door's line when it holds a node (streaming.cluster.door), and any line saying a broker did not answer
# (a poll error, a janitor's or the controller's skip: "Fetch: broker 1, the leader of t-0, did not answer (...)").
HELD_LINE = re.compile(rf"^{re.escape(DOOR_LOG_PREFIX)}broker (\d+){re.escape(HELD_AS)}(\w+)", re.M)
NOT_ANSWERED = re.compile(r"broker (\d+)(?:, the leader of \S+,)? did not answer")


def held_in(log_text):
    """({node: {hold kinds}} of the door's holds, {nodes said not to have answered}) in a stretch of a job's log."""
    holds = {}
    for match in HELD_LINE.finditer(log_text):
        holds.setdefault(int(match.group(1)), set()).add(match.group(2))
    return holds, {int(n) for n in NOT_ANSWERED.findall(log_text)}
