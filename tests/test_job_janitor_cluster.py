"""The throttle janitor inside the streaming job, end to end: `reassign-monitor execute` sets throttles,
the job sees the move complete and removes exactly what execute owned."""

import json
import subprocess
import time

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from streaming.vocabulary.defaults import OWNERSHIP_TOPIC
from tests.job_process import BATCHES, CLI, LAST_POLL, OWNED_JOB_CLUSTER, ROOT, read_topic, running
from tests.kafka_fixtures import wait_for
from tests.steady_producer import OUTGROWN_RATE, PRODUCED_BYTES_PER_S, SteadyProducer

pytestmark = pytest.mark.cluster

FOREIGN_RATE = "50000000"


@pytest.fixture
def job(owned_job):
    """The shared job with `--throttle-cleanup owned` (conftest), polling."""
    return running(owned_job)


def configs(cluster, topic, brokers):
    admin = cluster.admin()
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]
                                           + [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in brokers])
    finally:
        admin.close()
    pick = lambda entries, key: (entries.get(key) or {}).get("value")  # noqa: E731
    topic_configs = described["topic"][topic]
    out = {"leader": pick(topic_configs, "leader.replication.throttled.replicas"),
           "follower": pick(topic_configs, "follower.replication.throttled.replicas")}
    for b in brokers:
        broker = described["broker"][str(b)]
        out[f"{b}.leader"] = pick(broker, "leader.replication.throttled.rate")
        out[f"{b}.follower"] = pick(broker, "follower.replication.throttled.rate")
    return out


def entries(value):
    return sorted(e for e in (value or "").split(",") if e)


