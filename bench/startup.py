"""Start-up cost of `reassign-monitor --help`, `--version` and one-shot `progress`, before and after, next to
Kafka's `ReassignPartitionsCommand --verify`.

"Before" is the code of TREE (`--before`: a directory holding an older commit, e.g. `git archive COMMIT | tar -x
-C TREE`), run with this repository's venv interpreter, its cwd and PYTHONPATH set to TREE so that its own
`streaming` package loads (checked: every `streaming` module its CLI loads comes from TREE). "After" is this
tree's installed `.venv/bin/reassign-monitor`.

`progress` runs against 100 moving partitions set up the way bench/poll.py does (bench/moves.py): a local
cluster of the bench's own, every partition moved from broker 1 or 2 to broker 3, which is stopped, so the
moves stay in flight. `progress` must exit 1 (moves in progress) and list the 100 replicas; `--verify`
(same 100-partition file) must say "still in progress" and runs only while all 100 still move.

Timing is wall time of the whole subprocess (interpreter or JVM start included), paired A B B A in each
round so that a drift of the shared machine's speed falls on both arms alike; the ratio after / before is
the median of the per-pair ratios. Prints a markdown table and writes it to bench/RESULTS.md, section
"Start-up (bench/startup.py)".

    .venv/bin/python bench/startup.py --before TREE [--rounds 8] [--partitions 100]

`--run N` measures `reassign-monitor run` instead, N times on a cluster of its own with one throttled move in
flight (a partition of MOVING_MB moving to another broker at 1 B/s, so about 95 KB/s: it stays in flight): from
the process start to the first published poll on /metrics (the controller's first look), to the moving replica's
progress on /metrics (its copied bytes), to the banner the driver prints once the Spark session is built, and to
the first finished Spark batch; and, each in a fresh interpreter, the import of the job's Spark side
(streaming.spark.job: pyspark, pyarrow, pandas) and building the session (JVM start and SparkSession,
`local[*]`, as `run` builds it). Section "Run start-up phases (bench/startup.py --run)".

    .venv/bin/python bench/startup.py --run 3 [--base-port 32190]
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

from bench.moves import (STOPPED, TIMEOUT_MS, alter, attempt, bootstrap_of, cluster, reassigning,  # noqa: E402
                         start_moves, stop_broker, stop_moves, throttle_brokers, wait_until)
from bench.results import markdown_table, write_section  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402

CLUSTER_ENV = {"CLUSTER_DIR": str(ROOT / ".local-cluster" / "bench-startup"), "KAFKA_BASE_PORT": "35290"}
THROTTLE = 1  # bytes/s
TOPIC = "bench-startup"
SECTION = "Start-up (bench/startup.py)"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
AFTER_CLI = [str(ROOT / ".venv" / "bin" / "reassign-monitor")]
BEFORE_CLI = [PYTHON, "-c", 'import sys; sys.argv[0] = "reassign-monitor"; from streaming.cli import main; '
                            'sys.exit(main())']
VERIFY = ["java", "-cp", str(ROOT / "deploy" / "kafka" / "lib" / "*"),
          f"-Dlog4j2.configurationFile={ROOT / 'deploy' / 'kafka' / 'log4j2.properties'}", "-Dkafka.logs.dir=/tmp",
          "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"]


def before_env(tree):
    return {**os.environ, "PYTHONPATH": str(tree)}


def check_before(tree):
    """The before arm must run TREE's own package, not this tree's (the editable install)."""
    check = subprocess.run([PYTHON, "-c", "import sys, streaming.cli, streaming.commands.progress; print('\\n'.join("
                            "m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'streaming'))"],
                           cwd=tree, env=before_env(tree), capture_output=True, text=True, check=True)
    loaded = check.stdout.split()
    stray = [f for f in loaded if not f.startswith(str(tree) + "/")]
    if not loaded or stray:
        raise RuntimeError(f"the before run would load {stray or loaded}")


def run(command, cwd=None, env=None):
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return time.monotonic() - started, result


class Arm:
    """One command whose wall times are collected; `expect(result)` must hold on every run."""

    def __init__(self, name, command, expect, before=None, guard=None):
        self.name, self.command, self.expect, self.guard = name, command, expect, guard
        self.cwd, self.env = (before, before_env(before)) if before else (ROOT, None)
        self.times = []

    def once(self):
        if self.guard:
            self.guard()
        elapsed, result = run(self.command, self.cwd, self.env)
        if not self.expect(result):
            raise RuntimeError(f"{self.name} gave {result.returncode}: "
                               f"{(result.stderr.strip() or result.stdout.strip())[-500:]}")
        self.times.append(elapsed)
        return elapsed


def paired(a, b, ratios):
    """A B then B A: each pair's ratio b/a."""
    first = (a.once(), b.once())
    second = (b.once(), a.once())
    ratios += [first[1] / first[0], second[0] / second[1]]


