"""Every command and the job against every Kafka version docs/compatibility.md "Versions and what degrades" lists, on
real clusters started from Maven Central's jars (tests/compat_support.py: one line per version). On each version, one
cluster and one job (conftest `compat`), and small moves that a low throttle keeps in flight until the checks
have seen them mid-move:
- `execute --throttle` sets the KIP-179 throttles (read back from the cluster), `progress` (table and JSON) and the
  job's /metrics show the replica's numerator and denominator mid-move, `verify` says in progress; the throttle is
  then raised (`execute --additional`, as an operator would) so the move ends, the job removes what execute set
  (the time from completion to the last throttle gone is printed: COMPAT FIGURES) and `verify` finds it complete;
- `cancel` reverts a move in flight and takes its throttles;
- a plan (`execute --max-partitions-in-flight 1 --wait`) where the version's line asks for one.
Printed per version: the seconds its tests took and how long they waited for its lane to be ready."""

import json
import threading
import time

import pytest

from tests import eta_scenario as eta
from tests.cluster_cli import cli, expect_throttles, replicas, write_plan
from tests.compat_support import TRIGGER_S
from tests.job_process import read_topic
from tests.kafka_fixtures import wait_for
from tests.test_disk_cluster import FutureLogWatch

pytestmark = pytest.mark.cluster

L, F = "leader", "follower"
MOVE_MB = 6  # the first fetch copies up to 1 MB at once; the rest at ~95 KB/s under SLOW (the throttle's floor)
# bytes/s. FAST lets the rest of the move go in a few seconds: the rate is averaged over 11 s, so raised to FAST it
# lets about 11 x FAST minus what the window already carried through at once, then FAST. Not faster: a move that
# ends before `execute --additional` has recorded its request started finds that request still being executed,
# and the janitor leaves its throttles to the next batch (seen: 5-10 s after completion at FAST = 50 MB/s).
SLOW, FAST = 100_000, 300_000
MID_MOVE_S = 120  # the job's first batch of a move on a loaded machine took 18 s (load average 86)
# A move between log dirs long enough (~40 s) to be seen mid-way by `progress` and the job's batches, at a rate whose
# 1 MB fetches (one a second) keep the copied bytes near the line the ETA is judged against.
LOG_DIR_MB, LOG_DIR_RATE = 40, 1_000_000
PROGRESS = "kafka_reassignment_replica_progress_ratio"


def figure(compat, **values):
    shown = ", ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
    print(f"\nCOMPAT FIGURES {compat.version.id}: {shown}", flush=True)


def mid_move_row(compat, topic):
    """The destination's row of `progress --output json` while it is mid-move (0 < numerator < denominator)."""
    code, out, err = cli("progress", *compat.common(), "--output", "json")
    assert code in (0, 1), err
    rows = [r for r in json.loads(out)["replicas"] if r["topic"] == topic and r["partition"] == 0]
    return rows and rows[0]["numerator"] and rows[0]["numerator"] < rows[0]["denominator"] and rows[0]


class ThrottleWatch:
    """One admin client of the lane's cluster, asked often: whether a partition still reassigns, which throttle
    configs of a topic and brokers 1-3 are set; `completion(topic)` starts a thread noting when the topic's move
    ended (`completed`, monotonic)."""

    def __init__(self, cluster):
        self.admin = cluster.admin()
        self.lock = threading.Lock()  # one request at a time on the one client
        self.completed = None

    def completion(self, topic):
        def watch():
            while self.moving(topic):
                time.sleep(0.05)
            self.completed = time.monotonic()
        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    def moving(self, topic):
        with self.lock:
            return any(tp.topic == topic for tp in self.admin.list_partition_reassignments())

    def throttles_left(self, topic):
        from kafka.admin import ConfigResource, ConfigResourceType

        from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS

        with self.lock:
            described = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)] +
                                                    [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in (1, 2, 3)])
        left = [key for key in TOPIC_THROTTLE_KEYS.values()
                if described["topic"][topic].get(key, {}).get("value")]
        left += [f"{b}:{key}" for b in (1, 2, 3) for key in BROKER_THROTTLE_KEYS.values()
                 if described["broker"][str(b)].get(key, {}).get("value")]
        return left

    def close(self):
        self.admin.close()


