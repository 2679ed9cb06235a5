"""A poll right after a node is SIGKILLed (issue 21), and a progress write across the same kill.

On a local 3-node cluster of its own: one long-lived admin door (as the job's executor keeps one), polls with
`--timeout` TIMEOUT (all partitions, throttles read, like the job). Per victim - the active controller, the
node the door sends controller-bound requests to, another broker - three warm polls, then SIGKILL and four
polls in a row: the first poll's wall time, the slowest of the next three, the APIs that failed, and whether
the poll reported the dead broker not alive. Then an `acks=all` write of 60 records to an RF-3 topic through
the door's producer (what the job's progress writer does), timed from the kill: Kafka acknowledges it only
once it has fenced the dead broker. The node is restarted before the next victim.

Prints a markdown table and writes it to bench/RESULTS.md, section "Poll after a SIGKILL (bench/dead_node.py)".

    .venv/bin/python bench/dead_node.py [--timeout 10] [--runs 1]
    (CLUSTER_DIR, KAFKA_BASE_PORT: the cluster's directory and ports, default .local-cluster/bench-dead-node, 35390)
"""

import argparse
import os
import signal
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.moves import cluster, wait_until  # noqa: E402
from bench.results import markdown_table, write_section  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402

from streaming.cluster.admin import KafkaClusterAdmin  # noqa: E402
from streaming.cluster.poller import poll  # noqa: E402

SECTION = "Poll after a SIGKILL (bench/dead_node.py)"
ENV = {"CLUSTER_DIR": os.environ.get("CLUSTER_DIR", str(ROOT / ".local-cluster" / "bench-dead-node")),
       "KAFKA_BASE_PORT": os.environ.get("KAFKA_BASE_PORT", "35390")}
NODES = (1, 2, 3)
RECORDS = 60


def pid_of(node):
    return int((Path(ENV["CLUSTER_DIR"]) / f"node{node}" / "pid").read_text())


def active_controller(bootstrap):
    """The KRaft quorum leader (DescribeQuorum of __cluster_metadata)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, bootstrap_timeout_ms=5000)
    try:
        return admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["leader_id"]
    finally:
        admin.close()


def kill(node):
    pid = pid_of(node)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _alive(pid), 15, f"node {node} to die")


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def timed_poll(door):
    started = time.monotonic()
    snapshot = poll(door, all_partitions=True)
    return time.monotonic() - started, snapshot


def one_kill(door, bootstrap, victim, role, topic):
    for _ in range(3):
        timed_poll(door)
    killed = time.monotonic()
    kill(victim)
    first_s, first = timed_poll(door)
    rest = [timed_poll(door) for _ in range(3)]
    write_started = time.monotonic()
    try:
        door.produce(topic, [(str(k), b"x" * 200) for k in range(RECORDS)], 60)
        written = f"{time.monotonic() - killed:.1f}"
    except Exception as error:  # reported, not fatal to the bench
        written = f"failed after {time.monotonic() - write_started:.1f} s ({type(error).__name__})"
    failed = sorted({e.api for _, s in [(first_s, first), *rest] for e in s.errors})
    reported_down = all(victim not in s.alive_brokers() for _, s in [(first_s, first), *rest])
    cluster(ENV, "up")  # restarts the dead node
    return [role, victim, f"{first_s:.2f}", f"{max(s for s, _ in rest):.2f}", ", ".join(failed) or "none",
            "yes" if reported_down else "no", written]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    bootstrap = cluster(ENV, "up")
    load_start = os.getloadavg()[0]
    rows = []
    door = KafkaClusterAdmin(bootstrap, None, args.timeout)
    try:
        topic = f"bench-dead-node-{uuid.uuid4().hex[:8]}"
        door.ensure_topic(topic, 3, {})
        for _ in range(args.runs):
            timed_poll(door)
            cached = door._kafka._controller_id  # the node kafka-python sends controller-bound requests to
            controller = active_controller(bootstrap)
            victims = [("active controller", controller)]
            if cached not in (None, controller):
                victims.append(("door's controller-bound node", cached))
            victims.append(("another broker", next(n for n in NODES if n not in {v for _, v in victims})))
            for role, victim in victims:
                rows.append(one_kill(door, bootstrap, victim, role, topic))
                time.sleep(5)  # let the restarted node rejoin every ISR before the next kill
    finally:
        door.close()
        cluster(ENV, "down")
    table = markdown_table(["node killed", "id", "first poll after the kill s", "slowest of the next 3 s",
                            "APIs failed", "reported not alive", "acks=all write acknowledged s after the kill"],
                           rows)
    body = (f"{table}\n\nLocal 3-node cluster (KRaft, combined broker+controller nodes, default "
            f"broker.session.timeout.ms 9 s) on the shared 2-core machine; one long-lived admin door with "
            f"`--timeout {args.timeout:g}`, polls as the job makes them (all partitions, throttles). Before the "
            f"door held closed connections as gone (issue 21), the first poll after killing the active controller "
            f"took 18.3 s at `--timeout 10` and failed (ListPartitionReassignments, DescribeConfigs and "
            f"DescribeLogDirs retried the dead node until the deadline). The write is Kafka's own wait: it "
            f"acknowledges acks=all only once the dead broker is fenced and out of every ISR. 1-min load average "
            f"at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f}.\n")
    print(body)
    write_section(SECTION, body)


if __name__ == "__main__":
    main()