def lists_replicas(n):
    def expect(result):
        rows = [line for line in result.stdout.splitlines() if line.startswith(TOPIC + " ")]
        return result.returncode == 1 and len(rows) == n
    return expect


def measure(admin, bootstrap, n, rounds, plan, before):
    def all_moving():  # --verify clears every throttle once nothing listed moves
        if reassigning(admin, TOPIC) != n:
            raise RuntimeError("moves finished during the measurement")

    ok = lambda r: r.returncode == 0 and r.stdout.startswith("usage: reassign-monitor")  # noqa: E731
    progress = ["progress", "--bootstrap-server", bootstrap, "--timeout", "60"]
    arms = {
        "help_before": Arm("`--help` before", BEFORE_CLI + ["--help"], ok, before=before),
        "help_after": Arm("`--help` after", AFTER_CLI + ["--help"], lambda r: ok(r) and "--version" in r.stdout),
        "version": Arm("`--version` after", AFTER_CLI + ["--version"],
                       lambda r: r.returncode == 0 and r.stdout.startswith("reassign-monitor ")),
        "progress_before": Arm("`progress` before", BEFORE_CLI + progress, lists_replicas(n), before=before),
        "progress_after": Arm("`progress` after", AFTER_CLI + progress, lists_replicas(n)),
        "verify": Arm("Kafka `--verify`", VERIFY + ["--bootstrap-server", bootstrap, "--verify",
                                                   "--reassignment-json-file", str(plan)],
                      lambda r: r.returncode == 0 and "still in progress" in r.stdout, guard=all_moving),
    }
    ratios = {"help": [], "progress": [], "verify": []}
    for arm in arms.values():  # warm-up, not counted: page cache, JIT-less JVM class data
        arm.once()
        arm.times.clear()
    for i in range(rounds):
        paired(arms["help_before"], arms["help_after"], ratios["help"])
        arms["version"].once()
        arms["version"].once()
        paired(arms["progress_before"], arms["progress_after"], ratios["progress"])
        paired(arms["verify"], arms["progress_after"], ratios["verify"])  # progress after / --verify
        print(f"round {i + 1}/{rounds}: " + ", ".join(f"{k} {a.times[-1]:.2f}" for k, a in arms.items()),
              file=sys.stderr)
    still = reassigning(admin, TOPIC)
    return arms, ratios, still


def spread(times):
    return f"{min(times):.2f}", f"{statistics.median(times):.2f}", f"{max(times):.2f}"


def report(arms, ratios, n, rounds, still, load, before):
    ratio = {"help_after": ratios["help"], "progress_after": ratios["progress"]}
    headers = ["command", "runs", "min s", "median s", "max s", "after / before (median of pairs)"]
    rows = [[a.name, len(a.times), *spread(a.times),
             f"{statistics.median(ratio[k]):.2f}" if k in ratio else ""] for k, a in arms.items()]
    notes = (f"Before: the code of {before} (run with the same venv interpreter, its own `streaming` "
             f"package checked to be the one loaded); after: this tree's `.venv/bin/reassign-monitor`. Wall time of "
             f"the whole subprocess, {rounds} round(s) paired A B B A (one warm-up run of each command not counted); "
             f"the ratio is the median of the per-pair ratios. `progress --bootstrap-server ... --timeout 60` "
             f"(table output, exit 1, {n} replicas listed) against {n} moving partitions on a local 3-node cluster "
             f"of the bench's own (every partition moved from broker 1 or 2 to broker 3, which is stopped; "
             f"{still} still reassigning after). Kafka `--verify`: Kafka 4.1.1's ReassignPartitionsCommand with the "
             f"same {n}-partition file, paired A B B A with `progress` after (whose row also counts those runs): "
             f"`progress` after / `--verify` = {statistics.median(ratios['verify']):.2f} (median of pairs). Targets: "
             f"`--help` <= 0.3 s, `progress` <= 0.5 s (an operator's command should answer at once). 1-min load average at start / "
             f"end: {load[0]:.1f} / {load[1]:.1f}"
             + (" (other jobs shared the 2 cores: expect noise)." if max(load) > 3 else "."))
    return markdown_table(headers, rows) + "\n\n" + notes


