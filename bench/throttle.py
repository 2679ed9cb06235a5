"""Throttle removal latency: this project's streaming job against the upstream tool's `--verify` loop.

On a three-node cluster of its own (deploy/local-cluster.sh, started here and stopped at the end), each
run creates a one-partition topic with a few MB on one broker and moves it to another broker under a
1 MB/s replication throttle. Two arms, one after the other so they never share the cluster:

  A  `reassign-monitor run` (local[2]) is running, once at a 2 s trigger (A2) and once at the default 10 s
     (A10); moves start with `reassign-monitor execute --throttle 1000000`; the job's controller runs the
     janitor the moment the move leaves the reassignment list.
  B  moves start with the upstream `ReassignPartitionsCommand --execute --throttle 1000000`; a loop runs
     `--verify` on a 2 s schedule (the job's trigger interval, same semantics: the next call starts 2 s after
     the previous one started, at once if that one overran) - how operators remove throttles upstream. Its
     first call is delayed by (i + 0.5) / runs x 2 s in run i: moves last about equally long, so a loop started
     with each move would otherwise look at the same moment of every move.

Measured per run: completion = the first 100 ms poll at which ListPartitionReassignments no longer lists
the partition; throttles gone = the first 100 ms poll (from completion on) at which DescribeConfigs shows
none of the throttles the execute set (topic leader/follower throttled-replicas entries, broker
leader/follower rates on every broker). Latency = gone - completion. A removal seen while the partition
was still listed would break the rule "Still reassigning" (docs/ownership.md) and is reported.

    .venv/bin/python bench/throttle.py [--runs 8] [--megabytes 6] [--base-port 43090]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import ConfigResource, ConfigResourceType  # noqa: E402

from bench.results import markdown_table, write_section  # noqa: E402
from bench.sessions import session_cpu_by_pid  # noqa: E402
from tests.job_process import BATCHES, CLI, JobProcess  # noqa: E402
from tests.kafka_fixtures import LocalCluster, wait_for  # noqa: E402
from streaming.control.controller import SWEPT_LINE  # noqa: E402

CLUSTER_DIR = ROOT / ".local-cluster" / "bench-throttle"
BASE_PORT = 43090
BROKERS = (1, 2, 3)
TRIGGER_S = 2.0  # arm B's --verify period, and arm A2's trigger
DEFAULT_TRIGGER_S = 10.0  # arm A10
THROTTLE = 1_000_000
POLL_S = 0.1
RUN_TIMEOUT_S = 180
WARMUP_BATCHES = 1  # the first batch starts Python workers and plans the query; then the job idles until a move
KAFKA = ROOT / "deploy" / "kafka"
UPSTREAM = ["java", "-cp", f"{KAFKA / 'lib'}/*", f"-Dlog4j2.configurationFile={KAFKA / 'log4j2.properties'}",
            "-Dkafka.logs.dir=/tmp", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"]
TOPIC_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
BROKER_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TITLE = "Throttle removal latency (bench/throttle.py)"


def percentile(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


def timed(args, timeout=120):
    """Run a child to completion: (returncode, stdout+stderr, wall s, CPU s of the child itself)."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT)
        try:
            _, status, usage = os.wait4(process.pid, 0)  # rusage of this child (and its own waited children)
        except BaseException:
            process.kill()
            process.wait()
            raise
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        return process.returncode, out.read(), wall, usage.ru_utime + usage.ru_stime


def session_cpu_s(sid):
    """CPU seconds (user + system) of the live processes of one session: the job's driver and Spark JVM."""
    return sum(session_cpu_by_pid(sid).values())


