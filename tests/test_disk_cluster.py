"""Moves between log dirs and a disk that fills, end to end on the disk cluster (conftest `disk_cluster`: two log
dirs per broker, broker 3's second a small tmpfs) with the job as an operator runs it (conftest `disk_job`):
`reassign-monitor execute` with `log_dirs`, `progress --output json`, /metrics and the progress topic."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS
from tests import eta_scenario as eta
from tests.cluster_cli import cli, throttles
from tests.disk_cluster import TRIGGER_S
from tests.job_process import CLI, read_topic, running
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

ALTER_LOG_DIRS_RATE = BROKER_THROTTLE_KEYS["alter_log_dirs"]
INTRA_RATE = 2_000_000  # bytes/s: INTRA_MB take ~45 s, several batches even of a job whose batches take 15 s
INTRA_MB = 90
WATCH_S = 0.1  # how often the watch below looks at the future log and the broker's rate


@pytest.fixture
def job(disk_job):
    return running(disk_job)


def logs_of(cluster, broker, topic):
    """{log dir: (size, is future)} of `topic` partition 0 on `broker`, and the dirs that answered with an error."""
    admin = cluster.admin()
    try:
        [response] = admin.describe_log_dirs(brokers=[broker])
    finally:
        admin.close()
    logs, offline = {}, set()
    for log_dir in response["log_dirs"]:
        if log_dir["error_code"]:
            offline.add(log_dir["log_dir"])
        for t in log_dir["topics"]:
            for p in t["partitions"]:
                if t["name"] == topic and p["partition_index"] == 0:
                    logs[log_dir["log_dir"]] = (p["partition_size"], p["is_future_key"])
    return logs, offline


def broker_rate(cluster, broker):
    admin = cluster.admin()
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker))])
    finally:
        admin.close()
    return (described["broker"][str(broker)].get(ALTER_LOG_DIRS_RATE) or {}).get("value")


def execute(cluster, tmp_path, partitions, *flags):
    """`reassign-monitor execute` of [{topic, partition, replicas, log_dirs?}]; its request id."""
    plan = tmp_path / f"plan-{time.monotonic_ns()}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": partitions}))
    result = subprocess.run([CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                             str(plan), *map(str, flags), "--output", "json"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["log_dir_moves_failed"] == []
    return answer["request_id"]


def progress_report(cluster):
    result = subprocess.run([CLI, "progress", "--bootstrap-server", cluster.bootstrap, "--output", "json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


class FutureLogWatch:
    """A thread noting (time.time()) when `topic`'s future log on `broker` is gone (the move ended) and when the
    broker's alter-log-dirs rate is gone after that."""

    def __init__(self, cluster, broker, topic):
        self.cluster, self.broker, self.topic = cluster, broker, topic
        self.finished = self.rate_gone = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(15)

    def _run(self):
        seen_future = False
        while not self._stop.is_set() and self.rate_gone is None:
            now = time.time()
            try:
                if self.finished is None:
                    logs, _ = logs_of(self.cluster, self.broker, self.topic)
                    future = any(is_future for _, is_future in logs.values())
                    seen_future |= future
                    if seen_future and not future:
                        self.finished = now
                elif broker_rate(self.cluster, self.broker) is None:
                    self.rate_gone = now
            except Exception:  # a slow answer on the loaded machine: look again
                pass
            self._stop.wait(WATCH_S)


def intra_row(report, topic):
    return next((r for r in report["replicas"] if r["topic"] == topic and r["intra_broker"]), None)