RUN_SECTION = "Run start-up phases (bench/startup.py --run)"
BANNER = "reassign-monitor: polling "  # streaming.spark.driver prints it once the Spark session is built
IMPORT_JOB = ("import time; t = time.perf_counter(); import streaming.spark.job; "
              "print(time.perf_counter() - t)")
BUILD_SESSION = ("import tempfile, time; from streaming.spark.driver import JobConfig; from streaming.spark.job "
                 "import build_session; t = time.perf_counter(); s = build_session(JobConfig(bootstrap='', "
                 "checkpoint_location=tempfile.mkdtemp())); print(time.perf_counter() - t); s.stop()")


def fresh_seconds(code):
    """The seconds a fresh interpreter of this tree prints for `code`."""
    out = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, check=True, timeout=600).stdout
    return float(out.strip().splitlines()[-1])


MOVING_MB = 20  # at about 95 KB/s (a 1 B/s throttle's floor: one fetch per quota window, docs/progress.md): minutes
MOVING_TOPIC = "bench-run-startup"


def start_move_in_flight(local):
    """One partition of MOVING_MB on broker 1 moving to broker 2 under a 1 B/s throttle: in flight for minutes."""
    local.create_topic(MOVING_TOPIC, {0: [1]}, megabytes=MOVING_MB)
    admin = KafkaAdminClient(bootstrap_servers=local.bootstrap, request_timeout_ms=TIMEOUT_MS)
    try:
        throttle_brokers(admin, THROTTLE)
        alter(admin, topic_configs=[(MOVING_TOPIC, {"leader.replication.throttled.replicas": "*",
                                                    "follower.replication.throttled.replicas": "*"})])
        from kafka import TopicPartition

        admin.alter_partition_reassignments({TopicPartition(MOVING_TOPIC, 0): [1, 2]})
    finally:
        admin.close()


def run_phases(job_process, bootstrap, directory):
    """(s to first published poll, s to the moving replica's progress on /metrics, s to the session banner, s to
    the first Spark batch) of one `run`."""
    from tests.job_process import BATCHES, LAST_POLL

    job = job_process(bootstrap, directory / "checkpoint", directory / "job.log", "--quiet")
    started = time.monotonic()
    job.start()
    marks = {}
    try:
        while "batch" not in marks and time.monotonic() - started < 900:
            now = time.monotonic() - started
            if "poll" not in marks and job.metric(LAST_POLL):
                marks["poll"] = now
            if "progress" not in marks and job.metric("kafka_reassignment_replica_copied_bytes", topic=MOVING_TOPIC,
                                                      partition=0, broker=2) is not None:
                marks["progress"] = now
            if "session" not in marks and BANNER in job.log():
                marks["session"] = now
            if job.metric(BATCHES):
                marks["batch"] = now
            time.sleep(0.1)
    finally:
        job.stop()
    return marks.get("poll"), marks.get("progress"), marks.get("session"), marks.get("batch")