class Watcher:
    """One admin client polling reassignments and throttle configs every 100 ms."""

    def __init__(self, bootstrap):
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
        self.periods = []  # seconds between consecutive polls: the measurement's real resolution

    def close(self):
        self.admin.close()

    def moving(self, topic):
        return any(tp.topic == topic for tp in self.admin.list_partition_reassignments())

    def throttles(self, topic):
        """{(resource, key): value} of every throttle config present on the topic and the brokers."""
        described = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]
                                                + [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in BROKERS])
        present = {}
        for kind, name, keys in [("topic", topic, TOPIC_KEYS)] + [("broker", str(b), BROKER_KEYS) for b in BROKERS]:
            configs = described[kind][name]
            for key in keys:
                value = (configs.get(key) or {}).get("value")
                if value:
                    present[(f"{kind} {name}", key)] = value
        return present

    def measure(self, topic, set_throttles):
        """Poll until the partition leaves the reassignment list and then every throttle in `set_throttles` is
        gone. Returns (latency s, completion-to-gone, move duration after start of watching, early removal)."""
        watch_start = time.monotonic()
        deadline = watch_start + RUN_TIMEOUT_S
        completed_at, early, last = None, False, None
        while time.monotonic() < deadline:
            tick = time.monotonic()
            if last is not None:
                self.periods.append(tick - last)
            last = tick
            still_moving = self.moving(topic)
            present = self.throttles(topic)
            now = time.monotonic()
            remaining = {k for k in set_throttles if k in present}
            if still_moving and not remaining:
                early = True
            if not still_moving and completed_at is None:
                completed_at = now
            if completed_at is not None and not remaining:
                return now - completed_at, completed_at - watch_start, early
            time.sleep(max(0.0, POLL_S - (time.monotonic() - tick)))
        raise TimeoutError(f"{topic}: {'throttles not removed' if completed_at else 'move not complete'} "
                           f"after {RUN_TIMEOUT_S}s")


class VerifyLoop(threading.Thread):
    """Upstream `--verify` on a fixed 2 s schedule until stopped; keeps each call's wall and CPU seconds."""

    def __init__(self, bootstrap, plan, offset_s):
        super().__init__(daemon=True)
        self.offset_s = offset_s
        self.args = UPSTREAM + ["--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", str(plan)]
        self.stopping = threading.Event()
        self.calls = []  # (wall s, cpu s, returncode, output)
        self.started = time.monotonic()

    def run(self):
        self.started = time.monotonic()
        next_start = self.started + self.offset_s
        self.stopping.wait(self.offset_s)
        while not self.stopping.is_set():
            self.calls.append(self._call())
            next_start = max(next_start + TRIGGER_S, time.monotonic())
            self.stopping.wait(max(0.0, next_start - time.monotonic()))

    def _call(self):
        code, output, wall, cpu = timed(self.args)
        return wall, cpu, code, output

    def stop(self):
        self.stopping.set()
        self.join(120)
        self.lifetime = time.monotonic() - self.started


def make_topic(cluster, name, source, megabytes):
    cluster.create_topic(name, {0: [source]}, megabytes=megabytes)


def write_plan(directory, topic, target):
    plan = Path(directory) / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [target]}]}))
    return plan


def clear_everything(cluster, topic):
    """Leave no throttle behind whatever happened in the run, and drop the topic."""
    cluster.set_configs({topic: {k: None for k in TOPIC_KEYS}}, {b: {k: None for k in BROKER_KEYS} for b in BROKERS})
    cluster.delete_topics([topic])


