"""Start-up cost of `reassign-monitor --help`, `--version` and one-shot `progress`, before and after
(issue 11, section 4), next to Kafka's `ReassignPartitionsCommand --verify`.

"Before" is commit BEFORE (the code before this round of start-up work), checked out as a git worktree
outside the repository and run with this repository's venv interpreter, its cwd and PYTHONPATH set to the
worktree so that its own `streaming` package loads (checked: that tree has no `streaming.vocabulary`).
"After" is this tree's installed `.venv/bin/reassign-monitor`.

`progress` runs against 100 moving partitions set up the way bench/poll.py does (bench/moves.py): a local
cluster of the bench's own, every partition moved from broker 1 or 2 to broker 3, which is stopped, so the
moves stay in flight. `progress` must exit 1 (moves in progress) and list the 100 replicas; `--verify`
(same 100-partition file) must say "still in progress" and runs only while all 100 still move.

Timing is wall time of the whole subprocess (interpreter or JVM start included), paired A B B A in each
round so that a drift of the shared machine's speed falls on both arms alike; the ratio after / before is
the median of the per-pair ratios. Prints a markdown table and writes it to bench/RESULTS.md, section
"Start-up (bench/startup.py)".

    .venv/bin/python bench/startup.py [--rounds 8] [--partitions 100]
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

from bench.moves import (STOPPED, TIMEOUT_MS, attempt, bootstrap_of, cluster, reassigning,  # noqa: E402
                         start_moves, stop_broker, stop_moves, throttle_brokers, wait_until)
from bench.results import markdown_table, write_section  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402

BEFORE = "232d341"
WORKTREE = Path(tempfile.gettempdir()) / f"before-{BEFORE}"
CLUSTER_ENV = {"CLUSTER_DIR": str(ROOT / ".local-cluster" / "bench-startup"), "KAFKA_BASE_PORT": "35290"}
THROTTLE = 1  # bytes/s
TOPIC = "bench-startup"
SECTION = "Start-up (bench/startup.py)"
PYTHON = str(ROOT / ".venv" / "bin" / "python")
AFTER_CLI = [str(ROOT / ".venv" / "bin" / "reassign-monitor")]
BEFORE_CLI = [PYTHON, "-c", 'import sys; sys.argv[0] = "reassign-monitor"; from streaming.cli import main; '
                            'sys.exit(main())']
BEFORE_ENV = {**os.environ, "PYTHONPATH": str(WORKTREE)}
VERIFY = ["java", "-cp", str(ROOT / "deploy" / "kafka" / "lib" / "*"),
          f"-Dlog4j2.configurationFile={ROOT / 'deploy' / 'kafka' / 'log4j2.properties'}", "-Dkafka.logs.dir=/tmp",
          "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"]


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def add_worktree():
    if WORKTREE.exists():
        git("worktree", "remove", "--force", str(WORKTREE))
    git("worktree", "add", "--detach", str(WORKTREE), BEFORE)
    # The before tree must be the one imported: its own package, not this tree's (editable install). It has
    # no streaming/vocabulary; every streaming module its CLI loads must come from the worktree.
    if (WORKTREE / "streaming" / "vocabulary").exists():
        raise RuntimeError(f"{WORKTREE} is not the tree before streaming/vocabulary")
    check = subprocess.run([PYTHON, "-c", "import sys, streaming.cli, streaming.commands.progress; print('\\n'.join("
                            "m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'streaming'))"],
                           cwd=WORKTREE, env=BEFORE_ENV, capture_output=True, text=True, check=True)
    loaded = check.stdout.split()
    stray = [f for f in loaded if not f.startswith(str(WORKTREE) + "/")]
    if not loaded or stray or any("/vocabulary/" in f for f in loaded):
        raise RuntimeError(f"the before run would load {stray or loaded}")


def run(command, cwd=None, env=None):
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return time.monotonic() - started, result


class Arm:
    """One command whose wall times are collected; `expect(result)` must hold on every run."""

    def __init__(self, name, command, expect, before=False, guard=None):
        self.name, self.command, self.expect, self.guard = name, command, expect, guard
        self.cwd, self.env = (WORKTREE, BEFORE_ENV) if before else (ROOT, None)
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


def measure(admin, bootstrap, n, rounds, plan):
    def all_moving():  # --verify clears every throttle once nothing listed moves
        if reassigning(admin, TOPIC) != n:
            raise RuntimeError("moves finished during the measurement")

    ok = lambda r: r.returncode == 0 and r.stdout.startswith("usage: reassign-monitor")  # noqa: E731
    progress = ["progress", "--bootstrap-server", bootstrap, "--timeout", "60"]
    arms = {
        # The before tree has no --version: its help proves which CLI ran.
        "help_before": Arm("`--help` before", BEFORE_CLI + ["--help"], lambda r: ok(r) and "--version" not in r.stdout,
                           before=True),
        "help_after": Arm("`--help` after", AFTER_CLI + ["--help"], lambda r: ok(r) and "--version" in r.stdout),
        "version": Arm("`--version` after", AFTER_CLI + ["--version"],
                       lambda r: r.returncode == 0 and r.stdout.startswith("reassign-monitor ")),
        "progress_before": Arm("`progress` before", BEFORE_CLI + progress, lists_replicas(n), before=True),
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


def report(arms, ratios, n, rounds, still, load):
    ratio = {"help_after": ratios["help"], "progress_after": ratios["progress"]}
    headers = ["command", "runs", "min s", "median s", "max s", "after / before (median of pairs)"]
    rows = [[a.name, len(a.times), *spread(a.times),
             f"{statistics.median(ratio[k]):.2f}" if k in ratio else ""] for k, a in arms.items()]
    notes = (f"Before: commit {BEFORE} (a git worktree run with the same venv interpreter, its own `streaming` "
             f"package checked to be the one loaded); after: this tree's `.venv/bin/reassign-monitor`. Wall time of "
             f"the whole subprocess, {rounds} round(s) paired A B B A (one warm-up run of each command not counted); "
             f"the ratio is the median of the per-pair ratios. `progress --bootstrap-server ... --timeout 60` "
             f"(table output, exit 1, {n} replicas listed) against {n} moving partitions on a local 3-node cluster "
             f"of the bench's own (every partition moved from broker 1 or 2 to broker 3, which is stopped; "
             f"{still} still reassigning after). Kafka `--verify`: Kafka 4.1.1's ReassignPartitionsCommand with the "
             f"same {n}-partition file, paired A B B A with `progress` after (whose row also counts those runs): `progress` "
             f"after / `--verify` = "
             f"{statistics.median(ratios['verify']):.2f} (median of pairs). Targets (issue 11): `--help` <= 0.3 s, "
             f"`progress` <= 0.5 s. 1-min load average at start / end: {load[0]:.1f} / {load[1]:.1f}"
             + (" (other jobs shared the 2 cores: expect noise)." if max(load) > 3 else "."))
    return markdown_table(headers, rows) + "\n\n" + notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args()
    n = args.partitions
    load_at_start = os.getloadavg()[0]
    started_here = "running" not in cluster(CLUSTER_ENV, "status")
    # Ctrl-C or a kill still cancels the moves, deletes the topic, stops the cluster and removes the worktree.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    admin = None
    try:
        add_worktree()
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
                arms, ratios, still = measure(admin, bootstrap, n, args.rounds, plan)
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
            try:
                if started_here:
                    cluster(CLUSTER_ENV, "down")
            finally:
                if WORKTREE.exists():
                    git("worktree", "remove", "--force", str(WORKTREE))
    table = report(arms, ratios, n, args.rounds, still, (load_at_start, os.getloadavg()[0]))
    print(table)
    write_section(SECTION, table)


if __name__ == "__main__":
    main()
