"""Where `run`'s time to the first Spark batch goes: the job's own start-up steps timed in this process.

Against a three-node cluster of its own (deploy/local-cluster.sh, started here and stopped at the end), each
round times, in a fresh interpreter: importing the job's modules (pyspark, pyarrow, pandas), the driver's
first admin connection, starting Spark (JVM launch, SparkSession), starting the query, and the first batch
(Spark plans it, starts the Python workers and the source's offset process, polls, runs the stateful step and
the sinks). Prints a table and writes it to bench/RESULTS.md, section "Run start-up phases".

    .venv/bin/python bench/spark_start.py [--rounds 3] [--base-port 43290]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.results import markdown_table, write_section  # noqa: E402
from tests.kafka_fixtures import LocalCluster  # noqa: E402

TITLE = "Run start-up phases (bench/spark_start.py)"
PHASES = ("imports", "admin connect", "Spark session", "query start", "first batch")

ONE_ROUND = r"""
import json, sys, tempfile, threading, time
t0 = time.monotonic()
from streaming.spark import job
from streaming.spark.driver import JobConfig
from streaming.cluster.admin import KafkaClusterAdmin
t1 = time.monotonic()
config = JobConfig(bootstrap=sys.argv[1], checkpoint_location=tempfile.mkdtemp(), master="local[*]")
admin = KafkaClusterAdmin(config.bootstrap)
t2 = time.monotonic()
spark = job.build_session(config)
t3 = time.monotonic()
first = threading.Event()
query = job.start_query(spark, config, lambda frame, batch_id: (frame.count(), first.set()))
t4 = time.monotonic()
first.wait(300)
t5 = time.monotonic()
query.stop(); spark.stop(); admin.close()
print(json.dumps([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4]))
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base-port", type=int, default=43290, help="the bench cluster's ports: BASE+1..3")
    args = parser.parse_args()
    cluster = LocalCluster(ROOT / ".local-cluster" / "bench-spark-start", args.base_port)
    rounds = []
    try:
        cluster.up()
        for _ in range(args.rounds):
            out = subprocess.run([sys.executable, "-c", ONE_ROUND, cluster.bootstrap], capture_output=True, text=True,
                                 cwd=tempfile.gettempdir(), timeout=600)
            if out.returncode != 0:
                raise RuntimeError(out.stderr[-3000:])
            rounds.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(dict(zip(PHASES, rounds[-1])), f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        cluster.started_here = True  # this bench owns its cluster directory: always stop it at the end
        cluster.down()
    medians = [statistics.median(r[i] for r in rounds) for i in range(len(PHASES))]
    table = markdown_table(["phase", "median s", "runs"], [[p, f"{m:.2f}", ", ".join(f"{r[i]:.2f}" for r in rounds)]
                                                           for i, (p, m) in enumerate(zip(PHASES, medians))]
                           + [["total to the first batch", f"{sum(medians):.2f}", ""]])
    write_section(TITLE, (
        f"The steps of `run` before its first Spark batch, timed inside a fresh interpreter ({args.rounds} rounds, "
        f"local[*] on 2 cores, fresh checkpoint, idle local 3-node cluster; load average at the end "
        f"{os.getloadavg()[0]:.1f}). The driver watch publishes liveness after `admin connect` (plus the topics' "
        f"check), so everything below it is what Spark adds.\n\n{table}"))
    print(table)


if __name__ == "__main__":
    main()
