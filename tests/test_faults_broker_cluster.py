"""Broker faults on the real cluster while the job runs and owns throttles: the first
run against a fresh cluster, a destination broker SIGKILLed mid-move, the active controller SIGKILLed
mid-move. All on the dedicated `fault_cluster` with the shared `fault_job` (at a 2 s trigger; the default
trigger is tests/test_faults_trigger_cluster.py); each test leaves the cluster whole (three nodes up, every
ISR full) whether it passes or not. Both kills also check that a poll never waits on a dead node."""

import time

import pytest

from tests.fault_support import (
    ADMIN_TIMEOUT_S, TRIGGER_S, BatchWatch, FencingProbe, atoms, check_no_wait_on_the_dead, cleanup, execute,
    failed_polls, figure, liveness_since, moving, owned_configs, polls_longer_than, prepare, removals, replica_states,
    seconds_until, wait_batches, wait_batches_or_idle)
from tests.job_process import failures_after, running
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

NODES = (1, 2, 3)
STATE = "kafka_reassignment_replica_state"
COPIED = "kafka_reassignment_replica_copied_bytes"
# The bound, "owned throttles removed within trigger + 5 s of completion", with "5 s" being one batch's
# work: the slowest batch seen before the kill when that was longer, so a loaded machine's slower batches do
# not read as a fault. The bounds are in tests.fault_support.check_no_wait_on_the_dead.
ONE_BATCH_FLOOR_S = 5.0


def one_batch_s(slowest_before_s):
    return max(ONE_BATCH_FLOOR_S, slowest_before_s)


def gone_bound_s(slowest_before_s, trigger_s=TRIGGER_S):
    return trigger_s + one_batch_s(slowest_before_s)


def test_first_run_on_a_fresh_cluster_starts(fault_job):
    # The fixture started the job first thing on a just-formatted cluster: no ownership topic, so the
    # job created it and read it before its partition had a leader (it used to exit 3 right there).
    first = fault_job.first_start
    figure("first_run_fresh_cluster", outcome=first["outcome"], seconds=first["seconds"])
    assert first["outcome"] == "first poll", (
        f"first run against a fresh cluster: {first['outcome']} after {first['seconds']:.0f}s instead of a first "
        f"poll; log tail:\n{first['log'][-2500:]}")


def bounce_mid_move(cluster, job, tmp_path, created, victim_of, megabytes, trigger_s=TRIGGER_S,
                    timeout_s=ADMIN_TIMEOUT_S, batches_after=3):
    """Start an owned, throttled move, SIGKILL the node `victim_of(source, destination, controller)` once
    bytes are being copied, restart it, and measure what the job did (running at `trigger_s` and `timeout_s`).
    Returns the figures and evidence."""
    controller = cluster.active_controller()
    others = [n for n in NODES if n != controller]
    source, destination = others
    victim = victim_of(source, destination, controller)
    topic = prepare(cluster, source, controller, megabytes)
    created.append(topic)
    labels = {"topic": topic, "partition": 0, "broker": destination}
    found = {"topic": topic, "victim": victim, "source": source, "destination": destination, "controller": controller}
    with BatchWatch(job) as watch:
        before = atoms(cluster, [topic])
        start_batch = watch.last()
        execute(cluster, tmp_path, [(topic, 0, [source, destination])])
        owned = atoms(cluster, [topic]) - before
        assert owned, "execute set no throttle: nothing for the janitor to own"
        wait_for(lambda: (job.metric(COPIED, **labels) or 0) > 1_000_000, 60, interval_s=0.2,
                 message="over 1 MB copied to the destination before the kill")
        polls_before, slow_before = polls_longer_than(job, timeout_s)
        probe = FencingProbe(cluster)
        kill_batch, killed, log_offset = watch.last(), time.monotonic(), len(job.log())
        cluster.kill(victim)
        probe.start()
        found["to_offline_s"] = (seconds_until(lambda: job.metric(STATE, state="BROKER_OFFLINE", **labels) == 1,
                                               3 * (trigger_s + timeout_s) + 10)
                                 if victim == destination else None)
        wait_batches(watch, 2)  # polls go on while the node is down
        down_until = time.monotonic()
        found["gauge_advanced_while_down"] = watch.gauge_advanced(killed, down_until)
        found["restart_s"] = cluster.restart()
        back_batch = watch.last()
        wait_for(lambda: not moving(cluster, topic), 120, interval_s=0.2, message="the move to complete")
        found["slowest_batch_before_s"] = watch.longest_gap(watch.started_at, killed)
        found["to_gone_s"] = seconds_until(lambda: not (atoms(cluster, [topic]) & owned),
                                           gone_bound_s(found["slowest_batch_before_s"], trigger_s) + 30)
        wait_batches_or_idle(watch, batches_after)  # batches after the removal: none may remove anything again
        log = job.log()
        polls_after, slow_after = polls_longer_than(job, timeout_s)
        found["polls_since_kill"] = polls_after - polls_before
        found["polls_waiting_out_timeout"] = slow_after - slow_before
        found["polls_failed_since_kill"] = failed_polls(log, kill_batch)  # one node down: two or more alive
        found["trigger_s"], found["timeout_s"], found["fencing_held_s"] = trigger_s, timeout_s, probe.result()
        found["failures_after_back"] = failures_after(log, back_batch + 1)
        found["failures_while_down"] = failures_after(log, kill_batch)
        found["longest_batch_gap_s"] = watch.longest_gap(killed)
        found.update(liveness_since(watch, killed, log_offset))
        found["states"] = replica_states(job, topic, 0, destination, after_batch=kill_batch)
        found["kill_batch"], found["back_batch"] = kill_batch, back_batch
        now = atoms(cluster, [topic])
        found["leaked"] = sorted(owned & now, key=str)
        found["foreign_touched"] = sorted((before - now) | (now - before - owned), key=str)
        found["removals"] = removals(job, [topic, source, destination, controller], start_batch)
        found["owned_configs"] = owned_configs(owned)
        found["job_alive"] = job.process.poll() is None
    return found


