"""The throttle janitor inside the streaming job, end to end: `reassign-monitor execute` sets throttles,
the job sees the move complete and removes exactly what execute owned."""

import json
import subprocess
import time

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from tests.job_process import CLI, OWNED_JOB_TRIGGER_S, read_topic, running
from tests.kafka_fixtures import wait_for

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
        # the driver's watch removed its throttles no later than the batch that first saw the move completed.
        completed = wait_for(lambda: [value["batch_id"] for key, value in read_topic(job.bootstrap, job.progress_topic)
                                      if key == f"{topic}:0:2" and value["state"] == "COMPLETED"], 30,
                             message="the COMPLETED transition")
        assert max(a["batch_id"] for a in actions) <= min(completed), (completed, actions)
        written = read_topic(job.bootstrap, job.progress_topic)
        reassignment = [v for k, v in written if k == f"reassignment:{request_id}"]
        assert reassignment and reassignment[0]["partitions_total"] == 1
        assert job.metric("kafka_reassignment_throttle_actions_total", scope="topic", action="removed") >= 1
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
        time.sleep(3 * OWNED_JOB_TRIGGER_S)  # more batches run: nothing is removed a second time
        removed = [a for a in throttle_records(job, topic) if a["throttle"]["action"] == "removed"]
        assert sorted((a["throttle"]["kind"], tuple(a["throttle"]["entries"] or ())) for a in removed) == [
            ("follower", ("0:2",)), ("leader", ("0:1",))]
    finally:
        cleanup(cluster, topic)
