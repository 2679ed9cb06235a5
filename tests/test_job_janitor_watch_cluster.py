"""The driver's watch inside the shared `owned_job` (conftest; trigger 2 s), end to end on the real cluster:
no Spark batch runs while nothing moves and liveness still advances; a move started while idle is reported
by the next batch, even when it ended before that batch polled; its owned throttles are removed by the watch at completion and its COMPLETED transition
is still reported; a removal that came due while the job was down is done before this run's first batch.
Named to sort right after test_job_janitor_cluster: the owned_job's tests run one after the other."""

import time

import pytest

from streaming.control.batch_rules import unreported
from streaming.control.controller import BATCHES_LINE
from tests.job_process import BATCHES, LAST_POLL, OWNED_JOB_TRIGGER_S, idle, read_topic, running, watch_decision
from tests.kafka_fixtures import wait_for
from tests.test_job_janitor_cluster import (FOREIGN_RATE, cleanup, configs, entries, execute, moving, setup_topic,
                                            throttle_records)

pytestmark = pytest.mark.cluster

IDLE_WINDOW_S = 4 * OWNED_JOB_TRIGGER_S  # several triggers: any one of them would have run a batch before the watch


@pytest.fixture
def job(owned_job):
    return running(owned_job)


def wait_idle(job, timeout_s=90):
    wait_for(lambda: idle(job.log()), timeout_s, interval_s=0.5, message="the watch to say idle")


def batch_ids(job, key, state=None):
    return sorted(value["batch_id"] for k, value in read_topic(job.bootstrap, job.progress_topic)
                  if k == key and (state is None or value["state"] == state))


def test_idle_job_runs_no_batch_and_liveness_advances(cluster, job):
    wait_idle(job)
    # A batch Spark planned before the gate closed may still be running: count from three triggers of liveness on.
    settled = job.metric(LAST_POLL)
    wait_for(lambda: (job.metric(LAST_POLL) or 0) >= settled + 3 * OWNED_JOB_TRIGGER_S, 60, interval_s=0.5,
             message="liveness to advance three triggers after the watch said idle")
    batches, polled = job.metric(BATCHES), job.metric(LAST_POLL)
    wait_for(lambda: (job.metric(LAST_POLL) or 0) >= polled + IDLE_WINDOW_S, IDLE_WINDOW_S + 30, interval_s=0.5,
             message=f"liveness to advance {IDLE_WINDOW_S:g} s while idle")
    assert job.metric(BATCHES) == batches, "a Spark batch ran while nothing moved"
    assert idle(job.log())


def test_move_started_while_idle_is_reported_removed_by_the_watch_and_completed(cluster, job, tmp_path):
    topic = cluster.unique_topic("watch")
    # Long enough (at 1 MB/s) that the first batch after an idle stretch - Spark starts its Python workers
    # again - still finds it moving on a loaded machine.
    setup_topic(cluster, topic, megabytes=12)
    try:
        wait_idle(job)
        before = max((value["batch_id"] for _, value in read_topic(job.bootstrap, job.progress_topic)
                      if value["kind"] != "throttle"), default=-1)  # the controller's records carry the next id
        started = time.monotonic()
        execute(cluster, tmp_path, topic, 0, [1, 2], 1_000_000)
        key = f"{topic}:0:2"
        reported = wait_for(lambda: batch_ids(job, key), 60, interval_s=0.2, message="the move to be reported")
        reported_s = time.monotonic() - started
        # Within one trigger, counted in batches (a loaded machine stretches every batch): the first batch
        # after the move started reports it.
        assert min(reported) == before + 1, (before, reported)

        wait_for(lambda: not moving(cluster, topic), 90, interval_s=0.1, message="the move to complete")
        completed_at = time.monotonic()
        wait_for(lambda: configs(cluster, topic, (1, 2))["2.follower"] == FOREIGN_RATE, 30, interval_s=0.1,
                 message="the foreign rate restored")
        gone_s = time.monotonic() - completed_at
        after = configs(cluster, topic, (1, 2))
        assert entries(after["leader"]) == ["1:2"] and not after["follower"]  # the foreign entry stays
        assert f"left the reassignment list ({topic}-0): running the throttle janitor" in job.log()

        completed = wait_for(lambda: batch_ids(job, key, "COMPLETED"), 30, interval_s=0.5,
                             message="the COMPLETED transition")
        removals = wait_for(lambda: throttle_records(job, topic), 20, message="throttle records")
        assert {a["throttle"]["action"] for a in removals} == {"removed"}
        assert max(a["batch_id"] for a in removals) <= min(completed), (removals, completed)
        wait_idle(job, 30)
        print(f"\nWATCH FIGURES reported_after_execute_s={reported_s:.1f} completion_to_gone_s={gone_s:.1f}")
    finally:
        cleanup(cluster, topic)