def check_recovery(found, test):
    """What both bounces must show after the node is back: removal once and in time, no failing poll."""
    failed_after = found["failures_after_back"]
    once = {c: found["removals"].get(c, []) for c in found["owned_configs"]}
    slowest, trigger_s = found["slowest_batch_before_s"], found["trigger_s"]
    figure(test, completion_to_gone_s=found["to_gone_s"], polls_failed_after_back=len(failed_after),
           throttles_leaked=len(found["leaked"]), foreign_touched=len(found["foreign_touched"]),
           longest_batch_gap_s=found["longest_batch_gap_s"], slowest_batch_before_s=slowest,
           restart_s=found["restart_s"])
    assert found["job_alive"], f"{test}: the job exited"
    assert not failed_after, (
        f"{test}: {len(failed_after)} polls/janitor runs failed later than one batch after the node was back "
        f"(back at batch {found['back_batch']}): {failed_after[:6]}")
    assert found["to_gone_s"] is not None and found["to_gone_s"] <= gone_bound_s(slowest, trigger_s), (
        f"{test}: owned throttles gone {found['to_gone_s']} s after completion (bound trigger + one batch = "
        f"{gone_bound_s(slowest, trigger_s):.1f} s; None: not within 30 s more); leaked: {found['leaked']}")
    assert not found["leaked"], f"{test}: {len(found['leaked'])} owned throttles leaked: {found['leaked']}"
    assert not found["foreign_touched"], (
        f"{test}: {len(found['foreign_touched'])} foreign throttles touched: {found['foreign_touched']}")
    assert all(len(batches) == 1 for batches in once.values()), (
        f"{test}: removals per owned config (batch ids) should be exactly one each: {once}")


def test_destination_broker_killed_mid_move(fault_cluster, fault_job, tmp_path):
    created = []
    try:
        found = bounce_mid_move(fault_cluster, running(fault_job), tmp_path, created,
                                lambda source, destination, controller: destination, megabytes=12)
        states = found["states"]
        offline = [b for b, s, _ in states if s == "BROKER_OFFLINE"]
        batches_to_offline = offline[0] - found["kill_batch"] if offline else None
        on_the_way = [s for b, s, _ in states if not offline or b < offline[0]]
        figure("destination_broker_killed", to_broker_offline_s=found["to_offline_s"],
               batches_to_broker_offline=batches_to_offline, states_on_the_way=on_the_way)
        assert found["to_offline_s"] is not None and batches_to_offline is not None and batches_to_offline <= 3, (
            f"BROKER_OFFLINE {found['to_offline_s']} s / {batches_to_offline} batches after the SIGKILL of the "
            f"destination (bound 3 batches); replica states after the kill: {[(b, s) for b, s, _ in states][:12]}")
        assert "PENDING" not in on_the_way, f"PENDING shown on the way to BROKER_OFFLINE: {on_the_way}"
        assert found["gauge_advanced_while_down"], "the last-poll time did not advance while the destination was down"
        check_no_wait_on_the_dead(found, "destination_broker_killed")
        check_recovery(found, "destination_broker_killed")
    finally:
        cleanup(fault_cluster, created)


def test_active_controller_killed_mid_move(fault_cluster, fault_job, tmp_path):
    created = []
    try:
        # The move runs between the two other nodes, so it goes on while a new controller is elected.
        found = bounce_mid_move(fault_cluster, running(fault_job), tmp_path, created,
                                lambda source, destination, controller: controller, megabytes=15)
        figure("active_controller_killed", controller=found["controller"],
               gauge_advanced_while_down=found["gauge_advanced_while_down"],
               failures_while_down=len(found["failures_while_down"]))
        check_no_wait_on_the_dead(found, "active_controller_killed")
        check_recovery(found, "active_controller_killed")
    finally:
        cleanup(fault_cluster, created)