def test_a_throttled_move_through_execute_progress_verify_and_the_job(compat, tmp_path):
    started = time.monotonic()
    cluster, job = compat.cluster, compat.job
    topic = cluster.unique_topic("compat")
    cluster.create_topic(topic, {0: [1]}, megabytes=MOVE_MB)
    plan = write_plan(tmp_path / "move.json", [(topic, 0, [1, 2])])
    watch = ThrottleWatch(cluster)
    try:
        code, out, err = cli("execute", *compat.common(), "--reassignment-json-file", plan, "--throttle", SLOW,
                             "--output", "json")
        assert code == 0, err
        assert json.loads(out)["started"] == [f"{topic}-0"]
        # KIP-179: the current replica throttled as leader, the new one as follower, rates on both brokers.
        expect_throttles(cluster, [topic], {(topic, L): frozenset({"0:1"}), (topic, F): frozenset({"0:2"}),
                                            (1, L): SLOW, (1, F): SLOW, (2, L): SLOW, (2, F): SLOW})

        row = wait_for(lambda: mid_move_row(compat, topic), 30, interval_s=0.3, message="progress mid-move")
        assert row["denominator"] == pytest.approx(MOVE_MB * 1_000_000, rel=0.05) and row["state"] in ("PENDING", "COPYING")
        code, out, err = cli("progress", *compat.common())
        assert code == 1, err
        [line] = [line for line in out.splitlines() if line.startswith(topic)]
        assert " / " in line and ("COPYING" in line or "PENDING" in line), out
        code, out, err = cli("verify", *compat.common(), "--reassignment-json-file", plan)
        assert code == 1 and "in progress" in out, err

        labels = {"topic": topic, "partition": 0, "broker": 2}
        ratio = wait_for(lambda: 0 < (job.metric(PROGRESS, **labels) or 0) < 1 and job.metric(PROGRESS, **labels),
                         MID_MOVE_S, interval_s=0.3, message="the job's progress of the replica mid-move")
        assert 0 < job.metric("kafka_reassignment_replica_copied_bytes", **labels) < \
            job.metric("kafka_reassignment_replica_target_bytes", **labels)
        seen_mid_move_s = time.monotonic() - started

        # An operator raises the throttle of the move in flight; the rates go up, the move ends.
        completion = watch.completion(topic)
        code, _, err = cli("execute", *compat.common(), "--reassignment-json-file", plan, "--throttle", FAST, "--additional")
        assert code == 0, err
        executed = time.monotonic()
        completion.join(60)
        assert watch.completed is not None, "the move did not complete"
        left = wait_for(lambda: not watch.throttles_left(topic) or None, 30, interval_s=0.05,
                        message=f"the job to remove the throttles (left: {watch.throttles_left(topic)})")
        removal_s = time.monotonic() - watch.completed
        assert left is True
        code, out, err = cli("verify", *compat.common(), "--reassignment-json-file", plan)
        assert code == 0 and "complete" in out and "nothing to remove" in out, (out, err)
        assert replicas(cluster, topic, 0) == [1, 2]
        figure(compat, progress_ratio_mid_move=ratio, seen_mid_move_s=seen_mid_move_s,
               completion_to_throttles_gone_s=removal_s, ended_during_execute=watch.completed < executed,
               test_s=time.monotonic() - started,
               waited_for_lane_s=compat.waited_s)
    finally:
        watch.close()
        cluster.delete_topics([topic])


def test_cancel_reverts_a_move_in_flight_and_takes_its_throttles(compat, tmp_path):
    started = time.monotonic()
    cluster = compat.cluster
    topic = cluster.unique_topic("compat-cancel")
    cluster.create_topic(topic, {0: [2]}, megabytes=3)
    plan = write_plan(tmp_path / "cancel.json", [(topic, 0, [2, 3])])
    try:
        # At a throttle of 1 B/s the move copies about one fetch (1 MB) per 11 s quota window: still in flight.
        code, _, err = cli("execute", *compat.common(), "--reassignment-json-file", plan, "--throttle", 1)
        assert code == 0, err
        code, out, err = cli("cancel", *compat.common(), "--reassignment-json-file", plan)
        assert code == 0 and "cancelled" in out, (out, err)
        wait_for(lambda: replicas(cluster, topic, 0) == [2], 15, message="the original replicas back")
        expect_throttles(cluster, [topic], {})
        figure(compat, cancel_test_s=time.monotonic() - started)
    finally:
        cluster.delete_topics([topic])