def test_a_move_between_log_dirs_shows_progress_eta_and_completes_once(disk_cluster, job, tmp_path):
    topic = disk_cluster.create_topic(disk_cluster.unique_topic("logdir"), {0: [1]}, megabytes=INTRA_MB)
    logs, _ = logs_of(disk_cluster, 1, topic)
    [source] = logs
    [destination] = set(disk_cluster.log_dirs(1)) - {source}
    labels = {"topic": topic, "partition": 0, "broker": 1}
    try:
        with FutureLogWatch(disk_cluster, 1, topic) as watch:
            request_id = execute(disk_cluster, tmp_path,
                                 [{"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [destination]}],
                                 "--replica-alter-log-dirs-throttle", INTRA_RATE)

            def mid_move():
                row = intra_row(progress_report(disk_cluster), topic)
                return row if row and row["numerator"] and row["denominator"] \
                    and 0 < row["numerator"] < row["denominator"] else None

            row = wait_for(mid_move, 30, message="progress to show the move between log dirs mid-way")
            assert row["state"] == "COPYING" and 0 < row["progress"] < 1
            assert row["denominator"] == pytest.approx(INTRA_MB * 1_000_000, rel=0.05)

            def shown():
                ratio = job.metric("kafka_reassignment_replica_progress_ratio", **labels)
                copied = job.metric("kafka_reassignment_replica_copied_bytes", **labels)
                target = job.metric("kafka_reassignment_replica_target_bytes", **labels)
                return ratio is not None and 0 < ratio < 1 and 0 < copied < target and (ratio, copied, target)

            wait_for(shown, 30, interval_s=0.2, message="/metrics to show the move between log dirs mid-way")
            wait_for(lambda: watch.rate_gone, 90, interval_s=0.2,
                     message="the move to end and its alter-log-dirs rate to go")
        # The controller's look at the future logs removed it, not a batch (docs/architecture.md "The controller"):
        # 0.3-0.9 s measured at a load average of 30 on 2 cores, once 2.1 s; bounded here by one trigger and a
        # second, as the janitor tests bound removal by batches rather than seconds on a loaded machine.
        removal_s = watch.rate_gone - watch.finished
        assert removal_s <= TRIGGER_S + 1.0, (watch.finished, watch.rate_gone)

        key = f"{topic}:0:1:future"
        records = wait_for(lambda: [v for k, v in read_topic(job.bootstrap, job.progress_topic) if k == key
                                    and v["state"] == "COMPLETED"] and
                           [v for k, v in read_topic(job.bootstrap, job.progress_topic) if k == key], 30,
                           message="the COMPLETED record")
        assert sum(r["state"] == "COMPLETED" for r in records) == 1, [r["state"] for r in records]
        # Every ETA the job wrote once the move passed a quarter of its bytes, against the real end.
        judged = eta.copying_etas(records, watch.finished)
        assert judged, [(r["state"], r["progress"]) for r in records]
        assert all(eta.within_bound(actual, estimate) for actual, estimate in judged), judged
        reassignment = [v for k, v in read_topic(job.bootstrap, job.progress_topic)
                        if k == f"reassignment:{request_id}"]
        assert reassignment
        removals = [v for k, v in read_topic(job.bootstrap, job.progress_topic)
                    if k == "throttle:broker:1" and v["throttle"]["action"] == "removed"]
        [completed] = [r["batch_id"] for r in records if r["state"] == "COMPLETED"]
        assert removals and min(r["batch_id"] for r in removals) <= completed, (removals, completed)
        print(f"\nDISK FIGURES log-dir move: rate gone {removal_s:.2f} s after the end; "
              f"ETAs after 25 % (actual s, ETA s): {[(round(a, 1), round(e, 1)) for a, e in judged]}", flush=True)
    finally:
        disk_cluster.delete_topics([topic])


def isr_of(cluster, topic, asked=1):
    """The partition's ISR as broker `asked` tells it (never the stopped one: a client bootstrapping from it waits out
    its whole request timeout); None when it did not answer."""
    try:
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{cluster.base_port + asked}", request_timeout_ms=5000)
        try:
            [described] = admin.describe_topics([topic])
        finally:
            admin.close()
    except Exception:
        return None
    return sorted(described["partitions"][0]["isr_nodes"])


def test_completion_held_by_a_replica_that_is_not_moving_names_it(disk_cluster, job, tmp_path):
    """KAFKA-19975: broker 2 keeps its replica of a partition gaining one on broker 3; stopped (SIGSTOP), it leaves
    the ISR, so the reassignment cannot complete although broker 3 caught up: the reason names broker 2. Continued
    (SIGCONT, whatever happens), it rejoins and the move completes."""
    topic = disk_cluster.create_topic(disk_cluster.unique_topic("held"), {0: [1, 2]}, megabytes=2)
    pid = disk_cluster.pid(2)
    try:
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_for(lambda: isr_of(disk_cluster, topic) == [1], 60, interval_s=0.5,
                     message="broker 2 to leave the ISR (fenced)")
            # Broker 2 may have been Kafka's active controller: its failover can leave the reassignments API
            # unanswered for about 20 s after the ISR shrank (`execute` then exits 3 and changes nothing).
            wait_for(lambda: cli("progress", "--bootstrap-server", disk_cluster.bootstrap)[0] == 0, 90,
                     interval_s=1, message="Kafka's controller to answer")
            execute(disk_cluster, tmp_path, [{"topic": topic, "partition": 0, "replicas": [1, 2, 3]}])
            held = wait_for(lambda: [r for r in records_of(job, f"{topic}:0:3")
                                     if r["reason_code"] == "TARGET_REPLICA_OUT_OF_ISR"], 90,
                            message="the reason naming the replica out of the ISR")
            assert held[0]["state"] == "IN_SYNC" and "broker 2 is out of the ISR" in held[0]["reason"], held[0]
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for(lambda: any(r["state"] == "COMPLETED" for r in records_of(job, f"{topic}:0:3")), 120,
                 message="the move to complete once broker 2 is back")
    finally:
        disk_cluster.delete_topics([topic])


def throttles_of(cluster, topic, broker):
    """The replication throttles set on `topic` and on `broker` (tests.cluster_cli.throttles: keyed (topic or broker,
    kind))."""
    return {key: value for key, value in throttles(cluster, [topic]).items()
            if key[0] in (topic, broker) and key[1] != "alter_log_dirs"}


def records_of(job, key):
    return [v for k, v in read_topic(job.bootstrap, job.progress_topic) if k == key]


PLAN_MB = 4  # per partition: at PLAN_RATE each move lasts a few seconds, so two overlap at every poll below
PLAN_RATE = 1_000_000


class InFlightWatch:
    """A thread counting `topic`'s partitions in flight as the cluster shows them: reassigning in two
    ListPartitionReassignments that bracket a DescribeLogDirs of `brokers`, or holding a future log in it (a lower bound
    of what moved at the DescribeLogDirs: a count from reads at different instants must not add a partition that
    ended to one that started after it)."""

    def __init__(self, cluster, topic, brokers):
        self.cluster, self.topic, self.brokers = cluster, topic, brokers
        self.counts = []
        self.copied = set()  # partitions seen with a future log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._admin = self.cluster.admin()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(15)
        self._admin.close()

    def _reassigning(self):
        return {tp.partition for tp in self._admin.list_partition_reassignments() if tp.topic == self.topic}

    def _run(self):
        while not self._stop.is_set():
            try:
                before = self._reassigning()
                copying = {p["partition_index"] for response in self._admin.describe_log_dirs(brokers=self.brokers)
                           for log_dir in response["log_dirs"] for t in log_dir["topics"] if t["name"] == self.topic
                           for p in t["partitions"] if p["is_future_key"]}
                self.counts.append(len(before & self._reassigning() | copying))
                self.copied |= copying
            except Exception:  # a slow answer on the loaded machine: look again
                pass
            self._stop.wait(WATCH_S)


def placed(cluster, topic, brokers):
    """{partition: {broker: log dir}} of `topic`'s current logs, and whether any future log is left."""
    admin = cluster.admin()
    try:
        responses = admin.describe_log_dirs(brokers=brokers)
    finally:
        admin.close()
    where, future = {}, False
    for response in responses:
        broker = response["broker"]
        for log_dir in response["log_dirs"]:
            for t in log_dir["topics"]:
                for p in t["partitions"]:
                    if t["name"] == topic:
                        future |= p["is_future_key"]
                        if not p["is_future_key"]:
                            where.setdefault(p["partition_index"], {})[broker] = log_dir["log_dir"]
    return where, future


def test_a_plan_mixing_moves_between_log_dirs_and_brokers_holds_its_limit(disk_cluster, job, tmp_path):
    """`execute --max-partitions-in-flight 2 --wait` of four partitions: two between the log dirs of their broker, one
    to another broker into a named dir, one to another broker. The cluster never shows more than two in flight, every
    partition ends on its brokers in its dirs, and both rates and the throttled-replicas lists are gone at the end -
    with the job running beside it (its janitor and its look at the future logs sweep the waves' rates too)."""
    started = time.monotonic()
    topic = disk_cluster.create_topic(disk_cluster.unique_topic("plandirs"), {0: [1], 1: [1], 2: [2], 3: [2]},
                                      megabytes=PLAN_MB)
    try:
        before, _ = placed(disk_cluster, topic, [1, 2])

        def other_dir(partition, broker):
            [other] = set(disk_cluster.log_dirs(broker)) - {before[partition][broker]}
            return other

        into_2 = disk_cluster.log_dirs(2)[1]
        moves = [{"topic": topic, "partition": 0, "replicas": [1], "log_dirs": [other_dir(0, 1)]},
                 {"topic": topic, "partition": 1, "replicas": [2], "log_dirs": [into_2]},
                 {"topic": topic, "partition": 2, "replicas": [2], "log_dirs": [other_dir(2, 2)]},
                 {"topic": topic, "partition": 3, "replicas": [1]}]
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": moves}))
        with InFlightWatch(disk_cluster, topic, [1, 2]) as watch:
            result = subprocess.run([CLI, "execute", "--bootstrap-server", disk_cluster.bootstrap,
                                     "--reassignment-json-file", str(plan), "--max-partitions-in-flight", "2", "--wait",
                                     "--throttle", str(PLAN_RATE), "--replica-alter-log-dirs-throttle", str(PLAN_RATE)],
                                    capture_output=True, text=True, timeout=180)
        assert result.returncode == 0, result.stdout + result.stderr
        assert watch.counts and max(watch.counts) == 2, watch.counts  # the limit reached, never passed
        assert {0, 2} <= watch.copied, watch.copied  # the moves between log dirs were seen copying, counted
        where, future = placed(disk_cluster, topic, [1, 2])
        assert not future and {p: set(on) for p, on in where.items()} == {0: {1}, 1: {2}, 2: {2}, 3: {1}}, where
        assert [where[0][1], where[1][2], where[2][2]] == [moves[0]["log_dirs"][0], into_2, moves[2]["log_dirs"][0]]
        wait_for(lambda: not {key: value for key, value in throttles(disk_cluster, [topic]).items()
                              if key[0] in (topic, 1, 2)}, 15, interval_s=0.5,
                 message="the plan's throttles (both rates, the throttled-replicas lists) to go")
        print(f"\nDISK FIGURES plan mixing moves between log dirs and brokers: in flight at most {max(watch.counts)} "
              f"over {len(watch.counts)} looks; {time.monotonic() - started:.1f} s", flush=True)
    finally:
        disk_cluster.delete_topics([topic])


# Last on the disk cluster: the log dir that goes offline stays offline until broker 3 restarts.
def test_a_log_dir_that_fills_is_named_and_the_move_beside_it_goes_on(disk_cluster, job, tmp_path):
    small = str(disk_cluster.small_dir)
    healthy = disk_cluster.create_topic(disk_cluster.unique_topic("beside"), {0: [1]}, megabytes=40)
    filling = disk_cluster.create_topic(disk_cluster.unique_topic("fills"), {0: [2]}, megabytes=40)
    try:
        execute(disk_cluster, tmp_path, [{"topic": healthy, "partition": 0, "replicas": [1, 2]}], "--throttle", 1_000_000)
        execute(disk_cluster, tmp_path, [{"topic": filling, "partition": 0, "replicas": [2, 3],
                                          "log_dirs": ["any", small]}], "--throttle", 4_000_000)
        offline_at = wait_for(lambda: small in logs_of(disk_cluster, 3, filling)[1] and time.time(), 90,
                              interval_s=0.25, message=f"broker 3 to take {small} offline")

        def named():
            after = [r for r in records_of(job, f"{filling}:0:3") if r["ts_ms"] / 1000.0 >= offline_at]
            return after if len(after) >= 2 else None

        after = wait_for(named, 60, message="two records of the filling move polled after the dir went offline")
        # Every poll after Kafka reported it names the dir (so within two triggers of it).
        for record in after:
            assert record["reason_code"] == "LOG_DIR_OFFLINE", after
            assert record["reason"].startswith(f"log dir {small} on broker 3 is offline"), record["reason"]
        assert job.metric("kafka_reassignment_replica_diagnosis", topic=filling, partition=0, broker=3,
                          reason_code="LOG_DIR_OFFLINE") == 1
        def beside_updates():  # the move beside it: batches after the dir went offline (a replayed batch counts once)
            polled = {r["batch_id"]: r for r in records_of(job, f"{healthy}:0:2") if r["ts_ms"] / 1000.0 >= offline_at}
            numerators = [polled[b]["numerator"] for b in sorted(polled)]
            done = any(r["state"] == "COMPLETED" for r in polled.values())
            return (len(set(numerators)) >= 2 or done) and numerators == sorted(numerators) and numerators

        wait_for(beside_updates, 90, message="the move beside it to keep updating")
        # Stuck, its throttles stay; cancelled, they go.
        assert (3, "follower") in throttles_of(disk_cluster, filling, 3)
        plan = tmp_path / "cancel.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": filling, "partition": 0,
                                                                    "replicas": [2, 3]}]}))
        result = subprocess.run([CLI, "cancel", "--bootstrap-server", disk_cluster.bootstrap,
                                 "--reassignment-json-file", str(plan)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        wait_for(lambda: not throttles_of(disk_cluster, filling, 3), 60, interval_s=0.5,
                 message="the cancelled move's throttles to go")
        wait_for(lambda: any(r["state"] == "COMPLETED" for r in records_of(job, f"{healthy}:0:2")), 120,
                 message="the move beside it to complete")
    finally:
        disk_cluster.delete_topics([healthy, filling])
