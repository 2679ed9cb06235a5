"""`reassign-monitor progress` against the real three-node cluster: a throttled move of ~25 MB from broker 3
to broker 1 (about 45 s at 500 KB/s), watched with one-shot reports, a crafted reassignment file that
produces every KIP-179 status, and `--watch` until the move completes."""

import json
import os
import subprocess

import pytest
from kafka import TopicPartition

from streaming.vocabulary.config_keys import (BROKER_FOLLOWER_THROTTLE_RATE, BROKER_LEADER_THROTTLE_RATE,
                                   TOPIC_FOLLOWER_THROTTLED_REPLICAS, TOPIC_LEADER_THROTTLED_REPLICAS)
from streaming.vocabulary.errors import EXIT_IN_PROGRESS, EXIT_OK
from tests.cluster_cli import reassigning, throttles
from tests.kafka_fixtures import ROOT, wait_for

pytestmark = pytest.mark.cluster

EXECUTABLE = ROOT / ".venv" / "bin" / "reassign-monitor"
MEGABYTES = 25
# bytes/s: MEGABYTES take ~45 s to copy (Kafka lets about 10 s of the rate through at once, then the rate). At 1 MB/s
# the move ended before the first one-shot report once, in the full suite at a load of 18.
RATE = 500_000


def progress(cluster, *arguments, timeout=60):
    """Run the real executable; (exit code, JSON documents printed, one per line)."""
    result = subprocess.run([str(EXECUTABLE), "progress", "--bootstrap-server", cluster.bootstrap, "--output", "json",
                             *arguments], capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, [json.loads(line) for line in result.stdout.splitlines()]


def log_size(cluster, broker, topic, partition):
    """The partition's current-log size on a broker, straight from kafka-python's DescribeLogDirs."""
    admin = cluster.admin()
    try:
        for response in admin.describe_log_dirs(brokers=[broker]):
            for log_dir in response["log_dirs"]:
                for t in log_dir["topics"]:
                    for p in t["partitions"]:
                        if (t["name"], p["partition_index"]) == (topic, partition) and not p["is_future_key"]:
                            return p["partition_size"]
    finally:
        admin.close()
    return 0


def surroundings(cluster):
    """What else could share this move's throttles or CPU: every throttle config and reassignment in the
    cluster, and the machine's load. Printed when a rate assertion fails (the move once copied far below its
    throttle only inside the full suite)."""
    admin = cluster.admin()
    try:
        topics = sorted(admin.list_topics())
    finally:
        admin.close()
    return (f"throttles {throttles(cluster, topics)}; reassigning {sorted(reassigning(cluster))}; "
            f"load {os.getloadavg()}")


def by_replica(document):
    return {(r["topic"], r["partition"], r["broker"]): r for r in document["replicas"]}


@pytest.fixture
def throttled_move(cluster):
    """A topic with one ~25 MB partition on broker 3, moving to broker 1 under a 500 KB/s throttle, and a
    steady three-partition topic; everything set here is removed afterwards. Brokers 3 -> 1: the job tests
    before it move 1 -> 2, and a move right after theirs on the same brokers copied far below its throttle
    (80-160 KB/s against a 1 MB/s throttle, twice in a row; alone it copies at the throttle)."""
    moving = cluster.create_topic(cluster.unique_topic("progress-move"), {0: [3]}, megabytes=MEGABYTES)
    steady = cluster.create_topic(cluster.unique_topic("progress-steady"), {0: [1, 3], 1: [1, 3], 2: [3, 1]})
    cluster.set_configs({moving: {TOPIC_LEADER_THROTTLED_REPLICAS: "0:3", TOPIC_FOLLOWER_THROTTLED_REPLICAS: "0:1"}},
                        {3: {BROKER_LEADER_THROTTLE_RATE: RATE}, 1: {BROKER_FOLLOWER_THROTTLE_RATE: RATE}})
    admin = cluster.admin()
    try:
        admin.alter_partition_reassignments({TopicPartition(moving, 0): [1]})
        yield moving, steady
    finally:
        try:
            if admin.list_partition_reassignments():
                admin.alter_partition_reassignments({TopicPartition(moving, 0): None})
        finally:
            admin.close()
            cluster.set_configs({moving: {TOPIC_LEADER_THROTTLED_REPLICAS: None, TOPIC_FOLLOWER_THROTTLED_REPLICAS: None}},
                                {3: {BROKER_LEADER_THROTTLE_RATE: None}, 1: {BROKER_FOLLOWER_THROTTLE_RATE: None}})
            cluster.delete_topics([moving, steady])


def test_progress_of_a_throttled_move(cluster, throttled_move, tmp_path):
    moving, steady = throttled_move
    key = (moving, 0, 1)
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": moving, "partition": 0, "replicas": [1]},
        {"topic": steady, "partition": 0, "replicas": [1, 3]},
        {"topic": steady, "partition": 1, "replicas": [1, 2]},
        {"topic": steady, "partition": 2, "replicas": [3, 99]},
        {"topic": steady, "partition": 7, "replicas": [1]},
        {"topic": cluster.unique_topic("progress-absent"), "partition": 0, "replicas": [1]},
    ]}))

    print(f"before the move's reports: {surroundings(cluster)}")
    # One-shot reports while the copy runs: the numerator grows, the denominator is the leader's log.
    leader_bytes = log_size(cluster, 3, moving, 0)
    assert leader_bytes >= MEGABYTES * 0.95e6
    numerators = []
    for _ in range(4):
        before = log_size(cluster, 1, moving, 0)
        code, (document,) = progress(cluster)
        after = log_size(cluster, 1, moving, 0)
        assert code == EXIT_IN_PROGRESS
        row = by_replica(document)[key]
        assert row["state"] in ("PENDING", "COPYING") and not row["in_isr"]
        assert row["denominator"] == pytest.approx(leader_bytes, rel=0.03)
        assert before <= row["numerator"] <= after
        assert row["rate_bytes_per_sec"] is None and row["eta_seconds"] is None  # one-shot: no history
        numerators.append(row["numerator"])
        wait_for(lambda: log_size(cluster, 1, moving, 0) > row["numerator"], 30, interval_s=0.2,
                 message="the copy to grow past the last report")
    assert numerators == sorted(numerators) and numerators[-1] > numerators[0], f"{numerators}; {surroundings(cluster)}"
    assert numerators[-1] < leader_bytes  # the throttle holds: still copying

    # Every KIP-179 status from one crafted file, while the move is still under way.
    code, (document,) = progress(cluster, "--reassignment-json-file", str(crafted))
    assert code == EXIT_IN_PROGRESS
    assert [(r["partition"], r["broker"], r["status"].split(":")[0]) for r in document["replicas"]] == [
        (0, 1, "Behind"),
        (0, 1, "In sync"), (0, 3, "In sync"),
        (1, 1, "In sync"), (1, 2, "Broker does not host this partition"),
        (2, 3, "In sync"), (2, 99, "Unknown broker"),
        (7, 1, "Unknown partition"),
        (0, 1, "Unknown topic"),
    ]
    behind = document["replicas"][0]
    assert behind["status"].startswith("Behind: ") and behind["status"].endswith("%)")
    assert document["summary"]["replicas_moving"] == 1

    # --watch until the move completes: rates appear from the second poll, the last document says done.
    code, documents = progress(cluster, "--watch", "2", timeout=90)
    assert code == EXIT_OK, f"{surroundings(cluster)}"
    assert documents[-1]["in_progress"] is False and documents[-1]["replicas"] == []
    rates = [by_replica(d)[key]["rate_bytes_per_sec"] for d in documents[1:-1] if key in by_replica(d)]
    assert rates and all(0.3 * RATE < r < 3 * RATE for r in rates if r), f"{rates}; {surroundings(cluster)}"
    etas = [d["summary"]["eta_seconds"] for d in documents[1:-1]]
    assert any(e is not None for e in etas)

    # Completed: the moved replica is In sync and the file reports nothing still moving.
    code, (document,) = wait_for(lambda: (lambda r: r if r[0] == EXIT_OK else None)(
        progress(cluster, "--reassignment-json-file", str(crafted))), 20, message="the file's move to complete")
    done = document["replicas"][0]
    assert (done["status"], done["state"], done["moving"]) == ("In sync", "COMPLETED", False)
    assert done["numerator"] == pytest.approx(leader_bytes, rel=0.03)
    assert document["in_progress"] is False
