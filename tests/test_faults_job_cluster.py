"""The job itself hit: SIGKILLed at random moments while it owns throttles, and leader
changes of its own topics while it starts and while it runs. On the dedicated `fault_cluster`; the shared
`fault_job` is killed and started again here (same checkpoint, metrics port and progress topic)."""

import os
import random
import time

import pytest
from kafka import TopicPartition

from sinks.metric_names import CLUSTER_UP as CLUSTER_UP_METRIC
from streaming.commands.reassign_common import connect as connect_door
from streaming.vocabulary.defaults import OWNERSHIP_TOPIC
from tests.fault_support import (
    TRIGGER_S, BeforeFirstConfigChange, atoms, check_a_move_ending_while_the_job_is_down_is_closed, cleanup, execute,
    figure, moving, prepare, seconds_until)
from tests.job_process import BATCHES, FIRST_POLL_S, LAST_POLL, batch_lines, failures_after, last_batch, running
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

CLUSTER_UP = CLUSTER_UP_METRIC.name
SETTLE_S = 90  # after the last restart: first poll, then the due removals of three requests


def test_job_sigkilled_at_random_moments_leaves_no_owned_throttle(fault_cluster, fault_job, tmp_path):
    """Five kills at the moments a crash hurts most, their timing drawn from a seeded random generator
    (the seed is printed): between execute's ownership write and its config change, during start-up,
    mid-move, while a move that then completes with the job down is in flight, and right after the janitor's
    first removal (before it can mark the ownership record done). After the last restart no owned throttle may
    remain and no foreign one change."""
    seed = int(os.environ.get("FAULT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    cluster, job, created, kills = fault_cluster, running(fault_job), [], []

    def kill(label):
        assert job.process.poll() is None, f"the job had already exited before the kill {label!r}: {job.log()[-3000:]}"
        kills.append((label, last_batch(job.log())))
        job.kill()

    try:
        topics = {name: prepare(cluster, source, bystander, megabytes)
                  for name, source, bystander, megabytes in (("a", 1, 3, 6), ("b", 2, 1, 20), ("c", 3, 2, 4))}
        created += topics.values()
        before = atoms(cluster, created)  # every throttle that exists now is foreign

        # 1. Between execute's ownership write (done) and its first config change (about to happen).
        hooked = []

        def kill_first():
            hooked.append(atoms(cluster, created) - before)  # nothing of ours set yet: the kill point is real
            kill("between execute's ownership write and its config change")

        execute(cluster, tmp_path, [(topics["a"], 0, [1, 2])],
                connect=lambda args: BeforeFirstConfigChange(connect_door(args), kill_first))
        assert hooked == [set()], f"the job was not killed between the ownership write and the config change: {hooked}"

        # 2. During start-up, at a random moment.
        job.start()
        time.sleep(rng.uniform(1.0, 15.0))  # the fault's timing itself: random by design, bounded
        kill("during start-up")

        # 3. Mid-move, at a random moment within two batches of bytes being copied.
        running(job)
        execute(cluster, tmp_path, [(topics["b"], 0, [2, 3])])
        wait_for(lambda: (job.metric("kafka_reassignment_replica_copied_bytes", topic=topics["b"], partition=0,
                                     broker=3) or 0) > 500_000, 60, interval_s=0.2, message="b copying")
        time.sleep(rng.uniform(0.0, 2 * TRIGGER_S))  # the fault's timing itself: random by design, bounded
        kill("mid-move")

        # 4. While a move is in flight (4 MB at 1 MB/s, just accepted), then it completes while the job is down:
        #    the janitor never saw it end. Killed when the test saw the move complete, or when the job showed it
        #    copying (a batch may come seconds late), the job had sometimes removed every owned throttle already
        #    (it looks every quarter second): step 5 then had nothing to remove.
        running(job)
        execute(cluster, tmp_path, [(topics["c"], 0, [3, 1])])
        assert moving(cluster, topics["c"]), "c completed before the kill: nothing moves while the job is down"
        kill("while a move is in flight; it completes while the job is down")
        wait_for(lambda: not moving(cluster, topics["c"]), 60, interval_s=0.2, message="c completing, the job down")

        # 5. Right after the janitor's first removal (some owned throttle gone, others and the ownership
        #    record's `done` not yet written).
        owned = atoms(cluster, created) - before
        assert owned, "no owned throttle left after c completed with the job down: nothing to remove at restart"
        job.start()
        wait_for(lambda: (owned - atoms(cluster, created)) or job.process.poll() is not None, FIRST_POLL_S + 30,
                 interval_s=0.1, message="the janitor's first removal after the restart")
        kill("right after the janitor's first removal")

        running(job)
        restarted_batch = last_batch(job.log())
        gone = seconds_until(lambda: not any(moving(cluster, t) for t in created)
                             and not (atoms(cluster, created) & owned), SETTLE_S)
        now = atoms(cluster, created)
        leaked = sorted(now & owned, key=str)
        touched = sorted((before - now) | (now - before - owned), key=str)
        figure("job_sigkilled", seed=seed, kills=len(kills), throttles_leaked=len(leaked), foreign_touched=len(touched),
               settled_after_last_restart_s=gone, kill_points=[label for label, _ in kills])
        assert len(kills) >= 5, f"only {len(kills)} kills: {kills}"
        assert not leaked, (
            f"{len(leaked)} owned throttles leaked after {len(kills)} SIGKILLs (seed {seed}): {leaked}; "
            f"janitor/poll failures since the last restart: {failures_after(job.log(), restarted_batch)[:5]}")
        assert not touched, f"{len(touched)} foreign throttles touched (seed {seed}): {touched}"
        assert job.process.poll() is None, f"the job exited after the last restart: {job.log()[-3000:]}"
    finally:
        if job.process.poll() is not None:
            job.start()  # the next test expects the shared job running
        cleanup(cluster, created)


def test_a_move_that_ends_while_the_job_is_down_is_reported_finished_once(fault_cluster, fault_job, tmp_path):
    """At the 2 s trigger (the default trigger: tests/test_job_cluster.py)."""
    check_a_move_ending_while_the_job_is_down_is_closed(fault_cluster, running(fault_job), tmp_path,
                                                        "ended_while_down_2s", megabytes=8)


def move_leader(cluster, topic, partition):
    """Make the next in-sync replica the leader: reorder the replicas (a reassignment that adds nothing and
    completes at once), then a preferred-leader election. Returns the new leader, or None when refused."""
    admin = cluster.admin()
    try:
        described = admin.describe_topics([topic])[0]["partitions"]
        now = next(p for p in described if p["partition_index"] == partition)
        replicas, leader = list(now["replica_nodes"]), now["leader_id"]
        if sorted(now["isr_nodes"]) != sorted(replicas) or len(replicas) < 2:
            return None
        rotated = replicas[1:] + replicas[:1]
        admin.alter_partition_reassignments({TopicPartition(topic, partition): rotated})
        wait_for(lambda: not any(tp.topic == topic for tp in admin.list_partition_reassignments()), 10, interval_s=0.1)
        admin.elect_leaders(0, {topic: [partition]}, raise_errors=False)
        after = next(p for p in admin.describe_topics([topic])[0]["partitions"] if p["partition_index"] == partition)
        return after["leader_id"] if after["leader_id"] != leader else None
    except Exception:  # a leader move racing with the one before: skip this round
        return None
    finally:
        admin.close()


def test_leader_changes_at_start_up_and_mid_run_never_stop_the_job(fault_cluster, fault_job, tmp_path):
    """The ownership topic's and the progress topic's leaders move while the job starts (its first reads of
    both) and then while it runs: retried, never fatal (the first run on a fresh cluster exited 3 on a
    leaderless ownership topic)."""
    cluster, job = fault_cluster, running(fault_job)
    admin = cluster.admin()
    try:
        progress_partitions = sorted(p["partition_index"] for p in admin.describe_topics([job.progress_topic])[0]["partitions"])
    finally:
        admin.close()
    targets = [(OWNERSHIP_TOPIC, 0)] + [(job.progress_topic, p) for p in progress_partitions]
    moves = {"start-up": 0, "mid-run": 0}
    # A throttled move started with the first batch keeps batches (and their progress records) running mid-run:
    # the job runs no batch while nothing moves (docs/architecture.md "The controller").
    busy = prepare(cluster, 1, 3, 30)
    job.kill()
    log_from = len(job.log())
    job.start()
    started = time.monotonic()
    first_poll_batch = None
    try:
        deadline = started + FIRST_POLL_S + 60
        while time.monotonic() < deadline and job.process.poll() is None:
            phase = "start-up" if first_poll_batch is None else "mid-run"
            for topic, partition in targets:
                if move_leader(cluster, topic, partition) is not None:
                    moves[phase] += 1
            if first_poll_batch is None and job.metric(BATCHES):
                first_poll_batch = last_batch(job.log())
                execute(cluster, tmp_path, [(busy, 0, [1, 2])])
            if first_poll_batch is not None and last_batch(job.log()) >= first_poll_batch + 6 and moves["mid-run"] >= 4:
                break
            time.sleep(TRIGGER_S / 2)  # pace of the leader moves: about two per batch
        log = job.log()[log_from:]
        failed_polls = [b for b, ok, _ in batch_lines(log) if not ok]
        counted = poll_errors(job)  # the process started in this test: its counter covers exactly this log
        figure("leader_changes", leader_moves_start_up=moves["start-up"], leader_moves_mid_run=moves["mid-run"],
               first_poll_s=None if first_poll_batch is None else time.monotonic() - started,
               batches_after_first_poll=None if first_poll_batch is None else last_batch(log) - first_poll_batch,
               failed_polls=len(failed_polls), poll_errors_counted=counted,
               janitor_or_poll_failures=len(failures_after(log, -1)))
        assert job.process.poll() is None, f"the job exited {job.process.poll()} while leaders moved: {log[-3000:]}"
        assert first_poll_batch is not None, f"no first poll within {FIRST_POLL_S + 60}s while leaders moved"
        assert last_batch(log) >= first_poll_batch + 6, (
            f"batches stopped while leaders moved: {last_batch(log) - first_poll_batch} after the first poll")
        assert counted >= len(failed_polls), (
            f"{len(failed_polls)} polls failed (batches {failed_polls}) but poll_errors_total counts {counted}")
        assert moves["start-up"] >= 1 and moves["mid-run"] >= 4, f"too few leader moves to test anything: {moves}"
    finally:
        if job.process.poll() is not None:
            job.start()
        cleanup(cluster, [busy])


PAUSE_S = 6.0  # a hung broker, short of the 9 s broker session timeout after which it would be fenced


def test_broker_paused_mid_run_never_stops_the_job(fault_cluster, fault_job):
    """A broker that hangs (SIGSTOP) for a few seconds is a transient error: polls and writes that need it
    wait or fail and are retried, counted in poll errors; the job keeps running and polls again."""
    cluster, job = fault_cluster, running(fault_job)
    paused = next(n for n in (3, 2, 1) if n != cluster.active_controller())  # not a controller failover
    log_from = len(job.log())
    errors_before = poll_errors(job)
    cluster.pause(paused)
    try:
        time.sleep(PAUSE_S)  # the fault's duration itself, not a wait for a condition
    finally:
        cluster.resume(paused)
    resumed_batch, resumed_at = last_batch(job.log()), time.time()
    try:
        # Polls go on: liveness advances four triggers past the resume (the controller's polls while nothing moves,
        # docs/architecture.md "The controller"; a batch's while a batch is needed).
        wait_for(lambda: (job.metric(LAST_POLL) or 0) >= resumed_at + 4 * TRIGGER_S or job.process.poll() is not None,
                 90, interval_s=0.5, message="liveness four triggers past the broker's resume")
        log = job.log()[log_from:]
        failed_polls = [b for b, ok, _ in batch_lines(log) if not ok]
        late = failures_after(log, resumed_batch + 1)
        counted = poll_errors(job) - errors_before
        figure("broker_paused", paused=paused, pause_s=PAUSE_S, failed_polls=len(failed_polls),
               poll_errors_counted=counted, failures_later_than_one_batch_after_resume=len(late),
               job_alive=job.process.poll() is None)
        assert job.process.poll() is None, (
            f"the job exited {job.process.poll()} after broker {paused} hung for {PAUSE_S:g}s:\n{log[-3000:]}")
        assert counted >= len(failed_polls), (
            f"{len(failed_polls)} polls failed (batches {failed_polls}) but poll_errors_total grew by {counted}")
        assert not late, f"polls/janitor failing later than one batch after the broker resumed: {late[:5]}"
    finally:
        if job.process.poll() is not None:
            job.start()
        cluster.ensure_whole()


UNREACHABLE_BOUND_S = 60  # every broker stopped: the job's look fails within its request deadline (--timeout)


def test_every_broker_paused_the_job_says_the_cluster_is_unreachable_then_polled_again(fault_cluster, fault_job):
    """kafka_reassignment_cluster_up: with every node SIGSTOPped nothing answers the controller's look, and /metrics
    says so - 0, reason unreachable (the error table's kind) - while the job keeps running; once the nodes resume,
    1, polled, again. The pause lasts until the job said it (bounded), not a fixed time."""
    cluster, job = fault_cluster, running(fault_job)
    nodes = (1, 2, 3)
    wait_for(lambda: job.metric(CLUSTER_UP, reason="polled") == 1.0, 30, interval_s=0.5, message="the cluster polled")
    for node in nodes:
        cluster.pause(node)
    paused_at = time.monotonic()
    try:
        wait_for(lambda: job.metric(CLUSTER_UP, reason="unreachable") == 0.0, UNREACHABLE_BOUND_S, interval_s=0.5,
                 message="/metrics to say the cluster is unreachable")
        said_s = time.monotonic() - paused_at
    finally:
        for node in nodes:
            cluster.resume(node)
    resumed_at = time.monotonic()
    try:
        wait_for(lambda: job.metric(CLUSTER_UP, reason="polled") == 1.0, 90, interval_s=0.5,
                 message="/metrics to say the cluster is polled again")
        figure("every_broker_paused", unreachable_said_after_s=said_s, polled_again_after_s=time.monotonic() - resumed_at,
               job_alive=job.process.poll() is None)
        assert [labels for (name, labels), _ in job.samples().items() if name == CLUSTER_UP] == [
            frozenset({("cluster", fault_cluster.bootstrap.split(",")[0]), ("reason", "polled")})]
        assert job.process.poll() is None, job.log()[-3000:]
    finally:
        if job.process.poll() is not None:
            job.start()
        cluster.ensure_whole()


def poll_errors(job):
    return sum(v for (name, _), v in job.samples().items() if name == "kafka_reassignment_monitor_poll_errors_total")