@pytest.mark.parametrize("megabytes", [10, 0.05], ids=["seen-moving", "came-and-went"])
def test_a_move_over_before_the_next_batch_polled_is_still_reported_completed(cluster, job, tmp_path, megabytes):
    """The idle job's next batch may poll after a short move ended (it starts Spark's Python workers again):
    here Spark is SIGSTOPped for the whole move, so no batch can see it moving. The watch hands it over; the
    batch after Spark continues reports its COMPLETED, and the watch removed its throttles meanwhile.
    10 MB at 1 MB/s last long enough for the watch, once a second, to see the move listed (an idle broker's
    quota lets the first few MB through at once); 50 KB come and go between two of its looks, and only the
    request's ownership record tells the watch the move ran."""
    topic = cluster.unique_topic("watch-short")
    setup_topic(cluster, topic, megabytes=megabytes)
    try:
        wait_idle(job)
        key = f"{topic}:0:2"
        with job.spark_stopped():
            execute(cluster, tmp_path, topic, 0, [1, 2], 1_000_000)
            wait_for(lambda: not moving(cluster, topic), 60, interval_s=0.2, message="the move to complete")
            wait_for(lambda: watch_decision(job.log()) == f"{BATCHES_LINE}{unreported.__name__}", 20,
                     interval_s=0.2, message="the watch to hand the finished move over")
            wait_for(lambda: configs(cluster, topic, (1, 2))["2.follower"] == FOREIGN_RATE, 20, interval_s=0.2,
                     message="the owned throttles removed by the watch while Spark is stopped")
        completed = wait_for(lambda: batch_ids(job, key, "COMPLETED"), 60, interval_s=0.5,
                             message="the COMPLETED transition of a move no batch saw moving")
        assert batch_ids(job, key) == completed  # reported once, finished
        wait_idle(job, 30)
    finally:
        cleanup(cluster, topic)


def test_removal_due_while_the_job_was_down_is_done_before_the_first_batch(cluster, job, tmp_path):
    topic = cluster.unique_topic("watch-restart")
    setup_topic(cluster, topic, megabytes=6)
    try:
        execute(cluster, tmp_path, topic, 0, [1, 2], 1_000_000)
        job.kill()
        wait_for(lambda: not moving(cluster, topic), 90, message="the move to complete while the job is down")
        log_from = len(job.log())
        started = time.monotonic()
        job.start()
        wait_for(lambda: configs(cluster, topic, (1, 2))["2.follower"] == FOREIGN_RATE, 60, interval_s=0.2,
                 message="the removal after the restart")
        gone_s = time.monotonic() - started
        batches = job.metric(BATCHES)  # read after the removal was seen: still no batch in this run
        assert batches == 0, f"the removal waited for Spark ({batches} batches first)"
        assert "removals that came due while the job was down" in job.log()[log_from:]
        assert entries(configs(cluster, topic, (1, 2))["leader"]) == ["1:2"]
        removed = wait_for(lambda: [a for a in throttle_records(job, topic) if a["throttle"]["action"] == "removed"],
                           20, message="throttle records")
        assert {a["batch_id"] for a in removed} == {-1}  # the controller's, before this run's first batch
        print(f"\nWATCH FIGURES restart_to_removed_s={gone_s:.1f}")
    finally:
        cleanup(cluster, topic)


def throttles_gone(cluster, topic):
    return not any(configs(cluster, topic, (1, 2)).values())  # a topic's unset entries read as ""


def test_the_controller_keeps_its_pace_while_spark_starts(cluster, job, tmp_path):
    """As a new user tries it: three 6 MB moves at 2 MB/s one after another right after `run` started. The controller
    sweeps each the tick after it ended, seen leaving the list or found to have come and went between two looks, while
    Spark still starts (a tick that waited for a whole poll of the cluster missed such a move, whose throttles then
    stayed until the idle read of the ownership topic: 5.6 s after completion). The seconds from completion to removal
    are printed (bench figures, not asserted)."""
    topic = cluster.unique_topic("pace")
    cluster.create_topic(topic, {0: [1], 1: [1], 2: [1]}, megabytes=0)
    cluster.produce(topic, [0, 1, 2], 6)
    try:
        job.kill()
        logged_before = len(job.log())
        started = time.monotonic()
        job.start()
        # From the controller's first look on (on a loaded machine it came after a first 3 s move had ended: that
        # move was then swept as an ownership record active at start, not seen coming and going).
        wait_for(lambda: job.metric(LAST_POLL), 120, message="the controller's first published poll")
        removals = []
        for partition in range(3):
            execute(cluster, tmp_path, topic, partition, [1, 2], 2_000_000)
            completed = wait_for(lambda: not moving(cluster, topic) and time.monotonic(), 90, interval_s=0.05,
                                 message=f"move {partition} to complete")
            removed = wait_for(lambda: throttles_gone(cluster, topic) and time.monotonic(), 60, interval_s=0.05,
                               message=f"the throttles of move {partition} removed")
            removals.append((completed - started, removed - completed))
        batches = job.metric(BATCHES) or 0
        logged = job.log()[logged_before:]
        print("\nFIGURES pace_while_spark_starts " + " ".join(
            f"move{i}_completed_at_s={at:.1f} removed_after_s={after:.2f}" for i, (at, after) in enumerate(removals))
            + f" batches_by_then={batches:g}")
        for partition in range(3):
            assert f"({topic}-{partition}): running the throttle janitor" in logged, logged[-3000:]
    finally:
        cleanup(cluster, topic)