def test_a_move_between_log_dirs_shows_progress_and_its_rate_goes(compat, tmp_path):
    """On a version whose line gives brokers two log dirs (JBOD in ZooKeeper mode; KRaft's is the disk cluster's):
    `execute` with `log_dirs` moves a replica between broker 1's dirs at LOG_DIR_RATE (about 40 s); `progress` and
    /metrics show it mid-move (copied = the future log, target = the current log); it ends, the job removes the rate
    within a trigger and a second, writes COMPLETED once, and every ETA it wrote past a quarter of the bytes is within
    the bound of tests/eta_scenario.py."""
    if compat.version.log_dirs < 2:
        pytest.skip("brokers with one log dir (tests/compat_support.py)")
    started = time.monotonic()
    cluster, job = compat.cluster, compat.job
    topic = cluster.unique_topic("compat-logdir")
    cluster.create_topic(topic, {0: [1]}, megabytes=LOG_DIR_MB)
    admin = cluster.admin()
    try:
        [response] = admin.describe_log_dirs(brokers=[1])
    finally:
        admin.close()
    [source] = [d["log_dir"] for d in response["log_dirs"] if any(t["name"] == topic for t in d["topics"])]
    [destination] = [d["log_dir"] for d in response["log_dirs"] if d["log_dir"] != source]
    plan = tmp_path / "logdir.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [destination]}]}))
    try:
        with FutureLogWatch(cluster, 1, topic) as watch:
            code, out, err = cli("execute", *compat.common(), "--reassignment-json-file", plan,
                                 "--replica-alter-log-dirs-throttle", LOG_DIR_RATE, "--output", "json")
            assert code == 0 and json.loads(out)["log_dir_moves_failed"] == [], (out, err)

            def mid_move():
                code, out, err = cli("progress", *compat.common(), "--output", "json")
                assert code in (0, 1), err
                rows = [r for r in json.loads(out)["replicas"] if r["topic"] == topic and r["intra_broker"]]
                return rows and rows[0]["numerator"] and rows[0]["denominator"] \
                    and rows[0]["numerator"] < rows[0]["denominator"] and rows[0]

            row = wait_for(mid_move, 30, interval_s=0.3, message="progress of the move between log dirs mid-move")
            assert row["denominator"] == pytest.approx(LOG_DIR_MB * 1_000_000, rel=0.05) and 0 < row["progress"] < 1
            labels = {"topic": topic, "partition": 0, "broker": 1}
            ratio = wait_for(lambda: 0 < (job.metric(PROGRESS, **labels) or 0) < 1 and job.metric(PROGRESS, **labels),
                             MID_MOVE_S, interval_s=0.3, message="the job's progress of the move between log dirs")
            wait_for(lambda: watch.rate_gone, 150, interval_s=0.2, message="the move to end and its rate to go")
        removal_s = watch.rate_gone - watch.finished
        assert removal_s <= TRIGGER_S + 1.0, (watch.finished, watch.rate_gone)
        key = f"{topic}:0:1:future"

        def records():
            written = [v for k, v in read_topic(job.bootstrap, job.progress_topic) if k == key]
            return any(r["state"] == "COMPLETED" for r in written) and written

        written = wait_for(records, 30, message="the COMPLETED record of the move between log dirs")
        assert sum(r["state"] == "COMPLETED" for r in written) == 1, [r["state"] for r in written]
        judged = eta.copying_etas(written, watch.finished)
        assert judged, [(r["state"], r["progress"]) for r in written]
        assert all(eta.within_bound(actual, estimate) for actual, estimate in judged), judged
        figure(compat, log_dir_move_ratio_mid_move=ratio, log_dir_rate_gone_s=round(removal_s, 2),
               log_dir_etas=[(round(a, 1), round(e, 1)) for a, e in judged], log_dir_test_s=time.monotonic() - started)
    finally:
        cluster.delete_topics([topic])


def test_a_small_plan_moves_one_partition_at_a_time(compat, tmp_path):
    if not compat.version.plan:
        pytest.skip("the plan runs on the versions whose line asks for it (tests/compat_support.py)")
    started = time.monotonic()
    cluster = compat.cluster
    topic = cluster.unique_topic("compat-plan")
    cluster.create_topic(topic, {0: [3], 1: [3]}, megabytes=0.5)
    plan = write_plan(tmp_path / "plan.json", [(topic, 0, [3, 1]), (topic, 1, [3, 1])])
    try:
        code, out, err = cli("execute", *compat.common(), "--reassignment-json-file", plan, "--throttle", FAST,
                             "--max-partitions-in-flight", 1, "--wait")
        assert code == 0, (out, err)
        assert replicas(cluster, topic, 0) == [3, 1] and replicas(cluster, topic, 1) == [3, 1]
        expect_throttles(cluster, [topic], {})
        figure(compat, plan_test_s=time.monotonic() - started)
    finally:
        cluster.delete_topics([topic])
