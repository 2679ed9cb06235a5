"""What the streaming job costs while nothing moves, and how soon `run` is up: before (main, no controller)
against after (this tree), paired A B B A on one cluster of the bench's own.

Each arm starts `reassign-monitor run` at the default trigger (10 s) and the default master on an idle
three-node cluster (deploy/local-cluster.sh, started here and stopped at the end) with a fresh checkpoint
and measures:
- start-up: seconds from the process start to the first published liveness sample on /metrics
  (kafka_reassignment_monitor_last_poll_timestamp_seconds) and to the first finished Spark batch;
- idle: after SETTLE_S more seconds, the CPU (user + system, all processes of the job's session: the Python
  driver, the Spark JVM, Spark's Python workers) and RSS (sum of VmRSS of those processes, sampled every
  second, mean and max) over a fixed WINDOW_S;
- moving: the same while one partition moves under a 1 MB/s throttle (started with `execute`; cancelled
  after the window), after one batch reported it.

    .venv/bin/python bench/idle.py [--base-port 43190] [--window 60]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.results import markdown_table, write_section  # noqa: E402
from bench.sessions import session_cpu_by_pid, session_processes, session_pss_mb, session_rss_mb  # noqa: E402
from tests.job_process import BATCHES, CLI, LAST_POLL, JobProcess  # noqa: E402
from tests.kafka_fixtures import LocalCluster, wait_for  # noqa: E402

PYTHON = str(ROOT / ".venv" / "bin" / "python")
BEFORE_CLI = [PYTHON, "-c", 'import sys; sys.argv[0] = "reassign-monitor"; from streaming.cli import main; '
                            'sys.exit(main())']
# Idle is measured from 70 s after the first batch: Spark's worker factory stops pooled Python workers after a
# minute without work (IDLE_WORKER_TIMEOUT_NS), so from then on the job holds what it holds for the hours
# nothing moves. At 20 s (the earlier setting) the window still held the first batch's pooled workers.
SETTLE_S = 70.0
MOVE_MEGABYTES = 90  # at 1 MB/s it outlasts the window
THROTTLE = 1_000_000
IDLE_TITLE = "Idle cost (bench/idle.py)"
STARTUP_TITLE = "Run start-up (bench/idle.py)"


def window(job, seconds):
    """(cores, mean RSS MB, max RSS MB, batches, mean PSS MB, driver CPU ms per second) of the job's session over
    `seconds`. The driver process alone (the session's leader, the `run` process) is mostly the controller while no
    batch runs: it ticks once a second, so its CPU per second is the controller's cost per tick. CPU is summed per
    process from its first to its last sample, so a process that exits in the window (Spark stops idle Python
    workers) keeps what it used instead of taking its whole past out of the sum."""
    sid = job.process.pid
    first, last = session_cpu_by_pid(sid), {}
    t0, batches0 = time.monotonic(), job.metric(BATCHES) or 0
    samples, pss = [], []
    while time.monotonic() - t0 < seconds:
        samples.append(session_rss_mb(sid))
        pss.append(session_pss_mb(sid))
        last.update(session_cpu_by_pid(sid))
        time.sleep(1.0)
    last.update(session_cpu_by_pid(sid))
    elapsed = time.monotonic() - t0
    cores = sum(cpu - first.get(pid, 0.0) for pid, cpu in last.items()) / elapsed
    driver_ms = 1000 * (last.get(sid, 0.0) - first.get(sid, 0.0)) / elapsed
    return (cores, statistics.mean(samples), max(samples), int((job.metric(BATCHES) or 0) - batches0),
            statistics.mean(pss), driver_ms)


class Arm:
    def __init__(self, name, cli, cwd, env):
        self.name, self.cli, self.cwd, self.env = name, cli, cwd, env
        self.runs = []


def one_run(cluster, arm, scratch, seconds, index):
    directory = Path(scratch) / f"{arm.name}-{index}"
    directory.mkdir()
    job = JobProcess(cluster.bootstrap, directory / "checkpoint", directory / "job.log", "--quiet")
    job.args[0:1] = arm.cli
    log = open(job.log_path, "a")
    started = time.monotonic()
    job.process = subprocess.Popen(job.args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, cwd=arm.cwd, env={**os.environ, **arm.env})
    topic = f"bench-idle-{arm.name}-{index}-{os.urandom(3).hex()}"
    try:
        first_poll = wait_for(lambda: job.metric(LAST_POLL) and time.monotonic() - started, 600, 0.1, "first poll")
        first_batch = wait_for(lambda: job.metric(BATCHES) and time.monotonic() - started, 600, 0.1, "first batch")
        time.sleep(SETTLE_S)  # the fixed settling time of the measurement itself
        idle = window(job, seconds) + (session_processes(job.process.pid),)
        cluster.create_topic(topic, {0: [1]}, megabytes=MOVE_MEGABYTES)
        plan = directory / "plan.json"
        plan.write_text('{"version": 1, "partitions": [{"topic": "%s", "partition": 0, "replicas": [2]}]}' % topic)
        subprocess.run([CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", str(plan),
                        "--throttle", str(THROTTLE)], check=True, capture_output=True, timeout=120)
        batches = job.metric(BATCHES)
        wait_for(lambda: job.metric(BATCHES) > batches, 60, 0.5, "a batch with the move")
        moving = window(job, seconds) + (session_processes(job.process.pid),)
        subprocess.run([CLI, "cancel", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                        str(plan)], capture_output=True, timeout=120)
        result = {"first_poll": first_poll, "first_batch": first_batch, "idle": idle, "moving": moving,
                  "load": os.getloadavg()[0]}
        print(f"{arm.name} run {index}: {result}", flush=True)
        arm.runs.append(result)
    finally:
        job.stop()
        cluster.delete_topics([topic])


def tree_of(commit):
    """The files of `commit` (git archive) in a directory of their own: no git worktree is registered."""
    path = ROOT / ".local-cluster" / f"before-idle-{commit[:10]}"
    if not path.exists():
        path.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(path)], input=archive, check=True)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-port", type=int, default=43190, help="the bench cluster's ports: BASE+1..3, +101..103")
    parser.add_argument("--window", type=float, default=60.0, help="seconds of each measuring window")
    parser.add_argument("--before", default="main", help="the commit to compare with")
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.before], capture_output=True, text=True,
                            check=True).stdout.strip()
    before_tree = tree_of(commit)
    before = Arm("before", BEFORE_CLI, before_tree, {"PYTHONPATH": str(before_tree)})
    after = Arm("after", [CLI], ROOT, {"PYTHONPATH": str(ROOT)})  # this tree, wherever the venv installed from
    started = time.monotonic()
    cluster = LocalCluster(ROOT / ".local-cluster" / "bench-idle", args.base_port)
    with tempfile.TemporaryDirectory() as scratch:
        try:
            cluster.up()
            for index, arm in enumerate((before, after, after, before)):  # A B B A
                one_run(cluster, arm, scratch, args.window, index)
        finally:
            cluster.started_here = True  # this bench owns its cluster directory: always stop it at the end
            cluster.down()
    elapsed = time.monotonic() - started

    def median(arm, phase, i):
        return statistics.median(r[phase][i] for r in arm.runs)

    rows = []
    for arm in (before, after):
        for phase in ("idle", "moving"):
            rows.append([f"{arm.name} ({commit[:8]})" if arm is before else arm.name, phase, f"{median(arm, phase, 0):.3f}",
                         f"{median(arm, phase, 1):.0f}", f"{median(arm, phase, 2):.0f}", f"{median(arm, phase, 4):.0f}",
                         f"{median(arm, phase, 6):.0f}", f"{median(arm, phase, 3):.0f}", f"{median(arm, phase, 5):.1f}"])
    loads = ", ".join(f"{r['load']:.1f}" for arm in (before, after) for r in arm.runs)
    idle_table = markdown_table(["arm", "phase", "cores", "RSS mean MB", "RSS max MB", "PSS mean MB", "processes",
                                 f"batches in {args.window:g} s", "driver CPU ms/s (idle: per controller tick)"], rows)
    write_section(IDLE_TITLE, (
        f"`reassign-monitor run` at the default 10 s trigger and master on an idle local 3-node cluster, medians of "
        f"two runs per arm paired A B B A (before = `{args.before}` at {commit[:8]}). CPU "
        f"and RSS of every process in the job's session over {args.window:g} s, {SETTLE_S:g} s after the first batch "
        f"(idle), then over {args.window:g} s while one partition moves under a 1 MB/s throttle (moving). RSS is the "
        f"sum of the processes' VmRSS (shared pages counted in each); PSS divides each shared page among its "
        f"processes (Spark's Python workers are forked from daemons and share their pages). The driver's CPU is the `run` "
        f"process's alone: while nothing moves no batch runs and it is the controller, which ticks once a second.\n\n{idle_table}\n\n"
        f"1-minute load average at the end of each run (the two before runs, then the two after runs): {loads} on 2 "
        f"cores shared with other engineers' clusters and jobs. Whole bench {elapsed / 60:.1f} min."))
    start_rows = [[arm.name, f"{statistics.median(r['first_poll'] for r in arm.runs):.1f}",
                   f"{statistics.median(r['first_batch'] for r in arm.runs):.1f}"] for arm in (before, after)]
    start_table = markdown_table(["arm", "run -> first published poll s", "run -> first Spark batch s"], start_rows)
    write_section(STARTUP_TITLE, (
        f"From the `run` process start to the first liveness sample on /metrics and to the first finished Spark "
        f"batch (medians of the two runs per arm of {IDLE_TITLE}; same loads).\n\n{start_table}"))
    print(idle_table)
    print(start_table)


if __name__ == "__main__":
    main()