def main_run(times, base_port):
    from tests.job_process import JobProcess
    from tests.kafka_fixtures import LocalCluster

    load_at_start = os.getloadavg()[0]
    imports = [fresh_seconds(IMPORT_JOB) for _ in range(times)]
    sessions = [fresh_seconds(BUILD_SESSION) for _ in range(times)]
    local = LocalCluster(ROOT / ".local-cluster" / "bench-run-startup", base_port)
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        try:
            local.up()
            start_move_in_flight(local)
            for n in range(times):
                directory = Path(scratch) / str(n)
                directory.mkdir()
                runs.append(run_phases(JobProcess, local.bootstrap, directory))
                print(f"run {n}: first poll, first progress, session banner, first batch (s): {runs[-1]}", flush=True)
        finally:
            local.started_here = True  # the bench's own cluster directory: always stopped
            local.down()

    def med(values):
        known = [v for v in values if v is not None]
        return f"{statistics.median(known):.1f}" if known else "-"

    poll, progress, session, batch = (med(column) for column in zip(*runs))
    gap = med([b - s for _, _, s, b in runs if b is not None and s is not None])
    rows = [["`run` -> first published poll on /metrics (the controller's first look)", poll, "<= 5 s (liveness before Spark is up)"],
            ["`run` -> the move in flight's progress on /metrics", progress, "<= 5 s (a move in flight at start)"],
            ["`run` -> Spark session built (banner)", session, ""],
            ["`run` -> first Spark batch finished", batch, "measure and report"],
            ["of which: import of the job's Spark side (fresh interpreter)", med(imports), ""],
            ["of which: JVM start + SparkSession (fresh interpreter)", med(sessions), ""],
            ["of which: session banner -> first batch (query start, the source's Python processes, first "
             "micro-batch planning, the task workers' start, the batch)", gap, ""]]
    table = markdown_table(["phase", "median s", "target"], rows)
    text = (f"{times} runs of `reassign-monitor run --quiet` (default trigger and master) on a local 3-node "
            f"cluster with one throttled move in flight ({MOVING_MB} MB at a 1 B/s throttle), fresh checkpoint each; "
            f"the import and session rows are {times} fresh interpreters each. The rows marked \"of which\" are "
            f"measured apart and overlap the run's own phases: the controller polls while the driver imports and "
            f"builds the session. 1-min load average at start / end: "
            f"{load_at_start:.1f} / {os.getloadavg()[0]:.1f}.\n\n{table}")
    print(text)
    write_section(RUN_SECTION, text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a tree with older code: the before arm of `--help` and `progress`")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--run", type=int, default=0, help="measure `run` start-up phases this many times instead")
    parser.add_argument("--base-port", type=int, default=32190, help="--run: the bench cluster's ports BASE+1..3")
    args = parser.parse_args()
    if args.run:
        main_run(args.run, args.base_port)
        return
    if not args.before:
        parser.error("--before TREE is needed (or --run N)")
    before = Path(args.before).resolve()
    check_before(before)
    n = args.partitions
    load_at_start = os.getloadavg()[0]
    started_here = "running" not in cluster(CLUSTER_ENV, "status")
    # Ctrl-C or a kill still cancels the moves, deletes the topic and stops the cluster.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    admin = None
    try:
        cluster(CLUSTER_ENV, "up")
        bootstrap = bootstrap_of(CLUSTER_ENV)
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
        throttle_brokers(admin, THROTTLE)
        stop_broker(CLUSTER_ENV, admin, STOPPED)
        with tempfile.TemporaryDirectory() as workdir:
            plan = Path(workdir) / f"{TOPIC}.json"
            plan.write_text(json.dumps({"version": 1, "partitions": [
                {"topic": TOPIC, "partition": p, "replicas": [STOPPED]} for p in range(n)]}))
            print(f"{n} partitions: creating and starting the moves", file=sys.stderr)
            start_moves(admin, bootstrap, TOPIC, n)
            try:
                wait_until(lambda: reassigning(admin, TOPIC) == n, 120, f"{n} reassigning partitions")
                arms, ratios, still = measure(admin, bootstrap, n, args.rounds, plan, before)
            finally:
                stop_moves(admin, TOPIC, n)
                wait_until(lambda: TOPIC not in admin.list_topics(), 120, f"{TOPIC} deleted")
    finally:
        try:
            if admin is not None:
                admin.close()
                cluster(CLUSTER_ENV, "up")  # the stopped broker back, so that its throttle configs can go too
                admin = KafkaAdminClient(bootstrap_servers=bootstrap_of(CLUSTER_ENV), request_timeout_ms=TIMEOUT_MS)
                wait_until(lambda: attempt(throttle_brokers, admin, None), 60, "throttle rates removed")
                admin.close()
        finally:
            if started_here:
                cluster(CLUSTER_ENV, "down")
    table = report(arms, ratios, n, args.rounds, still, (load_at_start, os.getloadavg()[0]), before)
    print(table)
    write_section(SECTION, table)


if __name__ == "__main__":
    main()
