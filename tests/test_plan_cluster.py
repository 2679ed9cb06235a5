"""Plans against the real three-node cluster: `execute --wait`, then the job, under limits, SIGKILLed mid-plan
and restarted; pause and resume, cancel. A watcher thread polls the cluster itself (never the executor's output) and
records every poll at which a limit was exceeded."""

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter

import pytest

from streaming.control.applier import applier_of
from streaming.control.plans.step import advance_once
from streaming.control.ownership.store import KafkaLedger, find_plan
from streaming.cluster.admin import KafkaClusterAdmin
from streaming.commands.reassign_common import strict_poll
from streaming.vocabulary.config_keys import TOPIC_THROTTLE_KEYS
from tests.cluster_cli import (MB, cli, expect_throttles, ownership_topic, reassigning, replicas, throttles,
                               write_plan)
from tests.job_process import CLI, ROOT, free_port, read_topic
from tests.kafka_fixtures import wait_for
from streaming.vocabulary.states import OwnershipState, PlanState

pytestmark = pytest.mark.cluster

POLL_S = 0.25
# The plan test uses 300 partitions at 20 in flight, 8 moves per broker.
PLAN_PARTITIONS = int(os.environ.get("TEST_PLAN_PARTITIONS", "300"))
PHASE_S = 240  # one executor's stretch, a lease's run-out and a Spark start included


class Watcher(threading.Thread):
    """Polls reassignments, replicas and the topic's throttled-replicas lists until stopped; keeps every
    violation of the limits and the peaks seen. The lists' invariant
    (docs/plans.md "What the throttled-replicas lists hold"): at most max_in_flight partitions named, and a
    partition not reassigning keeps its entries only until the second wave submission seen after that (its
    advancer's next step sweeps before it submits). A submission is a poll that lists a partition it did not list
    before; two steps between two polls count once (lenient)."""

    def __init__(self, cluster, topic, targets, max_in_flight, max_per_broker):
        super().__init__(daemon=True)
        self.cluster, self.topic, self.targets = cluster, topic, targets
        self.max_in_flight, self.max_per_broker = max_in_flight, max_per_broker
        self.violations, self.polls, self.done = [], 0, 0
        self.peak_in_flight = self.peak_per_broker = self.peak_throttled = 0
        self.errors = []
        self.submissions, self.idle_since, self._listed = 0, {}, set()
        self._stop_event = threading.Event()

    def run(self):
        from kafka.admin import ConfigResource, ConfigResourceType

        admin = self.cluster.admin()
        try:
            while not self._stop_event.is_set():
                try:
                    ongoing = admin.list_partition_reassignments()
                    per_broker = Counter(b for r in ongoing.values() for b in set(r["replicas"]) | set(r["adding_replicas"]))
                    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic)])
                    values = [configs.get("topic", {}).get(self.topic, {}).get(key, {}).get("value") or ""
                              for key in TOPIC_THROTTLE_KEYS.values()]
                    throttled = {int(entry.split(":")[0]) for value in values for entry in value.split(",") if entry}
                    [described] = admin.describe_topics([self.topic])
                except Exception as error:  # a poll that failed shows nothing; the next one will
                    self.errors.append(repr(error))
                    continue
                self.polls += 1
                listed = {tp.partition for tp in ongoing if tp.topic == self.topic}
                self.submissions += bool(listed - self._listed)
                self._listed = listed
                for p in throttled - listed:
                    self.idle_since.setdefault(p, self.submissions)
                for p in set(self.idle_since) - (throttled - listed):
                    del self.idle_since[p]
                overdue = sorted(p for p, since in self.idle_since.items() if self.submissions - since >= 2)
                self.done = sum(1 for p in described["partitions"]
                                if p["replica_nodes"] == self.targets[p["partition_index"]]
                                and (self.topic, p["partition_index"]) not in {(tp.topic, tp.partition) for tp in ongoing})
                busiest = max(per_broker.values(), default=0)
                self.peak_in_flight = max(self.peak_in_flight, len(ongoing))
                self.peak_per_broker = max(self.peak_per_broker, busiest)
                self.peak_throttled = max(self.peak_throttled, len(throttled))
                if (len(ongoing) > self.max_in_flight or busiest > self.max_per_broker
                        or len(throttled) > self.max_in_flight or overdue):
                    self.violations.append((round(time.monotonic(), 1), len(ongoing), dict(per_broker),
                                            sorted(throttled), overdue))
                self._stop_event.wait(POLL_S)
        finally:
            admin.close()

    def stop(self):
        self._stop_event.set()
        self.join(30)


