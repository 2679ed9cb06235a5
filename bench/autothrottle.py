"""`--throttle auto` against fixed throttles: the same move under a steady producer, three arms in one run.

On a three-node cluster of its own (deploy/local-cluster.sh, started here and stopped at the end) with one
streaming job (`reassign-monitor run --throttle auto`, trigger 2 s, local[2]; it steers only requests executed
with `--throttle auto`, so the fixed arms are left alone), each arm creates a one-partition topic holding
--megabytes on broker 1 and a NOT moving topic replicated on brokers 1 and 2, starts producers writing
--produce-kbps to both, and moves the first partition to brokers 1,2 with:

  low   `execute --throttle LOW`  (fixed, below the produce rate: expected to fall behind)
  high  `execute --throttle HIGH` (fixed)
  auto  `execute --throttle auto --throttle-min LOW --throttle-max HIGH` (the same bounds)

Measured per arm: completion time (execute to the partition no longer listed; an arm still moving after
--deadline s is cancelled and reported as not finished), the peak follower lag of the partition that is NOT
moving (leader's log size minus the follower's, DescribeLogDirs every 0.5 s), and the number of rate changes
(`raised` / `lowered` throttle records of the request). The arms run one after the other on the same cluster.

    .venv/bin/python bench/autothrottle.py [--megabytes 8] [--produce-kbps 400] [--low 200000] [--high 5000000]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka import KafkaAdminClient  # noqa: E402

from bench.results import markdown_table, write_section  # noqa: E402
from tests.job_process import CLI, JobProcess, read_topic  # noqa: E402
from tests.kafka_fixtures import LocalCluster, wait_for  # noqa: E402
from tests.steady_producer import SteadyProducer  # noqa: E402

CLUSTER_DIR = ROOT / ".local-cluster" / "bench-autothrottle"
BASE_PORT = int(os.environ.get("BENCH_KAFKA_BASE_PORT", "34300"))
TRIGGER_S = 2.0
TITLE = "Adaptive throttle (bench/autothrottle.py)"


class LagWatcher:
    """Peak follower lag (bytes) of one partition on brokers (leader, follower), sampled every 0.5 s."""

    def __init__(self, bootstrap, topic, leader, follower):
        from streaming.cluster.admin import KafkaClusterAdmin

        self.peak, self.stopped = 0, threading.Event()
        admin = KafkaClusterAdmin(bootstrap, None, 10.0)

        def size(broker):
            sizes = [r["size"] for r in admin.describe_log_dirs(broker)
                     if r["topic"] == topic and r["partition"] == 0 and not r["is_future"]]
            return sizes[0] if sizes else None

        def run():
            while not self.stopped.wait(0.5):
                try:
                    lead, follow = size(leader), size(follower)
                except Exception:
                    continue
                if lead is not None and follow is not None:
                    self.peak = max(self.peak, lead - follow)
            admin.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopped.set()
        self.thread.join(30)
        return self.peak


def listed(bootstrap, topic):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        return any(tp.topic == topic for tp in admin.list_partition_reassignments())
    finally:
        admin.close()


def one_arm(cluster, job, scratch, arm, throttle_args, args):
    moving = cluster.unique_topic(f"auto-bench-{arm}")
    steady = cluster.unique_topic(f"auto-bench-steady-{arm}")
    cluster.create_topic(moving, {0: [1]}, megabytes=0)
    cluster.produce(moving, [0], args.megabytes)
    cluster.create_topic(steady, {0: [1, 2]}, megabytes=0)
    producers = [SteadyProducer(cluster, t, 0, args.produce_kbps * 1000) for t in (moving, steady)]
    lag = LagWatcher(cluster.bootstrap, steady, 1, 2)
    plan = Path(scratch) / f"{arm}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": moving, "partition": 0, "replicas": [1, 2]}]}))
    started = time.monotonic()
    result = subprocess.run([CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                             str(plan), *throttle_args, "--output", "json"], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{arm}: execute failed: {result.stderr}")
    request_id = json.loads(result.stdout)["request_id"]
    finished = None
    while time.monotonic() - started < args.deadline:
        if not listed(cluster.bootstrap, moving):
            finished = time.monotonic() - started
            break
        time.sleep(0.2)
    for p in producers:
        p.stop()
    peak = lag.stop()
    if finished is None:
        subprocess.run([CLI, "cancel", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", str(plan)],
                       capture_output=True, text=True, timeout=120)
        wait_for(lambda: not listed(cluster.bootstrap, moving), 120, message="the cancel")
    time.sleep(3 * TRIGGER_S)  # the janitor's records of the arm are written
    changes = [v for _, v in read_topic(job.bootstrap, job.progress_topic)
               if v["kind"] == "throttle" and v["request_id"] == request_id
               and v["throttle"]["action"] in ("raised", "lowered")]
    cluster.delete_topics([moving, steady])
    return {"finished": finished, "peak_lag": peak, "changes": len(changes),
            "rates": sorted({int(c["throttle"]["new_value"]) for c in changes})}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=float, default=8.0, help="data in the moved partition before the move")
    parser.add_argument("--produce-kbps", type=int, default=400, help="KB/s written to each partition during the move")
    parser.add_argument("--low", type=int, default=200_000, help="the low fixed rate and auto's floor, bytes/s")
    parser.add_argument("--high", type=int, default=5_000_000, help="the high fixed rate and auto's ceiling, bytes/s")
    parser.add_argument("--deadline", type=float, default=180.0, help="an arm still moving after this is cancelled")
    args = parser.parse_args()
    began = time.monotonic()
    load_start = os.getloadavg()[0]
    cluster = LocalCluster(CLUSTER_DIR, BASE_PORT)
    arms = [("low", ["--throttle", str(args.low)]), ("high", ["--throttle", str(args.high)]),
            ("auto", ["--throttle", "auto", "--throttle-min", str(args.low), "--throttle-max", str(args.high)])]
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        try:
            cluster.up()
            job = JobProcess(cluster.bootstrap, Path(scratch) / "checkpoint", Path(scratch) / "job.log",
                             "--trigger-interval", f"{TRIGGER_S:g}s", "--master", "local[2]", "--quiet",
                             "--throttle", "auto", "--throttle-min", str(args.low), "--throttle-max", str(args.high),
                             "--throttle-interval", f"{TRIGGER_S:g}s").start()
            try:
                job.wait_first_poll()
                for arm, throttle_args in arms:
                    results[arm] = one_arm(cluster, job, scratch, arm, throttle_args, args)
                    print(arm, results[arm], flush=True)
            finally:
                job.stop()
        finally:
            cluster.started_here = True  # this bench owns its cluster directory: always stop it at the end
            cluster.down()
    rows = [[f"{arm}: `execute {' '.join(a)}`",
             f"{r['finished']:.1f}" if r["finished"] is not None else f"not finished in {args.deadline:g} s",
             f"{r['peak_lag'] / 1e6:.2f}", r["changes"],
             ", ".join(f"{x / 1e6:g}" for x in r["rates"]) or "-"]
            for (arm, a), r in ((arm, results[arm[0]]) for arm in arms)]
    table = markdown_table(["arm", "completion s", "peak lag of the NOT moving partition, MB", "rate-change records (per broker and kind)",
                            "rates set, MB/s"], rows)
    body = (f"One run, the three arms one after the other on a local 3-node cluster (Kafka 4.1.1), one job "
            f"(`run --throttle auto`, trigger {TRIGGER_S:g} s, local[2]). Each arm moves a one-partition topic holding "
            f"{args.megabytes:g} MB from broker 1 to brokers 1,2 while producers write {args.produce_kbps} KB/s to it "
            f"and to a partition that does NOT move (replicas on brokers 1 and 2). Peak lag: that partition's leader "
            f"log size minus its follower's, every 0.5 s. 1-min load average at start / end: {load_start:.1f} / "
            f"{os.getloadavg()[0]:.1f}; whole bench {time.monotonic() - began:.0f} s.\n\n{table}\n")
    write_section(TITLE, body)
    print(table)


if __name__ == "__main__":
    main()