def one_run(cluster, watcher, scratch, arm, index, runs, megabytes):
    source, target = BROKERS[index % 3], BROKERS[(index + 1) % 3]
    topic = f"bench-throttle-{arm.lower()}-{index}-{os.urandom(3).hex()}"
    make_topic(cluster, topic, source, megabytes)
    plan = write_plan(scratch, topic, target)
    loop = result = None
    try:
        if arm.startswith("A"):
            code, output, _, _ = timed([CLI, "execute", "--bootstrap-server", cluster.bootstrap,
                                        "--reassignment-json-file", str(plan), "--throttle", str(THROTTLE)])
        else:
            code, output, _, _ = timed(UPSTREAM + ["--bootstrap-server", cluster.bootstrap, "--execute",
                                                   "--throttle", str(THROTTLE), "--reassignment-json-file", str(plan)])
        if code != 0:
            raise RuntimeError(f"arm {arm} execute failed ({code}): {output.strip()[-2000:]}")
        set_throttles = set(watcher.throttles(topic))
        if not watcher.moving(topic):
            raise RuntimeError(f"{topic}: the move finished before it could be watched; use more --megabytes")
        if arm == "B":
            # The loop must not be phase-locked to the move (each move lasts about as long as the last one, so a
            # loop started with it would look at the same moment of every run): spread its phase evenly.
            loop = VerifyLoop(cluster.bootstrap, plan, offset_s=(index + 0.5) / runs * TRIGGER_S)
            loop.start()
        latency, move_s, early = watcher.measure(topic, set_throttles)
        result = {"latency": latency, "move": move_s, "early": early, "set": len(set_throttles),
                  "load": os.getloadavg()[0], "verify": loop.calls if loop else [], "loop_s": None}
        return result
    finally:
        if loop:
            loop.stop()
            if result is not None:
                result["loop_s"] = loop.lifetime
        clear_everything(cluster, topic)


def summary_row(arm, runs, check_text):
    latencies = [r["latency"] for r in runs]
    return [arm, len(runs), f"{percentile(latencies, 50):.2f}", f"{percentile(latencies, 95):.2f}",
            f"{max(latencies):.2f}", check_text]


def sweep_steps(log_text):
    """{step: [seconds, ...]} of the controller's sweeps in a job log ("throttle janitor swept in T s (ownership
    a, read b, alter c, read_back d, records e)"), "total" included: where a removal's time goes."""
    steps = {}
    for line in log_text.splitlines():
        if SWEPT_LINE not in line:
            continue
        total, _, rest = line.split(SWEPT_LINE, 1)[1].partition(" s (")
        steps.setdefault("total", []).append(float(total))
        for part in rest.rstrip(")").split(", "):
            if part:
                name, value = part.rsplit(" ", 1)
                steps.setdefault(name, []).append(float(value))
    return steps


def run_arm_a(cluster, watcher, scratch, runs, megabytes, trigger_s, arm):
    job = JobProcess(cluster.bootstrap, Path(scratch) / f"checkpoint-{arm}", Path(scratch) / f"job-{arm}.log",
                     "--trigger-interval", f"{trigger_s:g}s", "--master", "local[2]", "--quiet")
    job.start()
    results = []
    try:
        wait_for(lambda: (job.metric(BATCHES) or 0) >= WARMUP_BATCHES,
                 240, interval_s=1, message=f"the job's first {WARMUP_BATCHES} batches")
        cpu0, t0 = session_cpu_s(job.process.pid), time.monotonic()
        batches0 = (job.metric("kafka_reassignment_monitor_batch_duration_seconds_count") or 0,
                    job.metric("kafka_reassignment_monitor_batch_duration_seconds_sum") or 0)
        for i in range(runs):
            result = one_run(cluster, watcher, scratch, arm, i, runs, megabytes)
            print(f"{arm} run {i + 1}: latency {result['latency']:.2f}s, move {result['move']:.1f}s, "
                  f"{result['set']} throttle configs set", flush=True)
            results.append(result)
        cpu = (session_cpu_s(job.process.pid) - cpu0) / (time.monotonic() - t0)
        count = (job.metric("kafka_reassignment_monitor_batch_duration_seconds_count") or 0) - batches0[0]
        total = (job.metric("kafka_reassignment_monitor_batch_duration_seconds_sum") or 0) - batches0[1]
        return results, {"cpu_cores": cpu, "batch_mean_s": total / count if count else float("nan"),
                         "batches": int(count), "sweeps": sweep_steps(job.log())}
    except BaseException:
        print(job.log()[-3000:], file=sys.stderr)
        raise
    finally:
        job.stop()


