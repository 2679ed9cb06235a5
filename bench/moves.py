"""Moves that stay in flight on a local cluster of a benchmark's own, whatever its size.

A rate throttle cannot keep small partitions moving (a fetch made while the quota is not yet exceeded
carries up to 10 MiB: 1,000 x 20 KB finished within 5 s at 1 B/s), so every move goes from broker 1
or 2 to broker 3, which is stopped: a move to a fenced broker stays in flight with no data at all.
Each function takes the benchmark's cluster environment (CLUSTER_DIR, KAFKA_BASE_PORT, KAFKA_HEAP).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Producer
from kafka import TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic

from streaming.vocabulary.config_keys import (ALL_REPLICAS, BROKER_FOLLOWER_THROTTLE_RATE, BROKER_LEADER_THROTTLE_RATE,
                                   TOPIC_FOLLOWER_THROTTLED_REPLICAS, TOPIC_LEADER_THROTTLED_REPLICAS)

ROOT = Path(__file__).resolve().parent.parent
BROKERS = (1, 2, 3)
SOURCES, STOPPED = (1, 2), 3  # every move goes from a source to the stopped broker
RECORD_BYTES = 2_000
TIMEOUT_MS = 120_000


def bootstrap_of(env):
    """The brokers that stay up: every client bootstraps from them."""
    return ",".join(f"127.0.0.1:{int(env['KAFKA_BASE_PORT']) + b}" for b in SOURCES)


def cluster(env, command):
    result = subprocess.run([str(ROOT / "deploy" / "local-cluster.sh"), command], env={**os.environ, **env},
                            capture_output=True, text=True, check=True)
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def source(p):
    return SOURCES[p % len(SOURCES)]


def stop_broker(env, admin, broker):
    """Stop one broker of the bench's own cluster (by the pid the script recorded) and wait until the
    controller fences it: moves to it then stay in flight."""
    pid = int((Path(env["CLUSTER_DIR"]) / f"node{broker}" / "pid").read_text())
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: any(b["broker_id"] == broker and b.get("is_fenced") for b in admin.describe_cluster()["brokers"]),
               60, f"broker {broker} fenced")


def alter(admin, topic_configs=(), broker_configs=()):
    """[(name, {key: value or None})] for topics and brokers; None deletes the key."""
    def op(value):
        return (AlterConfigOp.DELETE, None) if value is None else (AlterConfigOp.SET, str(value))
    resources = [ConfigResource(ConfigResourceType.TOPIC, name, configs={k: op(v) for k, v in c.items()})
                 for name, c in topic_configs]
    resources += [ConfigResource(ConfigResourceType.BROKER, str(b), configs={k: op(v) for k, v in c.items()})
                  for b, c in broker_configs]
    admin.alter_configs(resources, raise_on_unknown=False)


def throttle_brokers(admin, rate):
    alter(admin, broker_configs=[(b, {BROKER_LEADER_THROTTLE_RATE: rate, BROKER_FOLLOWER_THROTTLE_RATE: rate})
                                 for b in BROKERS])


def start_moves(admin, bootstrap, topic, n):
    """N partitions with one ~2 KB record each, then every partition reassigned to the stopped broker."""
    admin.create_topics([NewTopic(topic, -1, -1, replica_assignments={p: [source(p)] for p in range(n)})],
                        timeout_ms=TIMEOUT_MS)
    admin.wait_for_topics([topic], timeout_ms=TIMEOUT_MS)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "compression.type": "none"})
    record = os.urandom(RECORD_BYTES)
    for p in range(n):
        producer.produce(topic, record, partition=p)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unsent")
    alter(admin, topic_configs=[(topic, {TOPIC_LEADER_THROTTLED_REPLICAS: ALL_REPLICAS,
                                         TOPIC_FOLLOWER_THROTTLED_REPLICAS: ALL_REPLICAS})])
    admin.alter_partition_reassignments({TopicPartition(topic, p): [STOPPED] for p in range(n)},
                                        timeout_ms=TIMEOUT_MS)


def reassigning(admin, topic):
    return sum(1 for tp in admin.list_partition_reassignments() if tp.topic == topic)


def stop_moves(admin, topic, n):
    try:
        admin.alter_partition_reassignments({TopicPartition(topic, p): None for p in range(n)}, timeout_ms=TIMEOUT_MS)
    except Exception as error:  # a move that already completed cannot be cancelled; the topic goes anyway
        print(f"  cancel: {type(error).__name__}: {error}", file=sys.stderr)
    admin.delete_topics([topic], timeout_ms=TIMEOUT_MS)


def wait_until(condition, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise RuntimeError(f"timed out waiting for {what}")


def attempt(action, *args):
    """True when `action(*args)` succeeded: a restarted broker is unknown to the client for a moment."""
    try:
        action(*args)
        return True
    except Exception as error:
        print(f"  retrying: {type(error).__name__}: {error}", file=sys.stderr)
        return False