def execute(cluster, tmp_path, topic, partition, replicas, throttle):
    plan = tmp_path / f"{topic}-{partition}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": partition, "replicas": replicas}]}))
    result = subprocess.run([CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                             str(plan), "--throttle", str(throttle), "--output", "json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["request_id"]


def moving(cluster, topic):
    admin = cluster.admin()
    try:
        return any(tp.topic == topic for tp in admin.list_partition_reassignments())
    finally:
        admin.close()


def throttle_records(job, topic):
    return [value for key, value in read_topic(job.bootstrap, job.progress_topic)
            if value["kind"] == "throttle" and key == f"throttle:topic:{topic}"]


def setup_topic(cluster, name, megabytes):
    """Partition 0 on broker 1 with data to move; partition 1 on broker 2 carries a foreign throttle entry,
    and broker 2 has a follower rate somebody else set."""
    cluster.create_topic(name, {0: [1], 1: [2]}, megabytes=0)
    cluster.produce(name, [0], megabytes)
    cluster.set_configs({name: {"leader.replication.throttled.replicas": "1:2"}},
                        {2: {"follower.replication.throttled.rate": FOREIGN_RATE}})


def cleanup(cluster, name):
    cluster.set_configs({name: {"leader.replication.throttled.replicas": None,
                                "follower.replication.throttled.replicas": None}},
                        {b: {"leader.replication.throttled.rate": None, "follower.replication.throttled.rate": None}
                         for b in (1, 2)})
    cluster.delete_topics([name])


def test_owned_throttles_go_within_a_trigger_after_completion_and_foreign_ones_stay(cluster, job, tmp_path):
    topic = cluster.unique_topic("janitor")
    setup_topic(cluster, topic, megabytes=15)
    try:
        request_id = execute(cluster, tmp_path, topic, 0, [1, 2], 1_000_000)
        during = configs(cluster, topic, (1, 2))
        assert entries(during["leader"]) == ["0:1", "1:2"]  # current replica added, foreign entry kept
        assert entries(during["follower"]) == ["0:2"]
        assert during["1.leader"] == "1000000" and during["2.follower"] == "1000000"

        wait_for(lambda: not moving(cluster, topic), 90, interval_s=0.1, message="the move to complete")
        wait_for(lambda: configs(cluster, topic, (1, 2))["2.follower"] == FOREIGN_RATE, 30, interval_s=0.2,
                 message="the janitor to restore the foreign rate")
        after = configs(cluster, topic, (1, 2))
        assert entries(after["leader"]) == ["1:2"] and not after["follower"]
        assert after["1.leader"] is None and after["1.follower"] is None and after["2.leader"] is None

        actions = wait_for(lambda: throttle_records(job, topic), 20, message="throttle records")
        assert {a["throttle"]["action"] for a in actions} == {"removed"}
        # Within a trigger, counted in batches rather than seconds (a loaded machine stretches every batch):
        # the controller removed its throttles no later than the batch that first saw the move completed.
        completed = wait_for(lambda: [value["batch_id"] for key, value in read_topic(job.bootstrap, job.progress_topic)
                                      if key == f"{topic}:0:2" and value["state"] == "COMPLETED"], 30,
                             message="the COMPLETED transition")
        assert max(a["batch_id"] for a in actions) <= min(completed), (completed, actions)
        written = read_topic(job.bootstrap, job.progress_topic)
        reassignment = [v for k, v in written if k == f"reassignment:{request_id}"]
        assert reassignment and reassignment[0]["partitions_total"] == 1
        assert job.metric("kafka_reassignment_throttle_actions_total", scope="topic", action="removed") >= 1
        # Every record names the cluster as its series do: the job's --cluster-name, beside Kafka's id.
        assert {v["cluster"] for _, v in written} == {OWNED_JOB_CLUSTER} and all(v["cluster_id"] for _, v in written)
        assert job.metric("kafka_reassignment_throttle_actions_total", cluster=OWNED_JOB_CLUSTER, scope="topic",
                          action="removed") >= 1
    finally:
        cleanup(cluster, topic)


def test_job_down_at_completion_removes_the_throttles_once_after_restart(cluster, job, tmp_path):
    topic = cluster.unique_topic("janitor-restart")
    setup_topic(cluster, topic, megabytes=6)
    try:
        execute(cluster, tmp_path, topic, 0, [1, 2], 1_000_000)
        job.kill()
        wait_for(lambda: not moving(cluster, topic), 90, message="the move to complete while the job is down")
        assert entries(configs(cluster, topic, (1, 2))["follower"]) == ["0:2"]  # nobody removed it yet
        job.start()
        wait_for(lambda: configs(cluster, topic, (1, 2))["2.follower"] == FOREIGN_RATE, 120, interval_s=1,
                 message="removal after the restart")
        assert entries(configs(cluster, topic, (1, 2))["leader"]) == ["1:2"]
        polls_after(job, 3)  # more polls: nothing is removed a second time
        removed = [a for a in throttle_records(job, topic) if a["throttle"]["action"] == "removed"]
        assert sorted((a["throttle"]["kind"], tuple(a["throttle"]["entries"] or ())) for a in removed) == [
            ("follower", ("0:2",)), ("leader", ("0:1",))]
    finally:
        cleanup(cluster, topic)


KAFKA = ROOT / "deploy" / "kafka"
KAFKA_REASSIGN = ["java", "-cp", f"{KAFKA / 'lib'}/*", f"-Dlog4j2.configurationFile={KAFKA / 'log4j2.properties'}",
                  "-Dkafka.logs.dir=/tmp", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"]


def polls_after(job, count):
    """Wait until the job has polled `count` times after now (its last-poll gauge moved on each time)."""
    seen = time.time()
    for _ in range(count):
        seen = wait_for(lambda: (v := job.metric(LAST_POLL)) and v > seen and v, 60, interval_s=0.2,
                        message="the job's next poll")


def shows_foreign_rate(job):
    wait_for(lambda: job.metric("kafka_reassignment_broker_throttle_rate_bytes_per_second", broker="1",
                                kind="leader") == float(FOREIGN_RATE), 60, interval_s=0.2,
             message="the job to see broker 1's foreign leader rate")


def test_kafka_tools_own_throttled_move_ends_with_the_prior_rate_restored_and_its_keys_gone(cluster, job, tmp_path):
    """`kafka-reassign-partitions --execute --throttle` over broker 1, which already held a leader
    rate somebody else set. Kafka's tool overwrites it and adds the follower rate and the rates of broker 2;
    the job adopts each key as it appeared with the move and, at completion, restores broker 1's leader
    rate and deletes every other key and entry the tool set."""
    topic = cluster.unique_topic("kafka-tool")
    cluster.create_topic(topic, {0: [1]}, megabytes=0)
    cluster.produce(topic, [0], 6)
    cluster.set_configs(broker_configs={1: {"leader.replication.throttled.rate": FOREIGN_RATE}})
    try:
        # Adoption's history must hold the broker's value before the move (docs/ownership.md "Adoption"): /metrics
        # shows the throttles of the newest view, a batch's poll or the controller's read while nothing moves.
        shows_foreign_rate(job)
        plan = tmp_path / "move.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}))
        started = subprocess.run(KAFKA_REASSIGN + ["--bootstrap-server", cluster.bootstrap, "--execute",
                                                   "--reassignment-json-file", str(plan), "--throttle", "1000000"],
                                 capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert started.returncode == 0, started.stdout + started.stderr
        wait_for(lambda: {k: v or None for k, v in configs(cluster, topic, (1, 2)).items()} == {
            "leader": "0:1", "follower": "0:2", "1.leader": "1000000", "1.follower": "1000000",
            "2.leader": "1000000", "2.follower": "1000000"}, 30, interval_s=0.2, message="Kafka's tool's throttles")

        wait_for(lambda: not moving(cluster, topic), 90, interval_s=0.1, message="the move to complete")
        wait_for(lambda: {k: v or None for k, v in configs(cluster, topic, (1, 2)).items()} == {
            "leader": None, "follower": None, "1.leader": FOREIGN_RATE, "1.follower": None,
            "2.leader": None, "2.follower": None}, 90, interval_s=0.2,
            message="broker 1's prior leader rate restored and every key of the move gone")
    finally:
        cleanup(cluster, topic)


def adopted(job, topic):
    """Whether the ownership topic holds an `observed` record (docs/ownership.md "Adoption") of a move of `topic`."""
    return any(value.get("origin") == "observed" and any(m["topic"] == topic for m in value.get("moves", ()))
               for _, value in read_topic(job.bootstrap, OWNERSHIP_TOPIC))


def test_a_rate_raised_with_execute_additional_on_an_adopted_move_is_removed_at_completion(cluster, job, tmp_path):
    """The runbooks' way to raise a rate (docs/alerts.md "KafkaReassignmentReplicaFallingBehind"): Kafka's own
    `--execute --throttle` starts a move the job adopts, over broker 1's foreign leader rate; the operator then
    runs `reassign-monitor execute --additional --throttle` with the same file. The new rate is ours, and at
    completion every key of the move is gone and broker 1's foreign rate is back (a rate raised by hand would
    have been the operator's and stayed: docs/ownership.md "Lost claim")."""
    topic = cluster.unique_topic("raised")
    cluster.create_topic(topic, {0: [1]}, megabytes=0)
    cluster.produce(topic, [0], 24)  # 80 s at Kafka's tool's rate: adoption may take a while on a loaded machine
    cluster.set_configs(broker_configs={1: {"leader.replication.throttled.rate": FOREIGN_RATE}})
    plan = tmp_path / "move.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}))
    try:
        shows_foreign_rate(job)  # adoption compares with a look before the move (as above)
        started = subprocess.run(KAFKA_REASSIGN + ["--bootstrap-server", cluster.bootstrap, "--execute",
                                                   "--reassignment-json-file", str(plan), "--throttle", "300000"],
                                 capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert started.returncode == 0, started.stdout + started.stderr
        wait_for(lambda: adopted(job, topic), 60, interval_s=0.5, message="the job to adopt Kafka's tool's throttles")
        raised = subprocess.run([CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                                 str(plan), "--additional", "--throttle", "2000000"],
                                capture_output=True, text=True, timeout=60)
        assert raised.returncode == 0, raised.stderr
        assert moving(cluster, topic), "the move ended before the rate was raised: make it larger"
        shown = configs(cluster, topic, (1, 2))
        assert [shown[f"{b}.{side}"] for b in (1, 2) for side in ("leader", "follower")] == ["2000000"] * 4, shown

        wait_for(lambda: not moving(cluster, topic), 120, interval_s=0.1, message="the move to complete")
        wait_for(lambda: {k: v or None for k, v in configs(cluster, topic, (1, 2)).items()} == {
            "leader": None, "follower": None, "1.leader": FOREIGN_RATE, "1.follower": None,
            "2.leader": None, "2.follower": None}, 60, interval_s=0.2,
            message="the raised rates and every key of the move gone, broker 1's foreign rate back")
    finally:
        cleanup(cluster, topic)


def test_the_job_stopped_while_spark_starts_stops_cleanly(job):
    """/metrics shows the controller's first look seconds before Spark is up: an operator or a container runtime
    stopping the job then (SIGTERM) gets a clean stop, exit 0, as after any batch."""
    job.kill()
    logged_before = len(job.log())
    job.start()
    wait_for(lambda: job.metric(LAST_POLL), 60, interval_s=0.1, message="the job's first published poll")
    assert not job.metric(BATCHES)  # Spark is still starting
    job.stop()
    logged = job.log()[logged_before:]
    assert job.process.returncode == 0 and "Traceback" not in logged, logged[-3000:]


def test_kafka_tools_throttled_move_right_after_the_job_says_it_is_up_is_adopted(cluster, job, tmp_path):
    """The job's first published poll means it has looked (the reassignments listed, the throttle
    baseline read), so Kafka's own `--execute --throttle` started the moment the job is up - seconds into its
    start, long before Spark's first batch - over broker 1, which held somebody else's leader rate, is adopted:
    at completion its keys are gone and that rate is restored."""
    topic = cluster.unique_topic("kafka-tool-start")
    cluster.create_topic(topic, {0: [1]}, megabytes=0)
    cluster.produce(topic, [0], 6)
    cluster.set_configs(broker_configs={1: {"leader.replication.throttled.rate": FOREIGN_RATE}})
    plan = tmp_path / "move.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}))
    try:
        job.kill()
        started = time.monotonic()
        job.start()
        wait_for(lambda: job.metric(LAST_POLL), 60, interval_s=0.1, message="the job's first published poll")
        up_s = time.monotonic() - started
        tool = subprocess.run(KAFKA_REASSIGN + ["--bootstrap-server", cluster.bootstrap, "--execute",
                                                "--reassignment-json-file", str(plan), "--throttle", "1000000"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert tool.returncode == 0, tool.stdout + tool.stderr
        batches_at_start = job.metric(BATCHES) or 0
        wait_for(lambda: not moving(cluster, topic), 90, interval_s=0.1, message="the move to complete")
        wait_for(lambda: {k: v or None for k, v in configs(cluster, topic, (1, 2)).items()} == {
            "leader": None, "follower": None, "1.leader": FOREIGN_RATE, "1.follower": None,
            "2.leader": None, "2.follower": None}, 60, interval_s=0.2,
            message="broker 1's prior leader rate restored and every key of the move gone")
        print(f"\nFIGURES kafka_tool_after_start up_s={up_s:.1f} batches_when_the_tool_ran={batches_at_start}")
    finally:
        cleanup(cluster, topic)


def steered_records(job, request_id):
    return [value for key, value in read_topic(job.bootstrap, job.progress_topic)
            if value["kind"] == "throttle" and value["request_id"] == request_id
            and value["throttle"]["action"] in ("raised", "lowered")]


def last_batch(job):
    return max((value["batch_id"] for _, value in read_topic(job.bootstrap, job.progress_topic)), default=-1)


def test_auto_throttle_raises_a_move_falling_behind_cuts_on_the_guard_and_holds_the_schedule(cluster, job, guard, tmp_path):
    """Issue 19 (2), on the shared job (`run --throttle auto`, its guard a local query-API server: conftest).
    A producer writes PRODUCED_BYTES_PER_S to the moving partition, six times the starting rate OUTGROWN_RATE
    (the fixed rate that sits in FALLING_BEHIND in tests/test_job_cluster.py): auto raises the rate; the guard
    fires and the rate drops within two batches (to 500 KB/s: still below the producer, so the move cannot
    finish while cut); cleared, it climbs again; the schedule window in force (1 MB/s, the job allows 50 MB/s)
    caps every rate; with the producer still writing, the move finishes and the rates go."""
    from datetime import datetime, timedelta, timezone

    from tests.query_api_server import FIRING

    topic = cluster.unique_topic("auto")
    cluster.create_topic(topic, {0: [1]}, megabytes=0)
    cluster.produce(topic, [0], 10)
    now = datetime.now(timezone.utc)
    window = f"{now - timedelta(hours=1):%H:%M}-{now + timedelta(hours=1):%H:%M}=1MB"
    producer = SteadyProducer(cluster, topic, 0, PRODUCED_BYTES_PER_S)
    try:
        plan = tmp_path / "auto.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}))
        result = subprocess.run([CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                                 str(plan), "--throttle", "auto", "--throttle-min", str(OUTGROWN_RATE), "--throttle-max", "50MB",
                                 "--throttle-schedule", window, "--output", "json"],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        request_id = json.loads(result.stdout)["request_id"]
        raised = wait_for(lambda: [r for r in steered_records(job, request_id) if r["throttle"]["action"] == "raised"],
                          120, interval_s=1, message="auto to raise the rate")
        assert raised[0]["throttle"]["value"] == str(OUTGROWN_RATE)  # the floor is the starting rate
        assert moving(cluster, topic), "the move finished before the guard could be tried: make it larger"

        fired_after = last_batch(job)
        guard.result = FIRING
        lowered = wait_for(lambda: [r for r in steered_records(job, request_id) if r["throttle"]["action"] == "lowered"
                                    and r["throttle"]["signal"] == "stress"], 60, interval_s=0.5,
                           message="the guard to cut the rate")
        assert "guard" in lowered[0]["throttle"]["reason"]
        assert min(r["batch_id"] for r in lowered) <= fired_after + 2, (fired_after, lowered)

        cleared_after = last_batch(job)
        guard.result = []
        wait_for(lambda: [r for r in steered_records(job, request_id) if r["throttle"]["action"] == "raised"
                          and r["batch_id"] > cleared_after], 120, interval_s=0.5, message="the rate to climb again")

        wait_for(lambda: not moving(cluster, topic), 240, interval_s=0.5,
                 message="the move to finish while the producer still writes")
        assert producer.thread.is_alive()
        producer.stop()
        steered = steered_records(job, request_id)
        assert max(int(r["throttle"]["new_value"]) for r in steered) <= 1_000_000, "the schedule window is a ceiling"
        assert {r["throttle"]["signal"] for r in raised} <= {"falling_behind", "binds"}
        wait_for(lambda: not any(v for k, v in configs(cluster, topic, (1, 2)).items()), 60, interval_s=0.5,
                 message="every steered rate and entry removed at completion")
        assert job.metric("kafka_reassignment_throttle_actions_total", scope="broker", action="raised") >= 2
    finally:
        guard.result = []
        producer.stop()
        cleanup(cluster, topic)
