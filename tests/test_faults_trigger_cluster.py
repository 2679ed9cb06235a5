"""At the default trigger and --timeout (10 s each): the active controller, then the destination of a
move in flight, SIGKILLed in turn and restarted; no poll failed while two brokers were alive, none waited out
its --timeout on the dead node, and no gap between two published polls (the last-poll gauge) nor between two polls
of the controller was longer than two triggers plus 1 s.
(At the 2 s trigger the same is checked by tests/test_faults_broker_cluster.py.)

The job is the session's `fault_default_job` (the default trigger and --timeout, --throttle-cleanup off), which
tests/test_faults_stop_cluster.py, sorted just before this file, started beside `fault_job`: `fault_job` is stopped
after that file, so this test runs with the default-trigger job alone, as it did when it restarted `fault_job` with
the defaults (a Spark start saved). Nothing here is asserted of throttle removals."""

import time

import pytest

from streaming.vocabulary.defaults import TIMEOUT_S, TRIGGER_INTERVAL_S
from tests.fault_support import (
    BatchWatch, FencingProbe, batches_done, check_no_wait_on_the_dead, cleanup, execute, failed_polls, figure,
    liveness_since, moving, polls_longer_than, prepare, wait_batches)
from tests.job_process import FIRST_POLL_S
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

# Slow enough that 15 MB stay in flight through both kills (about 100 s), above the ~95 KB/s a throttle
# cannot go under (docs/progress.md "Kafka's replication throttle": one fetch per quota window).
SLOW_RATE = 150_000
MEGABYTES = 15
COPIED = "kafka_reassignment_replica_copied_bytes"
BATCH_WAIT_S = 4 * (TRIGGER_INTERVAL_S + TIMEOUT_S)  # generous: a loaded machine's batches are slower


def kill_and_restart(cluster, job, watch, victim, slowest_before_s=None):
    """SIGKILL `victim`, let two batches run without it (they span Kafka's fencing of it, 9 s by default),
    take the figures check_no_wait_on_the_dead reads, then start the node again. `slowest_before_s`: the
    undisturbed cadence of batches (default: measured from the controller's start to this kill)."""
    polls_before, slow_before = polls_longer_than(job, TIMEOUT_S)
    probe = FencingProbe(cluster)
    kill_batch, killed, log_offset = watch.last(), time.monotonic(), len(job.log())
    cluster.kill(victim)
    probe.start()
    wait_batches(watch, 2, BATCH_WAIT_S)
    polls_after, slow_after = polls_longer_than(job, TIMEOUT_S)
    found = {"victim": victim, "trigger_s": TRIGGER_INTERVAL_S, "timeout_s": TIMEOUT_S,
             "longest_batch_gap_s": watch.longest_gap(killed), "polls_since_kill": polls_after - polls_before,
             "slowest_batch_before_s": (watch.longest_gap(watch.started_at, killed) if slowest_before_s is None
                                        else slowest_before_s),
             "polls_waiting_out_timeout": slow_after - slow_before,
             "polls_failed_since_kill": failed_polls(job.log(), kill_batch), "fencing_held_s": probe.result(),
             **liveness_since(watch, killed, log_offset)}
    found["restart_s"] = cluster.restart()
    return found


def test_default_trigger_controller_then_destination_killed_mid_move(fault_cluster, fault_default_job, tmp_path):
    cluster, job, created = fault_cluster, fault_default_job.ensure_started(), []
    try:
        controller = cluster.active_controller()
        source, destination = [n for n in (1, 2, 3) if n != controller]
        topic = prepare(cluster, source, controller, MEGABYTES)
        created.append(topic)
        wait_for(lambda: batches_done(job), FIRST_POLL_S, message="the default-trigger job's first batch")
        with BatchWatch(job) as watch:
            execute(cluster, tmp_path, [(topic, 0, [source, destination])], SLOW_RATE)
            wait_for(lambda: (job.metric(COPIED, topic=topic, partition=0, broker=destination) or 0) > 0,
                     BATCH_WAIT_S, interval_s=0.5, message="bytes copied to the destination before the first kill")
            by_controller = kill_and_restart(cluster, job, watch, controller)
            still_moving = moving(cluster, topic)
            by_destination = kill_and_restart(cluster, job, watch, destination, by_controller["slowest_batch_before_s"])
        figure("default_trigger_kills", controller=controller, destination=destination,
               moving_at_second_kill=still_moving, restart_s=[by_controller["restart_s"], by_destination["restart_s"]])
        assert job.process.poll() is None, f"the job exited: {job.log()[-3000:]}"
        assert still_moving, "the move finished before the destination's kill: nothing was killed mid-move"
        check_no_wait_on_the_dead(by_controller, "default_trigger_active_controller_killed")
        check_no_wait_on_the_dead(by_destination, "default_trigger_destination_killed")
    finally:
        cleanup(cluster, created)
