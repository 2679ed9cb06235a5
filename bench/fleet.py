"""What a fleet job (`run --clusters FILE`, one Spark query for every cluster of the file) costs against a job of one
cluster, paired A B B A, each run a child process of its own (a fresh Spark session or job), the two runs of an arm
pooled.

`latency`: the batch latency of the fleet query over 20 synthetic clusters of 5,000 moving replicas each (one input
partition per cluster, state keyed by cluster and bucket, each cluster's rows to its own BatchHandler: the fleet job's
streaming.spark.job.FleetBatchHandler), against one synthetic cluster of 100,000 (bench/stream.py's synthetic run):
the same replicas in all. No cluster, no Kafka writes; local[2], 1 s trigger.

`idle`: the idle cost of a fleet job of three idle local clusters against a job of one of them (bench/idle.py's
window: the CPU and RSS of every process of the job's session over a window, SETTLE_S after the first batch), the
clusters started here and stopped at the end.

    .venv/bin/python bench/fleet.py latency [--clusters 20] [--replicas 5000] [--single 100000] [--batches 8]
    .venv/bin/python bench/fleet.py idle [--base-port 45000] [--window 90]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql.datasource import DataSource, InputPartition  # noqa: E402

from bench.idle import SETTLE_S, window  # noqa: E402
from bench.results import markdown_table, write_section  # noqa: E402
from bench.stream import (WARMUP, MeasuringHandler, NullWriter, SyntheticReader, measure, percentile,  # noqa: E402
                          synthetic_snapshot)
from streaming.spark.job import STATE_BUCKETS  # noqa: E402
from streaming.spark.source import SOURCE_SCHEMA, snapshot_rows, to_batch  # noqa: E402

PAIR_ORDER = ("fleet", "single", "single", "fleet")
LATENCY_TITLE = "Fleet batch latency (bench/fleet.py latency)"
IDLE_TITLE = "Fleet idle cost (bench/fleet.py idle)"
CLUSTER_SPACING = 400  # a cluster takes BASE+1..3 and BASE+101..103


def cluster_names(clusters):
    return [f"bench-{i:02d}" for i in range(clusters)]


class SyntheticFleetReader(SyntheticReader):
    """One input partition per synthetic cluster, each polled afresh every batch, as the fleet source has."""

    def __init__(self, options):
        super().__init__(options)
        self.names = cluster_names(int(options["clusters"]))

    def partitions(self, start, end):
        return [InputPartition((name, int(end["poll"]))) for name in self.names]

    def read(self, partition):
        name, poll_id = partition.value
        snapshot = synthetic_snapshot(self.replicas, poll_id, int(time.time() * 1000))
        return iter([to_batch(snapshot_rows(poll_id, snapshot, STATE_BUCKETS), name)])


class SyntheticFleetSource(DataSource):
    @classmethod
    def name(cls):
        return "bench_synthetic_fleet"

    def schema(self):
        return SOURCE_SCHEMA

    def streamReader(self, schema):
        return SyntheticFleetReader(self.options)


def run_fleet(spark, clusters, replicas, batches, checkpoint):
    """The fleet query over synthetic clusters, measured as bench/stream.measure does: `whole` is the fleet batch's
    (Spark's triggerExecution), `compute` its toArrow, `sinks` every cluster's handling of the batch."""
    from sinks.prometheus import Instruments, MonitorMetrics
    from streaming.spark.driver import JobConfig
    from streaming.spark.job import FLEET_KEY, FleetBatchHandler, settings_of, start_tracking, stop_between_batches

    spark.dataSource.register(SyntheticFleetSource)
    stream = (spark.readStream.format(SyntheticFleetSource.name())
              .option("clusters", str(clusters)).option("replicas", str(replicas)).load())
    instruments = Instruments()
    handlers = {name: MeasuringHandler(NullWriter(), MonitorMetrics(name, instruments=instruments), out=None)
                for name in cluster_names(clusters)}
    config = JobConfig(bootstrap="", checkpoint_location=checkpoint, trigger_interval_s=1.0)
    query = start_tracking(stream, config, FleetBatchHandler(lambda: handlers), FLEET_KEY,
                           {name: settings_of(config) for name in handlers})
    first = next(iter(handlers.values()))
    try:
        result = measure(query, first, batches)
    finally:
        stop_between_batches(query)
    # Each cluster's handler times its sinks from the end of the fleet batch's toArrow, and the clusters are handled
    # one after the other: the fleet's sinks are the last one's, the longest.
    sinks = {}
    for handler in handlers.values():
        for batch_id, _, seconds in handler.timings:
            sinks[batch_id] = max(sinks.get(batch_id, 0.0), seconds)
    measured = [b for b, _, _ in first.timings if b >= WARMUP][:len(result["compute"])]  # the batches `measure` took
    result["sinks"] = [sinks[b] for b in measured]
    result["replicas"] = [n * clusters for n in result["replicas"]]
    return result


def latency_child(arm, args):
    """One run of one arm in this process: its figures as JSON on stdout's last line."""
    from bench.stream import run_synthetic
    from streaming.spark.driver import JobConfig
    from streaming.spark.job import build_session

    spark = build_session(JobConfig(bootstrap="", master="local[2]"))
    with tempfile.TemporaryDirectory() as scratch:
        if arm == "fleet":
            result = run_fleet(spark, args.clusters, args.replicas, args.batches, f"{scratch}/fleet")
        else:
            result = run_synthetic(spark, args.single, args.batches, f"{scratch}/single")
            result.pop("query")
    spark.stop()
    print(json.dumps(result))


def latency(args):
    pooled, loads = {}, []
    for index, arm in enumerate(PAIR_ORDER):
        print(f"{arm} (run {index + 1} of {len(PAIR_ORDER)})...", flush=True)
        start_load = os.getloadavg()[0]
        done = subprocess.run([sys.executable, __file__, "latency-child", arm, "--clusters", str(args.clusters),
                               "--replicas", str(args.replicas), "--single", str(args.single),
                               "--batches", str(args.batches)],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True,
                              text=True)
        loads.append((arm, start_load, os.getloadavg()[0]))
        for key, values in json.loads(done.stdout.strip().splitlines()[-1]).items():
            pooled.setdefault(arm, {}).setdefault(key, []).extend(values)
    labels = {"fleet": f"fleet: {args.clusters} clusters x {args.replicas:,}",
              "single": f"one cluster: {args.single:,}"}
    fmt = lambda xs, q: f"{percentile(xs, q):.2f}"  # noqa: E731
    rows = [[labels[arm], f"{int(statistics.median(pooled[arm]['replicas'])):,}", fmt(pooled[arm]["compute"], 50),
             fmt(pooled[arm]["compute"], 95), fmt(pooled[arm]["sinks"], 50), fmt(pooled[arm]["sinks"], 95),
             fmt(pooled[arm]["whole"], 50), fmt(pooled[arm]["whole"], 95), str(len(pooled[arm]["whole"]))]
            for arm in ("fleet", "single")]
    table = markdown_table(["run", "moving replicas", "compute p50 s", "compute p95 s", "sinks p50 s", "sinks p95 s",
                            "batch p50 s", "batch p95 s", "batches"], rows)
    print(table)
    ratio = percentile(pooled["fleet"]["whole"], 50) / percentile(pooled["single"]["whole"], 50)
    write_section(LATENCY_TITLE, (
        f"Synthetic polls (bench/stream.py's generator: every replica copies 1 MB a poll), no cluster and no Kafka "
        f"writes, local[2], 4 state buckets per cluster, 1 s trigger, {args.batches} batches after {WARMUP} warm-up "
        f"per run; runs paired A B B A ({', '.join(PAIR_ORDER)}), each a child process with a Spark session of its "
        f"own, the two runs of an arm pooled. compute = Spark scheduling + source + transforms + state, to the driver's "
        f"toArrow; sinks = every cluster's handling of the batch, one after the other (records counted, not sent; "
        f"metrics); batch = "
        f"Spark's triggerExecution. 1-minute load average at the start / end of each run: "
        + ", ".join(f"{arm} {a:.1f} / {b:.1f}" for arm, a, b in loads)
        + f".\n\n{table}\n\nFleet batch p50 / one-cluster batch p50: {ratio:.2f}."))


def fleet_file(path, clusters):
    path.write_text("\n".join(f'[clusters.idle-{i}]\nbootstrap-servers = "{c.bootstrap}"\n'
                              for i, c in enumerate(clusters)))
    return path


def idle_run(arm, clusters, scratch, seconds, index):
    from bench.sessions import session_processes
    from tests.job_process import BATCHES, LAST_POLL, JobProcess
    from tests.kafka_fixtures import wait_for

    directory = Path(scratch) / f"{arm}-{index}"
    directory.mkdir()
    job = JobProcess(clusters[0].bootstrap, directory / "checkpoint", directory / "job.log", "--quiet")
    if arm == "fleet":
        job.args = ([word for word in job.args if word not in ("--bootstrap-server", clusters[0].bootstrap)]
                    + ["--clusters", str(fleet_file(directory / "fleet.toml", clusters))])
    started = time.monotonic()
    job.start()
    try:
        first_poll = wait_for(lambda: job.metric(LAST_POLL) and time.monotonic() - started, 600, 0.1, "first poll")
        first_batch = wait_for(lambda: job.metric(BATCHES) and time.monotonic() - started, 600, 0.1, "first batch")
        time.sleep(SETTLE_S)  # the fixed settling time of the measurement itself
        cores, rss_mean, rss_max, batches, pss_mean, driver_ms = window(job, seconds)
        result = {"cores": cores, "rss_mean": rss_mean, "rss_max": rss_max, "pss_mean": pss_mean,
                  "driver_ms": driver_ms, "batches": batches, "processes": session_processes(job.process.pid),
                  "first_poll": first_poll, "first_batch": first_batch, "load": os.getloadavg()[0]}
        print(f"{arm} run {index}: {result}", flush=True)
        return result
    finally:
        job.stop()


def idle(args):
    from tests.kafka_fixtures import LocalCluster

    clusters = [LocalCluster(ROOT / ".local-cluster" / f"bench-fleet-{i}", args.base_port + CLUSTER_SPACING * i,
                             KAFKA_HEAP="256m") for i in range(3)]
    runs = {"fleet": [], "single": []}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        try:
            for cluster in clusters:
                cluster.up()
            for index, arm in enumerate(PAIR_ORDER):
                runs[arm].append(idle_run(arm, clusters, scratch, args.window, index))
        finally:
            for cluster in clusters:
                cluster.started_here = True  # the bench's own cluster directories: always stopped at the end
                cluster.down()
    elapsed = time.monotonic() - started

    def median(arm, key):
        return statistics.median(run[key] for run in runs[arm])

    labels = {"single": "one cluster", "fleet": "fleet of three clusters"}
    rows = [[labels[arm], f"{median(arm, 'cores'):.3f}", f"{median(arm, 'rss_mean'):.0f}",
             f"{median(arm, 'rss_max'):.0f}", f"{median(arm, 'pss_mean'):.0f}", f"{median(arm, 'processes'):.0f}",
             f"{median(arm, 'driver_ms'):.1f}", f"{median(arm, 'first_batch'):.1f}"] for arm in ("single", "fleet")]
    rows.append(["fleet / one", f"{median('fleet', 'cores') / median('single', 'cores'):.2f}",
                 f"{median('fleet', 'rss_mean') / median('single', 'rss_mean'):.2f}",
                 f"{median('fleet', 'rss_max') / median('single', 'rss_max'):.2f}",
                 f"{median('fleet', 'pss_mean') / median('single', 'pss_mean'):.2f}", "", "", ""])
    table = markdown_table(["job", "cores", "RSS mean MB", "RSS max MB", "PSS mean MB", "processes",
                            "driver CPU ms/s", "run -> first batch s"], rows)
    print(table)
    in_order = [runs[arm][PAIR_ORDER[:index].count(arm)] for index, arm in enumerate(PAIR_ORDER)]
    loads = ", ".join(f"{arm} {run['load']:.1f}" for arm, run in zip(PAIR_ORDER, in_order))
    write_section(IDLE_TITLE, (
        f"`reassign-monitor run` at the default 10 s trigger and master: one cluster's job (`--bootstrap-server`) "
        f"against a fleet job of three (`--clusters FILE`, the same cluster and two more), three idle local 3-node "
        f"clusters; medians of two runs per arm paired A B B A. CPU and RSS of every process in the job's session over "
        f"{args.window:g} s, {SETTLE_S:g} s after the first batch (bench/idle.py's window; RSS counts shared pages in "
        f"each process, PSS divides them). 1-minute load averages at the runs' ends: {loads}. Whole bench "
        f"{elapsed / 60:.1f} min.\n\n{table}"))



def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("latency", "latency-child"):
        command = commands.add_parser(name)
        if name == "latency-child":
            command.add_argument("arm", choices=("fleet", "single"))
        command.add_argument("--clusters", type=int, default=20)
        command.add_argument("--replicas", type=int, default=5_000)
        command.add_argument("--single", type=int, default=100_000)
        command.add_argument("--batches", type=int, default=8)
    command = commands.add_parser("idle")
    command.add_argument("--base-port", type=int, default=45_000,
                         help="cluster i's ports: BASE + 400 i + 1..3, +101..103")
    # An idle job costs a few ms of CPU a second, some of it in duties 10-30 s apart: 30 s windows varied by 20 %.
    command.add_argument("--window", type=float, default=90.0, help="seconds of each measuring window")
    args = parser.parse_args()
    if args.command == "latency":
        latency(args)
    elif args.command == "latency-child":
        latency_child(args.arm, args)
    else:
        idle(args)


if __name__ == "__main__":
    # Spark's workers unpickle the synthetic source by module name, which they can import as bench.fleet but not as
    # this script's __main__.
    from bench import fleet

    fleet.main()
