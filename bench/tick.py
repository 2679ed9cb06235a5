"""The controller's CPU time per tick, before (a git revision) against after (this tree), paired A B B A.

The controller's ticks run on the driver about every second for as long as `run` runs, so what one costs is
the job's idle cost before Spark's own. Each arm is a child process that imports the controller of its tree
(the revision's is extracted with `git archive` into a temporary directory) and ticks it on the in-memory
cluster the unit tests use (tests/fake_cluster.py, tests/controller_support.py: no network, so only the
controller's own work counts), its clock moved one tick interval per tick, in two scenes:
- idle: nothing moves, nothing is owned (what `run` does while no batch runs);
- moving: one partition of ours reassigns, a batch's findings handed over every tenth tick, the ledger read
  every tick (what it does while a move of ours runs).
Measured: process CPU seconds (time.process_time) over TICKS ticks after WARMUP ticks, per tick in
microseconds, and - in one more run of each arm, under cProfile - the Python function calls per tick, which no
other process on the machine changes; the arms run in the order A B B A, ROUNDS times over, and the table shows
each arm's median and least run (on a loaded machine the least is the steadiest: other processes only add to it).

    .venv/bin/python bench/tick.py [--before main] [--ticks 2000] [--rounds 3]
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.results import markdown_table, write_section  # noqa: E402

WARMUP = 200
SCENES = ("idle", "moving")

# Run in the child, from the arm's tree: only names both trees have (tests.controller_support's a_controller,
# FakeCluster, MemoryLedger, Ownership) are used.
CHILD = """
import cProfile, json, os, pstats, sys, time
import streaming
assert streaming.__file__.startswith(os.getcwd()), streaming.__file__  # the arm's tree, not the installed one
from tests.controller_support import a_controller, findings
from tests.fake_cluster import FakeCluster
from streaming.control.ownership.records import EntryClaim, Move, Ownership, RateClaim
from streaming.control.ownership.store import MemoryLedger
from streaming.vocabulary.states import OwnershipState

scene, warmup, ticks, counting = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "calls"
cluster, ledger = FakeCluster(topics={("t", "leader"): "0:1", ("t", "follower"): "0:2"},
                              rates={(1, "leader"): 1000000, (2, "follower"): 1000000}), MemoryLedger()
if scene == "moving":
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    ledger = MemoryLedger.of(Ownership(
        request_id="R1", state=OwnershipState.STARTED, created_ms=1, updated_ms=1, auto_remove=True,
        moves=(Move("t", 0, (1,), (2,)),), entries=(EntryClaim("t", "leader", 0, 1), EntryClaim("t", "follower", 0, 2)),
        rates=(RateClaim(1, "leader", 1000000, None), RateClaim(2, "follower", 1000000, None))))
controller, _, clock = a_controller(cluster, ledger, trigger_s=10.0)
snapshot = cluster.snapshot()
profile = cProfile.Profile()
for i in range(warmup + ticks):
    if i == warmup:
        started = time.process_time()
        if counting:
            profile.enable()
    if scene == "moving" and i % 10 == 0:
        controller.hand_over(findings(snapshot, batch_id=i, tracks_moves=True, reported={("t", 0)}))
    controller.tick()
    clock.now += 1.0
profile.disable()
print(json.dumps(pstats.Stats(profile).total_calls / ticks if counting else (time.process_time() - started) / ticks))
"""


def tree_of(revision, directory):
    """The files of `revision` (git archive) under `directory`."""
    archive = Path(directory) / "tree.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), revision], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")
    return Path(directory)


def revision_of(name):
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", name], check=True, capture_output=True,
                          text=True).stdout.strip()


def per_tick(tree, scene, ticks, measure="cpu"):
    """The CPU seconds (`measure` "cpu") or Python function calls ("calls", under cProfile) per tick."""
    result = subprocess.run([sys.executable, "-c", CHILD, scene, str(WARMUP), str(ticks), measure], cwd=tree,
                            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                            check=True)
    return json.loads(result.stdout)


def change(a, b):
    return f"{(b - a) / a * 100:+.1f} %"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="the git revision of arm A")
    parser.add_argument("--ticks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="how many times A B B A runs")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-tick-") as directory:
        arms = {"A": tree_of(args.before, directory), "B": ROOT}
        for scene in SCENES:
            runs = {"A": [], "B": []}
            for arm in "ABBA" * args.rounds:
                runs[arm].append(per_tick(arms[arm], scene, args.ticks) * 1e6)
            (a_median, a_least), (b_median, b_least) = ((statistics.median(runs[arm]), min(runs[arm])) for arm in "AB")
            a_calls, b_calls = (per_tick(arms[arm], scene, args.ticks, "calls") for arm in "AB")
            rows.append([scene, f"{a_median:.0f}", f"{a_least:.0f}", f"{b_median:.0f}", f"{b_least:.0f}",
                         change(a_median, b_median), change(a_least, b_least), f"{a_calls:.0f}", f"{b_calls:.0f}",
                         change(a_calls, b_calls)])
    table = markdown_table(["scene", "A median µs/tick", "A least", "B median", "B least", "B vs A (median)",
                            "B vs A (least)", "A calls/tick", "B calls/tick", "B vs A (calls)"], rows)
    print(table)
    before, after = revision_of(args.before), revision_of("HEAD")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    write_section("Controller CPU per tick, before / after (bench/tick.py)", f"""
The controller's CPU time per tick on the in-memory cluster of the unit tests (no network: only its own work),
{args.ticks} ticks after {WARMUP} of warm-up, runs in the order A B B A {args.rounds} times over. A: the tree of
commit {before}; B: the working tree at commit {after}. Idle: nothing moves or is owned; moving: one owned
partition reassigns, a batch's findings every tenth tick. On {os.cpu_count()} cores, load {load} at the end, {when}.
The calls per tick are the steadier figure: on a loaded machine one arm's CPU times vary by a third between runs.

{table}
""")


if __name__ == "__main__":
    main()
