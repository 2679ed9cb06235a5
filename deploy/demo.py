"""`make demo`: a throttled partition move on the local cluster, watched live with
`reassign-monitor progress --watch 2`.

Interim: the streaming job will take over the watching; the steps below are small functions to reuse.
Starts deploy/local-cluster.sh (its CLUSTER_DIR / KAFKA_BASE_PORT environment is honoured; default
.local-cluster/ and 127.0.0.1:39091-39093), writes ~40 MB into four partitions on broker 1, throttles
replication to ~2 MB/s and moves the partitions to brokers 2 and 3 (~20 s). When the move completes,
or on Ctrl-C, it cancels what still moves, puts back the throttle configs it replaced, deletes the
demo topic and stops the cluster if it started it.
"""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from kafka import KafkaAdminClient, TopicPartition  # noqa: E402
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic  # noqa: E402

from streaming.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS  # noqa: E402

SCRIPT = ROOT / "deploy" / "local-cluster.sh"
MONITOR = ROOT / ".venv" / "bin" / "reassign-monitor"
TOPIC = "demo-moves"
SOURCE = 1
MOVES = {0: [2], 1: [3], 2: [2], 3: [3]}  # partition -> new replicas
MEGABYTES = 40
THROTTLE = 2_000_000  # bytes/s
RECORD_BYTES = 10_000


def cluster(command):
    """Run deploy/local-cluster.sh; its last stdout line (the bootstrap servers for `up`)."""
    result = subprocess.run([str(SCRIPT), command], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"local-cluster.sh {command}: {result.stderr.strip()}")
    lines = result.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def create_demo_topic(bootstrap, admin, topic=TOPIC, partitions=len(MOVES), megabytes=MEGABYTES, broker=SOURCE):
    """A topic whose `partitions` all live on `broker`, filled with `megabytes` of incompressible data."""
    admin.create_topics([NewTopic(topic, -1, -1, replica_assignments={p: [broker] for p in range(partitions)})])
    admin.wait_for_topics([topic], timeout_ms=30_000)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "none"})
    per_partition = int(megabytes * 1_000_000 / partitions / RECORD_BYTES)
    for partition in range(partitions):
        for _ in range(per_partition):
            producer.produce(topic, os.urandom(RECORD_BYTES), partition=partition)
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unsent")
    return topic


@dataclass(frozen=True)
class Throttles:
    """The throttle configs a move set, each with the value it replaced (None: there was none)."""
    topic: dict  # {(topic, key): previous}
    broker: dict  # {(broker, key): previous}


def _current(admin, kind, names, keys):
    described = admin.describe_configs([ConfigResource(kind, str(n)) for n in names])
    group = "topic" if kind == ConfigResourceType.TOPIC else "broker"
    return {(n, k): described.get(group, {}).get(str(n), {}).get(k, {}).get("value") or None
            for n in names for k in keys}


def _alter(admin, kind, values):
    """{(name, key): value} with None deleting the key."""
    by_name = {}
    for (name, key), value in values.items():
        by_name.setdefault(str(name), {})[key] = (AlterConfigOp.DELETE, None) if value is None else (AlterConfigOp.SET,
                                                                                                    str(value))
    admin.alter_configs([ConfigResource(kind, name, configs=ops) for name, ops in by_name.items()],
                        raise_on_unknown=False)


def start_throttled_move(admin, topic, moves, rate, source=SOURCE):
    """Throttle as KIP-179 describes (leader throttle on the current replicas, follower throttle on the new
    ones, `rate` on the source and every destination broker), then start the reassignment."""
    destinations = sorted({b for replicas in moves.values() for b in replicas})
    topic_values = {
        (topic, TOPIC_THROTTLE_KEYS["leader"]): ",".join(f"{p}:{source}" for p in sorted(moves)),
        (topic, TOPIC_THROTTLE_KEYS["follower"]): ",".join(f"{p}:{b}" for p, bs in sorted(moves.items()) for b in bs),
    }
    broker_values = {(source, BROKER_THROTTLE_KEYS["leader"]): rate}
    broker_values.update({(b, BROKER_THROTTLE_KEYS["follower"]): rate for b in destinations})
    throttles = Throttles(
        topic=_current(admin, ConfigResourceType.TOPIC, [topic], TOPIC_THROTTLE_KEYS.values()),
        broker={k: v for k, v in _current(admin, ConfigResourceType.BROKER, [source, *destinations],
                                          [BROKER_THROTTLE_KEYS["leader"], BROKER_THROTTLE_KEYS["follower"]]).items()
                if k in broker_values})
    _alter(admin, ConfigResourceType.TOPIC, topic_values)
    _alter(admin, ConfigResourceType.BROKER, broker_values)
    admin.alter_partition_reassignments({TopicPartition(topic, p): replicas for p, replicas in moves.items()})
    return throttles


def remove_throttles(admin, throttles):
    """Put back what `start_throttled_move` replaced: the previous value, or no value at all."""
    _alter(admin, ConfigResourceType.TOPIC, throttles.topic)
    _alter(admin, ConfigResourceType.BROKER, throttles.broker)


def cancel_moves(admin, topic):
    """Cancel whatever of `topic` still reassigns (KIP-455: back to the original replicas)."""
    ongoing = [tp for tp in admin.list_partition_reassignments() if tp.topic == topic]
    if ongoing:
        admin.alter_partition_reassignments({tp: None for tp in ongoing})
    return len(ongoing)


def watch(bootstrap, seconds=2):
    """`reassign-monitor progress --watch`: returns when nothing moves (exit 0) or on Ctrl-C."""
    command = [str(MONITOR), "progress", "--bootstrap-server", bootstrap, "--watch", str(seconds)]
    print("$ " + " ".join(["reassign-monitor", *command[1:]]), flush=True)
    return subprocess.run(command).returncode


def main():
    # SIGTERM runs the same cleanup as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started_here = "running" not in cluster("status")
    print("starting the local cluster ...", flush=True)
    bootstrap = cluster("up")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    throttles, code = None, 1
    try:
        if TOPIC in admin.list_topics():  # left over from an interrupted demo
            cancel_moves(admin, TOPIC)
            admin.delete_topics([TOPIC])
            _wait(lambda: TOPIC not in admin.list_topics(), 30)
        print(f"writing {MEGABYTES} MB into {len(MOVES)} partitions of '{TOPIC}' on broker {SOURCE} ...", flush=True)
        create_demo_topic(bootstrap, admin)
        throttles = start_throttled_move(admin, TOPIC, MOVES, THROTTLE)
        print(f"moving them to brokers 2 and 3 under a {THROTTLE / 1e6:g} MB/s throttle", flush=True)
        code = watch(bootstrap)
        print("move complete" if code == 0 else "interrupted", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    finally:
        _clean_up(admin, throttles, started_here)
    return 0 if code == 0 else 130


def _clean_up(admin, throttles, started_here):
    # Ctrl-C during cleanup must not leave a running cluster behind: ignore it until done.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        cancelled = cancel_moves(admin, TOPIC)
        if cancelled:
            print(f"cancelled {cancelled} moves still under way", flush=True)
        if throttles:
            remove_throttles(admin, throttles)
            print("throttles removed", flush=True)
        admin.delete_topics([TOPIC])
        admin.close()
    finally:
        if started_here:
            print("stopping the local cluster ...", flush=True)
            cluster("down")


def _wait(condition, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
