"""Cost of one cluster poll and of the `progress` one-shot, next to `kafka-reassign-partitions --verify`.

For 100 / 1,000 / 5,000 reassigning partitions on a local cluster of its own: a topic of N partitions with
one 2 KB record each, leaders on brokers 1 and 2, every partition moved to broker 3 under a 1 B/s
throttle, with broker 3 stopped. Why stopped: a rate throttle cannot keep small partitions moving.
Measured here on a fresh cluster at 1 B/s, 200 partitions x 2 KB finished within 3 s and 1,000 x 20 KB
within 5 s (a fetch made while the quota is not yet exceeded carries up to 10 MiB), so holding 5,000
moves for a minute would take gigabytes of data. A move to a stopped broker stays in flight with no
data at all; the bench checks that all N still move after measuring.

Per size: the poll's wall time (p50 / p95 over POLLS polls) and admin requests, then end to end as
subprocesses (median of RUNS): `reassign-monitor progress` (table), the same with the reassignment file,
and Kafka's ReassignPartitionsCommand --verify with that file (it would clear every throttle once nothing
listed moves, so it runs only while all N still move). Prints a markdown table and writes it to
bench/RESULTS.md, section "Poll (bench/poll.py)".

    .venv/bin/python bench/poll.py [--sizes 100,1000,5000] [--polls 20] [--runs 3]
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.moves import (RECORD_BYTES, STOPPED, TIMEOUT_MS, attempt, bootstrap_of, cluster, reassigning,  # noqa: E402
                         start_moves, stop_broker, stop_moves, throttle_brokers, wait_until)
from bench.results import markdown_table, write_section  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402

from streaming.cluster.admin import KafkaClusterAdmin  # noqa: E402
from streaming.cluster.poller import poll  # noqa: E402

CLUSTER_ENV = {"CLUSTER_DIR": str(ROOT / ".local-cluster" / "bench"), "KAFKA_BASE_PORT": "35090",
               "KAFKA_HEAP": "1g"}  # 5,000 partitions x 2 replicas do not fit the default 320m heap comfortably
THROTTLE = 1  # bytes/s
SECTION = "Poll (bench/poll.py)"
VERIFY = ["java", "-cp", str(ROOT / "deploy" / "kafka" / "lib" / "*"),
          f"-Dlog4j2.configurationFile={ROOT / 'deploy' / 'kafka' / 'log4j2.properties'}", "-Dkafka.logs.dir=/tmp",
          "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"]
MONITOR = str(ROOT / ".venv" / "bin" / "reassign-monitor")


def timed(command, expect):
    """Wall seconds of a subprocess; `expect(stdout)` must hold (the tool did the real work)."""
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - started
    if not expect(result):
        raise RuntimeError(f"{command[0]} ... gave {result.returncode}: {result.stderr.strip()[-500:]}")
    return elapsed


def measure(admin, bootstrap, n, polls, runs, workdir):
    topic = f"bench-poll-{n}"
    print(f"{n} partitions: creating and starting the moves", file=sys.stderr)
    start_moves(admin, bootstrap, topic, n)
    try:
        wait_until(lambda: reassigning(admin, topic) == n, 120, f"{n} reassigning partitions")
        monitor = KafkaClusterAdmin(bootstrap, timeout_s=60)
        try:
            poll(monitor)  # warm: connections to every broker, API versions
            snapshots = [poll(monitor) for _ in range(polls)]
        finally:
            monitor.close()
        durations = [s.duration_s for s in snapshots]
        errors = {e.api for s in snapshots for e in s.errors}
        moving = min(len(s["reassignments"]) for s in snapshots)

        plan = workdir / f"{topic}.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": topic, "partition": p, "replicas": [STOPPED]} for p in range(n)]}))
        base = [MONITOR, "progress", "--bootstrap-server", bootstrap, "--timeout", "60"]
        in_progress = lambda r: r.returncode == 1  # noqa: E731
        one_shot = [timed(base, in_progress) for _ in range(runs)]
        with_file = [timed(base + ["--reassignment-json-file", str(plan)], in_progress) for _ in range(runs)]
        verify = []
        for _ in range(runs):
            # --verify clears every throttle once nothing listed moves: run it only while all N move.
            if reassigning(admin, topic) != n:
                raise RuntimeError("moves finished during the measurement")
            verify.append(timed(VERIFY + ["--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file",
                                          str(plan)], lambda r: r.returncode == 0 and "still in progress" in r.stdout))
        still = reassigning(admin, topic)
    finally:
        stop_moves(admin, topic, n)
        wait_until(lambda: topic not in admin.list_topics(), 120, f"{topic} deleted")
    return {"n": n, "p50": np.percentile(durations, 50), "p95": np.percentile(durations, 95),
            "requests": statistics.median(s.requests for s in snapshots), "moving": moving, "errors": errors,
            "one_shot": statistics.median(one_shot), "with_file": statistics.median(with_file),
            "verify": statistics.median(verify), "still": still}


def report(results, polls, runs, load=None):
    headers = ["reassigning partitions", "poll p50 ms", "poll p95 ms", "admin requests / poll",
               "`progress` s", "`progress --reassignment-json-file` s", "Kafka `--verify` s",
               "still reassigning after"]
    rows = [[f"{r['n']:,}", f"failed: {r['failed']}"] + [""] * (len(headers) - 2) if "failed" in r else
            [f"{r['n']:,}", f"{1000 * r['p50']:.0f}", f"{1000 * r['p95']:.0f}", f"{r['requests']:.0f}",
             f"{r['one_shot']:.2f}", f"{r['with_file']:.2f}", f"{r['verify']:.2f}", f"{r['still']:,}"]
            for r in results]
    notes = [f"Local 3-node cluster (1 GB heaps) on the same 2-core machine. Each partition holds one "
             f"{RECORD_BYTES:,}-byte record, has its leader on broker 1 or 2 and moves to broker 3, which is "
             f"stopped (see the docstring: a rate throttle cannot hold small partitions), under a {THROTTLE} B/s "
             f"throttle with `*` throttled replicas. Poll: `streaming.cluster.poller.poll` as the CLI calls it (two "
             f"brokers answer DescribeLogDirs), p50/p95 of {polls} polls after one warm-up. Commands: wall time "
             f"end to end as subprocesses (interpreter or JVM start included, table output), median of {runs}; "
             f"`--verify` is Kafka 4.1.1's ReassignPartitionsCommand with the same file. Poll errors: "
             + (", ".join(sorted({e for r in results for e in r.get("errors", ())})) or "none") + "."
             + (f" 1-min load average at start / end: {load[0]:.1f} / {load[1]:.1f}"
                + (" (other jobs shared the 2 cores: expect noise)." if max(load) > 3 else ".") if load else "")]
    return markdown_table(headers, rows) + "\n\n" + "\n".join(notes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    started_here = "running" not in cluster(CLUSTER_ENV, "status")
    # Ctrl-C or a kill still cancels the moves, deletes the topic and stops the cluster (finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cluster(CLUSTER_ENV, "up")
    # Every client (ours, Kafka's, the producer) bootstraps from the brokers that stay up.
    bootstrap = bootstrap_of(CLUSTER_ENV)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    results = []
    try:
        throttle_brokers(admin, THROTTLE)
        stop_broker(CLUSTER_ENV, admin, STOPPED)
        with tempfile.TemporaryDirectory() as workdir:
            for n in (int(s) for s in args.sizes.split(",")):
                try:
                    results.append(measure(admin, bootstrap, n, args.polls, args.runs, Path(workdir)))
                except Exception as error:  # say what happened at this size and go on with the others
                    results.append({"n": n, "failed": f"{type(error).__name__}: {error}"})
                print(report(results, args.polls, args.runs).split("\n\n")[0].splitlines()[-1], file=sys.stderr)
    finally:
        try:
            admin.close()
            cluster(CLUSTER_ENV, "up")  # the stopped broker back, so that its throttle configs can be removed too
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
            wait_until(lambda: attempt(throttle_brokers, admin, None), 60, "throttle rates removed from every broker")
            admin.close()
        finally:
            if started_here:
                cluster(CLUSTER_ENV, "down")
    table = report(results, args.polls, args.runs, (load_at_start, os.getloadavg()[0]))
    print(table)
    write_section(SECTION, table)


if __name__ == "__main__":
    main()