def run_arm_b(cluster, watcher, scratch, runs, megabytes):
    results = []
    for i in range(runs):
        result = one_run(cluster, watcher, scratch, "B", i, runs, megabytes)
        print(f"B run {i + 1}: latency {result['latency']:.2f}s, move {result['move']:.1f}s, "
              f"{result['set']} throttle configs set, {len(result['verify'])} --verify calls", flush=True)
        results.append(result)
    calls = [c for r in results for c in r["verify"]]
    version = [timed(UPSTREAM + ["--version"])[2] for _ in range(3)]
    return results, {"verify_wall": [c[0] for c in calls], "verify_cpu": [c[1] for c in calls],
                     "version_wall_s": statistics.median(version),
                     "cpu_cores": sum(c[1] for c in calls) / sum(r["loop_s"] for r in results),
                     "cleared": sum("Clearing broker-level throttles" in c[3] for c in calls)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=8, help="moves per arm (at least 5)")
    parser.add_argument("--megabytes", type=float, default=6.0, help="data in each moved partition")
    parser.add_argument("--base-port", type=int, default=BASE_PORT, help="the bench cluster's ports: BASE+1..3")
    args = parser.parse_args()
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    started, load_at_start = time.monotonic(), os.getloadavg()[0]
    cluster = LocalCluster(CLUSTER_DIR, args.base_port)
    with tempfile.TemporaryDirectory() as scratch:
        try:
            cluster.up()
            print(f"cluster up at {cluster.bootstrap} ({time.monotonic() - started:.0f}s)", flush=True)
            watcher = Watcher(cluster.bootstrap)
            try:
                a_runs, a_info = run_arm_a(cluster, watcher, scratch, args.runs, args.megabytes, TRIGGER_S, "A2")
                b_runs, b_info = run_arm_b(cluster, watcher, scratch, args.runs, args.megabytes)
                a10_runs, a10_info = run_arm_a(cluster, watcher, scratch, args.runs, args.megabytes, DEFAULT_TRIGGER_S,
                                               "A10")
            finally:
                watcher.close()
        finally:
            cluster.started_here = True  # this bench owns its cluster directory: always stop it at the end
            cluster.down()
    elapsed = time.monotonic() - started

    early = sum(r["early"] for r in a_runs + b_runs + a10_runs)
    moves = [r["move"] for r in a_runs + b_runs + a10_runs]
    load = lambda runs: f"{statistics.median(r['load'] for r in runs):.1f}"  # noqa: E731
    wall, cpu = b_info["verify_wall"], b_info["verify_cpu"]
    headers = ["arm", "runs", "p50 s", "p95 s", "max s", "cost of one check"]
    rows = [summary_row(f"A{trigger:g}: `reassign-monitor run`, controller (trigger {trigger:g} s, local[2], owned "
                        f"throttles only)", runs,
                        f"watch: one ListPartitionReassignments a second, up to four while an owned partition moves; micro-batch {info['batch_mean_s']:.2f} s mean "
                        f"({info['batches']} batches); job uses {info['cpu_cores']:.2f} cores over the arm")
            for trigger, runs, info in ((TRIGGER_S, a_runs, a_info), (DEFAULT_TRIGGER_S, a10_runs, a10_info))]
    rows += [
            summary_row("B: upstream `ReassignPartitionsCommand --verify` every 2 s (clears ALL throttles)", b_runs,
                        f"one --verify call: {percentile(wall, 50):.2f} s wall p50 ({percentile(wall, 95):.2f} p95), "
                        f"{percentile(cpu, 50):.2f} CPU s p50 (JVM start alone, `--version`: "
                        f"{b_info['version_wall_s']:.2f} s); the loop uses {b_info['cpu_cores']:.2f} cores while it runs")]
    table_text = markdown_table(headers, rows)
    step_names = ("total", "ownership", "read", "alter", "read_back", "records")
    step_rows = [[arm] + [f"{percentile(info['sweeps'].get(n, []), 50):.2f} / {percentile(info['sweeps'].get(n, []), 95):.2f}"
                          for n in step_names] + [len(info["sweeps"].get("total", []))]
                 for arm, info in (("A2", a_info), ("A10", a10_info))]
    steps_text = markdown_table(["arm"] + [f"{n} p50 / p95 s" for n in step_names] + ["sweeps"], step_rows)
    body = (
        f"Latency from completion to throttles gone. Each run moves a one-partition topic with {args.megabytes:g} MB "
        "from one broker to another (brokers rotate per run) under `--throttle 1000000` on a local 3-node cluster "
        "(deploy/local-cluster.sh, Kafka 4.1.1). Completion = first 100 ms poll at which ListPartitionReassignments no "
        "longer lists the partition; throttles gone = first 100 ms poll at which DescribeConfigs shows none of the "
        "throttles the execute set (topic leader/follower throttled-replicas entries, broker leader/follower rates). "
        "The arms ran one after the other on the same cluster, never together.\n\n" + table_text + "\n\n"
        "Where a sweep's time goes (the controller logs each sweep's steps: the ownership refresh, the fresh read - "
        "DescribeCluster, ListPartitionReassignments, DescribeConfigs -, IncrementalAlterConfigs, the read-back until "
        "the brokers show the change, the ownership records written after; only the steps up to the alter come "
        "before the throttles are gone):\n\n" + steps_text + "\n\n"
        "- A2, A10: the job's janitor (default `--throttle-cleanup owned`) removes only what `reassign-monitor execute` "
        "recorded as its own: it subtracts the moved partition's `p:b` entries and deletes (or restores) the rates "
        "it set; foreign throttles stay. The controller lists reassignments every second, and every 0.25 s between "
        "its ticks while an owned partition reassigns, and runs the janitor's sweep the moment an owned partition "
        "leaves the list: latency = up to one look's period (0.25 s) + the tick's ownership read + the sweep's "
        "ownership refresh, fresh read and IncrementalAlterConfigs (the read-back and the records come after), "
        "whatever the trigger and however long batches take.\n"
        "- B: the upstream tool has no janitor; an operator re-runs `--verify` until it reports completion, and "
        "`--verify` then clears ALL throttles: the rates on every broker in the cluster and the whole "
        "throttled-replicas configs of every topic in the file, including throttles other people set. Here it runs "
        "on the same 2 s schedule as the job's trigger, its first call delayed by (i + 0.5) / runs x 2 s in run i "
        "so that its phase relative to the completion is spread evenly (the job's trigger phase is whatever it "
        "happens to be). Each call pays a JVM start, but it pays it before it "
        "looks at the cluster, and the clearing follows the look within a few hundred ms: the JVM start stretches the "
        "period between looks (calls longer than 2 s run back to back) rather than adding to each latency. "
        f"{b_info['cleared']} of {len(wall)} --verify calls cleared throttles.\n"
        f"- Moves lasted {percentile(moves, 50):.1f} s p50 (from the end of execute to completion). "
        f"Removals seen before completion (\"Still reassigning\" broken): {early}. The 100 ms controller loop really polled "
        f"every {percentile(watcher.periods, 50):.2f} s p50 ({percentile(watcher.periods, 95):.2f} s p95): the "
        f"resolution of every latency above. Whole bench {elapsed / 60:.1f} min.\n"
        f"- The machine is shared (other engineers' clusters and Spark jobs): 1-minute load average at the end of "
        f"each run, median, was {load(a_runs)} (A2), {load(b_runs)} (B) and {load(a10_runs)} (A10) on 2 cores "
        f"({load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end). "
        "Arms ran A2, B, A10. JVM start and micro-batch "
        "times grow with it; rerun on a quiet machine for absolute numbers.")
    print(table_text)
    print(body.split("\n\n", 2)[-1])
    write_section(TITLE, body)
    print(f"total runtime {elapsed:.0f}s")


if __name__ == "__main__":
    main()
