"""ETA accuracy: the budget model's ETAs beside today's per-replica ETAs, same moves, same run.

On a three-node cluster of its own (deploy/local-cluster.sh, started here and stopped at the end), two
`reassign-monitor run` jobs watch the same moves, one at a 2 s trigger and one at the default 10 s
trigger: three one-partition topics of 10, 20 and 30 MB on broker 1 gaining a replica on broker 3 under one
2 MB/s leader and follower throttle (tests/eta_scenario.py, the scenario of the real-cluster test). Each
run waits until broker 3 is in all three ISRs (the actual finish, polled every 0.25 s), then judges every
replica record written after its replica passed 25 %: the model's `eta_seconds`, and the per-replica ETA
the job reported before the model (remaining bytes / the replica's own smoothed copy rate; these leaders do
not grow), recomputed from the same record. Bound: |ETA - actual remaining| <= max(25 %, 5 s).

    .venv/bin/python bench/eta.py [--runs 2]
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.results import markdown_table, write_section  # noqa: E402
from tests import eta_scenario as eta  # noqa: E402
from tests.job_process import JobProcess, read_topic  # noqa: E402
from tests.kafka_fixtures import LocalCluster, wait_for  # noqa: E402

CLUSTER_DIR = Path(os.environ.get("BENCH_CLUSTER_DIR", ROOT / ".local-cluster" / "bench-eta"))
BASE_PORT = int(os.environ.get("BENCH_KAFKA_BASE_PORT", "43290"))
TRIGGERS = ("2s", "10s")
TITLE = "ETA accuracy: budget model against per-replica ETA (bench/eta.py)"


def one_run(cluster, jobs, index):
    topics = eta.create_topics(cluster, f"bench-eta-{index}")
    watch = eta.FinishWatch(cluster.bootstrap, topics).start()
    try:
        eta.start_moves(cluster, topics)
        wait_for(watch.done, 300, interval_s=1, message="the three moves to finish")
        return {trigger: eta.judged(read_topic(job.bootstrap, job.progress_topic), watch.finished)
                for trigger, job in jobs.items()}
    finally:
        watch.stop()
        eta.clear_throttles(cluster, topics)
        cluster.delete_topics(topics)


def pct(value):
    return "-" if value is None else f"{100 * value:.0f} %"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    cluster = LocalCluster(CLUSTER_DIR, BASE_PORT).up()
    jobs = {}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for trigger in TRIGGERS:
                directory = Path(scratch) / trigger
                directory.mkdir()
                jobs[trigger] = JobProcess(cluster.bootstrap, directory / "checkpoint", directory / "job.log",
                                           "--trigger-interval", trigger, "--master", "local[1]",
                                           "--throttle-cleanup", "off", "--quiet").start()
            for job in jobs.values():
                job.wait_first_poll(600)  # a loaded machine starts Spark slowly: a bench may wait
            judged = {trigger: [] for trigger in TRIGGERS}
            for index in range(args.runs):
                for trigger, rows in one_run(cluster, jobs, index).items():
                    judged[trigger] += rows
                    print(f"run {index} {trigger}: {len(rows)} ETAs judged", flush=True)
    finally:
        for job in jobs.values():
            job.stop()
        cluster.down()

    load = os.getloadavg()[1]  # the brokers copy slower than the throttle on a starved machine: say how loaded
    rows = []
    for trigger in TRIGGERS:
        for name, column in (("per-replica (before)", 3), ("budget model", 2)):
            s = eta.summary(judged[trigger], column)
            rows.append([trigger, name, s["judged"], s["within"], s["nulls"], pct(s["p50"]), pct(s["max"])])
    actual = [a for trigger in TRIGGERS for _, a, _, _ in judged[trigger]]
    table = markdown_table(["trigger", "ETA", "judged", "within bound", "null", "rel. error p50", "rel. error max"],
                           rows)
    body = (f"{__doc__.split(chr(10) + chr(10))[1]}\n\n{args.runs} runs; actual remaining time of the judged "
            f"records {min(actual):.0f}-{max(actual):.0f} s (median {statistics.median(actual):.0f} s); "
            f"machine load average {load:.0f} (5 min) at the end.\n\n{table}\n")
    print(table)
    write_section(TITLE, body)


if __name__ == "__main__":
    main()