def spread_plan(cluster, tmp_path, prefix, partitions, megabytes):
    """A topic whose partition i lives on broker i%3+1 and moves to broker (i+1)%3+1, with data."""
    assignment = {p: [p % 3 + 1] for p in range(partitions)}
    targets = {p: [(p + 1) % 3 + 1] for p in range(partitions)}
    topic = cluster.create_topic(cluster.unique_topic(prefix), assignment, megabytes=megabytes)
    return topic, targets, write_plan(tmp_path / "plan.json", [(topic, p, targets[p]) for p in range(partitions)])


def waves_of(bootstrap, own, request_id):
    admin = KafkaClusterAdmin(bootstrap)
    try:
        return [r for r in KafkaLedger(admin, own).records() if r.plan_id == request_id]
    finally:
        admin.close()


def run_until(argv, log, watcher, done_at):
    """Run the CLI as a process writing to `log` until the watcher sees `done_at` partitions done; returns
    the process (still running: the caller kills it)."""
    with open(log, "a") as out:
        process = subprocess.Popen([CLI, *map(str, argv)], stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, cwd=ROOT, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    try:
        wait_for(lambda: watcher.done >= done_at or process.poll() is not None, PHASE_S, message=f"{done_at} partitions done")
        assert process.poll() is None, f"it ended before it was killed: {log.read_text()[-2000:]}"
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    return process


def sigkill(process):
    """The whole process group: the job's Python driver and its Spark JVM."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def plan_state(bootstrap, own, request_id):
    admin = KafkaClusterAdmin(bootstrap)
    try:
        return find_plan(KafkaLedger(admin, own), request_id).state
    finally:
        admin.close()


def test_the_job_carries_a_plan_under_limits_through_sigkills_of_its_executors(cluster, clean, tmp_path):
    """`execute --wait` starts the plan and is SIGKILLed; the job (`run`) takes it over once the killed one's
    lease ran out, and is SIGKILLed three times at different points and restarted; the last run finishes
    the plan. The watcher checks the limits and the throttled-replicas invariant at every poll throughout."""
    partitions, in_flight, per_broker = PLAN_PARTITIONS, 20, 8
    topic, targets, plan = spread_plan(cluster, tmp_path, "plan", partitions, megabytes=0.02)
    own, progress = ownership_topic(), f"progress-{uuid.uuid4().hex[:8]}"
    clean += [topic, own, progress]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    job_flags = ["run", *common, "--checkpoint-location", tmp_path / "checkpoint", "--master", "local[1]",
                 "--trigger-interval", "5s", "--quiet", "--metrics-address", "127.0.0.1", "--progress-topic", progress]
    started = time.monotonic()
    watcher = Watcher(cluster, topic, targets, in_flight, per_broker)
    watcher.start()
    log = tmp_path / "executors.log"
    try:
        sigkill(run_until(["execute", *common, "--reassignment-json-file", plan, "--throttle", MB // 5,
                           "--max-partitions-in-flight", in_flight, "--max-moves-per-broker", per_broker, "--wait"],
                          log, watcher, partitions // 8))
        text = log.read_text()
        request_id = next(line.split()[-1] for line in text.splitlines() if line.startswith("Request id: "))
        rollback = json.loads(text.split("Current partition replica assignment\n\n", 1)[1].split("\n\n", 1)[0])
        assert sorted((p["partition"], p["replicas"]) for p in rollback["partitions"]) == \
            [(p, [p % 3 + 1]) for p in range(partitions)]
        for done_at in (partitions // 4, partitions // 2, partitions * 3 // 4):  # the job killed at three points
            sigkill(run_until([*job_flags, "--metrics-port", free_port()], log, watcher, done_at))
        assert 0 < watcher.done < partitions, "killed mid-plan"
        last = run_until([*job_flags, "--metrics-port", free_port()], log, watcher, 0)
        try:
            wait_for(lambda: plan_state(cluster.bootstrap, own, request_id) == PlanState.DONE, PHASE_S, interval_s=1,
                     message="the plan done")
            plan_done = time.monotonic() - started

            def last_record():  # a finished plan is kept until a batch wrote its last record (Spark may still start)
                found = [v for k, v in read_topic(cluster.bootstrap, progress) if k == f"plan:{request_id}"]
                return found and found[-1]["state"] == PlanState.DONE and found[-1]

            record = wait_for(last_record, PHASE_S, interval_s=2, message="the plan's last record")
        finally:
            last.send_signal(signal.SIGTERM)
            last.wait(60)
    finally:
        watcher.stop()
    elapsed = time.monotonic() - started
    text = log.read_text()
    assert [replicas(cluster, topic, p) for p in range(partitions)] == [targets[p] for p in range(partitions)]
    assert watcher.polls > 20, (watcher.polls, watcher.errors[:3])
    assert watcher.violations == [], f"{watcher.violations[:3]}\n{text[-3000:]}"
    assert watcher.peak_per_broker == per_broker  # the limit that binds here (3 brokers: at most 12 moves)
    expect_throttles(cluster, [topic], {})  # every entry and broker rate the plan set is gone
    waves = waves_of(cluster.bootstrap, own, request_id)
    submitted = Counter((m.topic, m.partition) for w in waves for m in w.moves)
    assert set(submitted) == {(topic, p) for p in range(partitions)} and max(submitted.values()) == 1
    assert not [w for w in waves if w.state == OwnershipState.PENDING]
    assert "advanced by job " in text  # the job stepped it (the controller's line), not only the foreground
    assert record["partitions"] == {"pending": 0, "in_flight": 0, "done": partitions, "cancelled": 0, "left_alone": 0,
                                   "failed": 0}
    assert (record["bytes_remaining"], record["eta_seconds"], record["message"]) == (0, 0.0, None)
    assert record["advanced_by"].startswith("job ") and record["limits"]["max_moves_per_broker"] == per_broker
    print(f"plan of {partitions} ({in_flight}/{per_broker}): done {plan_done:.0f} s after execute with 4 kills, "
          f"{elapsed:.0f} s with its last record, {len(waves)} waves, "
          f"peaks: in flight {watcher.peak_in_flight}, per broker {watcher.peak_per_broker}, "
          f"throttled partitions {watcher.peak_throttled}, {watcher.polls} polls")


def test_pause_holds_free_slots_resume_submits_and_cancel_reverts_and_drops(cluster, clean, tmp_path):
    """Partitions 0 and 1 copy 3 MB each at a 100 kB/s throttle, long enough to be caught moving (one fetch
    carries up to 1 MB whatever the rate: docs/progress.md "Kafka's replication throttle"); the others are tiny.
    Three in flight at most."""
    partitions = 8
    topic, targets, plan = spread_plan(cluster, tmp_path, "pause", partitions, megabytes=0.02)
    cluster.produce(topic, [0, 1], megabytes=3)
    own = ownership_topic()
    clean += [topic, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    code, out, err = cli("execute", *common, "--reassignment-json-file", plan, "--throttle", MB // 10,
                         "--max-partitions-in-flight", 3, "--output", "json")
    assert code == 0, err
    request_id = json.loads(out.splitlines()[0])["request_id"]
    assert json.loads(out.splitlines()[1])["submitted"] == [f"{topic}-0", f"{topic}-1", f"{topic}-2"]

    code, out, err = cli("pause", *common, "--request-id", request_id)
    assert code == 0 and "paused" in out, err
    assert {(topic, 0), (topic, 1)} <= reassigning(cluster)  # what moves keeps moving

    admin = KafkaClusterAdmin(cluster.bootstrap)
    try:
        writer = applier_of(admin, KafkaLedger(admin, own))

        def paused_step():  # what the job's controller calls; paused, it submits nothing into the free slot
            step = advance_once(admin, lambda topics: strict_poll(admin, topics), writer, request_id,
                                time.time() * 1000, 10)
            assert step.plan.state == "paused" and step.submitted == ()
            return step.counts.get("done") == 1 and step

        step = wait_for(paused_step, 60, message="partition 2 done while paused")
        assert step.counts == {"done": 1, "in_flight": 2, "pending": 5}
    finally:
        admin.close()
    code, out, err = cli("progress", *common, "--request-id", request_id, "--output", "json")
    report = json.loads(out)
    assert code == 1 and report["state"] == "paused", err  # exit 1: not finished
    assert report["partitions"] == {"pending": 5, "in_flight": 2, "done": 1, "cancelled": 0, "left_alone": 0, "failed": 0}
    assert report["bytes_total"] >= 8 * 20_000 and report["advanced_by"] is None  # the step above released nothing
    code, out, err = cli("progress", *common)
    assert code == 1 and f"Plan {request_id} paused: pending 5, in flight 2, done 1;" in out, err
    leader, follower = (throttles(cluster, [topic]).get((topic, kind), frozenset()) for kind in ("leader", "follower"))
    assert {e.split(":")[0] for e in leader | follower} == {"0", "1"}  # partition 2's entries went with it

    code, out, err = cli("resume", *common, "--request-id", request_id, "--output", "json")
    assert code == 0, err
    assert json.loads(out)["submitted"] == [f"{topic}-3"]

    code, out, err = cli("cancel", *common, "--request-id", request_id)
    assert code == 0, err
    assert f"Plan {request_id} cancelled" in out and f"cancelled {topic}-0,{topic}-1" in out
    assert not reassigning(cluster)
    moved = {2} | ({3} if replicas(cluster, topic, 3) == targets[3] else set())  # 3 is tiny: it may have finished
    assert [replicas(cluster, topic, p) for p in range(partitions)] == \
        [targets[p] if p in moved else [p % 3 + 1] for p in range(partitions)]
    expect_throttles(cluster, [topic], {})
    submitted = sorted(m.partition for w in waves_of(cluster.bootstrap, own, request_id) for m in w.moves)
    assert submitted == [0, 1, 2, 3]  # 4 to 7 never submitted
    code, _, err = cli("resume", *common, "--request-id", request_id)
    assert code == 2 and "cancelled" in err


def test_a_deleted_topics_partitions_fail_and_the_plan_ends_without_them(cluster, clean, tmp_path):
    """A plan of a slow partition (3 MB at a 100 kB/s throttle) then a small second topic's two, one in flight:
    the second topic is deleted while the first partition moves, before its partitions are submitted. The plan
    goes on and ends: the first done, the deleted ones failed (docs/plans.md "Partition states"), exit 3, no
    throttle left."""
    slow = cluster.create_topic(cluster.unique_topic("fail-slow"), {0: [1]}, megabytes=3)
    doomed = cluster.create_topic(cluster.unique_topic("fail-doomed"), {0: [2], 1: [2]}, megabytes=0.02)
    own = ownership_topic()
    clean += [slow, doomed, own]
    plan = write_plan(tmp_path / "plan.json", [(slow, 0, [2]), (doomed, 0, [3]), (doomed, 1, [3])])
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    log = tmp_path / "execute.log"
    with open(log, "w") as out:
        process = subprocess.Popen([CLI, "execute", *common, "--reassignment-json-file", str(plan), "--throttle",
                                    str(MB // 10), "--max-partitions-in-flight", "1", "--wait"],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
    try:
        wait_for(lambda: (slow, 0) in reassigning(cluster), 60, message="the slow partition moving")
        cluster.delete_topics([doomed])
        admin = cluster.admin()
        try:
            wait_for(lambda: doomed not in admin.list_topics(), 30, message="the second topic deleted")
        finally:
            admin.close()
        assert (slow, 0) in reassigning(cluster), "the slow partition finished before the deletion: nothing tested"
        code = process.wait(120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    output = log.read_text()
    assert code == 3, output
    assert "ended with partitions not moved: 2 failed" in output, output
    assert f"failed {doomed}-0: no longer exists" in output and f"failed {doomed}-1: no longer exists" in output
    assert replicas(cluster, slow, 0) == [2]
    expect_throttles(cluster, [slow], {})
    assert plan_state(cluster.bootstrap, own, request_id := output.split("Request id: ")[1].split()[0]) == PlanState.DONE
    assert all(m.topic == slow for w in waves_of(cluster.bootstrap, own, request_id) for m in w.moves)
    code, out, err = cli("progress", *common, "--request-id", request_id, "--output", "json")
    report = json.loads(out)
    assert code == 0 and report["state"] == "done", err
    assert report["partitions"] == {"pending": 0, "in_flight": 0, "done": 1, "cancelled": 0, "left_alone": 0, "failed": 2}


def test_progress_watch_follows_a_plan_until_it_ends(cluster, clean, tmp_path):
    """`progress --request-id ID --watch` while `execute --wait` carries a small plan (one in flight, partition
    0 holding 1 MB at a 200 kB/s throttle): one JSON document per redraw, the plan's partitions in each, ending
    by itself once the plan is done, exit 0; the table form of a done plan shows its line and ends at once."""
    topic, targets, plan = spread_plan(cluster, tmp_path, "watch", 3, megabytes=0.02)
    cluster.produce(topic, [0], megabytes=1)
    own = ownership_topic()
    clean += [topic, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    executor = subprocess.Popen([CLI, "execute", *common, "--reassignment-json-file", str(plan), "--throttle",
                                 str(MB // 5), "--max-partitions-in-flight", "1", "--wait", "--output", "json"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                cwd=ROOT)
    try:
        request_id = json.loads(executor.stdout.readline())["request_id"]
        watch = subprocess.run([CLI, "progress", *common, "--request-id", request_id, "--watch", "0.5", "--output",
                                "json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert executor.wait(60) == 0
    finally:
        if executor.poll() is None:
            os.killpg(executor.pid, signal.SIGKILL)
    assert watch.returncode == 0, watch.stderr
    rows = [json.loads(line) for line in watch.stdout.splitlines()]
    assert all(row["request_id"] == request_id and row["partitions_total"] == 3 for row in rows)
    assert rows[0]["state"] == "running" and rows[0]["partitions"]["done"] < 3
    assert rows[-1]["state"] == "done" and rows[-1]["partitions"]["done"] == 3
    assert [row["state"] for row in rows].count("done") == 1  # it ends at the first redraw that sees the plan done
    table = subprocess.run([CLI, "progress", *common, "--request-id", request_id, "--watch", "0.5"],
                           capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert table.returncode == 0 and f"Plan {request_id} done: done 3;" in table.stdout, table.stdout + table.stderr
