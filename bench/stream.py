"""Micro-batch latency of the streaming job.

Live: 100 / 1,000 / 10,000 moving replicas on a local cluster of its own (one partition per replica,
each moved from broker 1 or 2 to the stopped broker 3, so the moves stay in flight: bench/moves.py),
the real job (source, stateful operator, Kafka and Prometheus sinks) running in this process, local[2].
Each size runs two arms on the same moves: the job's source, which makes the whole poll in one input
partition (streaming.cluster.poller.poll: its parts concurrently in threads), and a bench-only source that
splits each poll into input partitions, the cluster part and one DescribeLogDirs part per alive broker
(planned on the driver after a DescribeCluster), so the parts run in parallel Python workers: the
measurement behind the source's design (streaming/spark/source.py).
Synthetic: the same stateful operator and sinks-side assembly on generated snapshots (10,000, 30,000 and
100,000 replicas by default), fed by a bench-only source, to measure transforms + state without a cluster.
With `--before TREE` the synthetic sizes run paired, before (the code of TREE, e.g. `git archive` of an
older commit) and after (this tree), A B B A: each arm is a child process of this script (the harness is this
tree's bench/, copied over TREE's so both arms measure alike) with its cwd and PYTHONPATH set to its tree,
which Spark's Python workers inherit; the two runs of an arm are pooled.

Per batch: poll (inside the source, on the executor), compute (toArrow of the stateful output: Spark
scheduling + source + transforms + state), sinks (the batch's rows as dicts, records, Kafka write,
metrics), whole batch (Spark's triggerExecution). Prints a table and writes it to bench/RESULTS.md.

    .venv/bin/python bench/stream.py [--sizes 100,1000,10000] [--synthetic 10000,30000,100000] [--batches 8]
                                     [--before TREE]
"""

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition  # noqa: E402

from kafka import KafkaAdminClient  # noqa: E402

from bench.moves import (STOPPED, TIMEOUT_MS, attempt, bootstrap_of, cluster, start_moves, stop_broker,  # noqa: E402
                         stop_moves, throttle_brokers, wait_until)
from bench.results import markdown_table, write_section  # noqa: E402
from bench.spark_phases import EVENT_LOG_ARGS, PHASE_ROWS, batch_phases, medians, stage_phases  # noqa: E402
from sinks.prometheus import MonitorMetrics  # noqa: E402
from streaming.spark.driver import JobConfig  # noqa: E402
from streaming.spark.job import (STATE_BUCKETS, BatchHandler, build_session, poll_stream,  # noqa: E402
                                 start_query, start_tracking, stop_between_batches)
from streaming.cluster.poller import describe_cluster, poll_cluster, poll_log_dirs  # noqa: E402
from streaming.vocabulary.snapshot import Snapshot, alive_brokers, table  # noqa: E402
from streaming.spark.source import (SOURCE_SCHEMA, PollStreamReader, cached_admin, poll_rows, snapshot_rows,  # noqa: E402
                              to_batch)

CLUSTER_ENV = {"CLUSTER_DIR": str(ROOT / ".local-cluster" / "bench-stream"), "KAFKA_BASE_PORT": "37090",
               "KAFKA_HEAP": "1g"}
WARMUP = 2


def percentile(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


class NullWriter:
    """Writes nothing; keeps how many records each write had and when each replica key was last written (batches
    counted by writes), for what a consumer of the topic would have seen."""

    def __init__(self):
        self.last, self.writes, self.written_at, self.longest_gap = 0, 0, {}, 0

    def write(self, keyed_values):
        self.last = len(keyed_values)
        self.writes += 1
        for key, _ in keyed_values:
            if key.count(":") == 2 and not key.startswith(("reassignment", "plan", "throttle")):  # a replica's
                before = self.written_at.get(key)
                if before is not None:
                    self.longest_gap = max(self.longest_gap, self.writes - before)
                self.written_at[key] = self.writes

    def close(self):
        pass


@functools.lru_cache(maxsize=1)
def _synthetic_keys_and_tables(replicas):
    """The (topic, partition) keys and the tables that stay the same from poll to poll, made once per worker
    process: building all 400k row dicts of a poll took 0.8 s, ten times the pandas frames they replaced,
    and would have been measured as compute; only the destination's 100k log rows change per poll."""
    keys = [(f"topic-{n // 1000}", n % 1000) for n in range(replicas)]
    return keys, {
        "reassignments": [{"topic": topic, "partition": partition, "replicas": [1, 2], "adding": [2], "removing": []}
                          for topic, partition in keys],
        "partitions": [{"topic": topic, "partition": partition, "leader": 1, "replicas": [1, 2], "isr": [1]}
                       for topic, partition in keys],
        "leader_logs": _logs(keys, 1, 1_000_000_000),
        "brokers": table("brokers", [{"broker": b, "alive": True} for b in (1, 2, 3)]),
        "log_dirs_answered": table("log_dirs_answered", [{"broker": b} for b in (1, 2, 3)]),
    }


def _logs(keys, broker, size):
    return [{"broker": broker, "log_dir": "d", "topic": topic, "partition": partition, "size": size, "offset_lag": 0,
             "is_future": False} for topic, partition in keys]


def synthetic_snapshot(replicas, poll_id, ts_ms):
    """`replicas` moves, one adding replica per partition, each copying 1 MB per poll."""
    keys, fixed = _synthetic_keys_and_tables(replicas)
    tables = {name: rows for name, rows in fixed.items() if name != "leader_logs"}
    tables["log_dirs"] = fixed["leader_logs"] + _logs(keys, 2, poll_id * 1_000_000)
    return Snapshot(ts_ms=ts_ms, cluster_id="synthetic", tables=tables)


class PartReader(PollStreamReader):
    """Each poll as input partitions: the cluster part (value None) and one log-dirs part per alive broker."""

    def partitions(self, start, end):
        poll_id, ts_ms = int(end["poll"]), int(time.time() * 1000)
        cluster_id, brokers = describe_cluster(cached_admin(self.options))
        return [InputPartition((poll_id, ts_ms, None, (cluster_id, brokers)))] + [
            InputPartition((poll_id, ts_ms, broker, None)) for broker in alive_brokers(brokers)]

    def read(self, partition):
        poll_id, ts_ms, broker, described = partition.value
        admin = cached_admin(self.options)
        if broker is None:
            rows = poll_rows(poll_id, poll_cluster(admin, ts_ms, all_partitions=True, described=described), self.buckets)
        else:
            rows = snapshot_rows(poll_id, poll_log_dirs(admin, broker, ts_ms), self.buckets)
        return iter([to_batch(rows)])


class PartSource(DataSource):
    @classmethod
    def name(cls):
        return "bench_poll_in_parts"

    def schema(self):
        return SOURCE_SCHEMA

    def streamReader(self, schema):
        return PartReader(self.options)


def start_parts_query(spark, config, handler):
    return start_tracking(poll_stream(spark, config, PartSource), config, handler)


ARMS = {"one partition (the job)": start_query, "parts": start_parts_query}
# Whichever arm runs first on fresh moves is slower (the brokers are still settling after creating the
# topics and the reassignments): with one run per arm, the arm that went first was up to 0.27 s slower
# at 100 and 1,000 replicas, whichever it was. Running the arms A B B A and pooling cancels that.
ARM_ORDER = ["one partition (the job)", "parts", "parts", "one partition (the job)"]


class SyntheticReader(DataSourceStreamReader):
    def __init__(self, options):
        self.replicas = int(options["replicas"])

    def initialOffset(self):
        return {"poll": 0}

    def latestOffset(self, start, limit):
        return {"poll": int(start["poll"]) + 1}

    def partitions(self, start, end):
        return [InputPartition(int(end["poll"]))]

    def read(self, partition):
        poll_id = partition.value
        rows = snapshot_rows(poll_id, synthetic_snapshot(self.replicas, poll_id, int(time.time() * 1000)), STATE_BUCKETS)
        return iter([to_batch(rows)])


class SyntheticSource(DataSource):
    @classmethod
    def name(cls):
        return "bench_synthetic"

    def schema(self):
        return SOURCE_SCHEMA

    def streamReader(self, schema):
        return SyntheticReader(self.options)


def measure(query, handler, batches):
    """Wait for `batches` batches past warm-up; per-batch poll/compute/sinks/whole seconds."""
    deadline = time.monotonic() + 120 + 30 * batches
    while len(handler.timings) < WARMUP + batches and time.monotonic() < deadline and query.isActive:
        time.sleep(0.5)
    whole = {p["batchId"]: p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress}
    rows = [t for t in handler.timings if t[0] >= WARMUP]
    polls = [o for o in handler.polls if o[0] >= WARMUP]
    return {"poll": [p for _, p in polls], "compute": [t[1] for t in rows], "sinks": [t[2] for t in rows],
            "whole": [whole[t[0]] for t in rows if t[0] in whole],
            "replicas": [n for _, n in handler.moving if _ >= WARMUP],
            "records": [n for b, n in handler.records if b >= WARMUP],
            "gap": [getattr(handler.writer, "longest_gap", 0)]}


class MeasuringHandler(BatchHandler):
    """BatchHandler that also keeps each batch's poll duration, number of moving replicas and records written. It
    measures in `handle`, which a fleet job's FleetBatchHandler calls for each cluster (bench/fleet.py)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.polls, self.moving, self.records = [], [], []

    def handle(self, batch, batch_id, *timing_and_budget):
        super().handle(batch, batch_id, *timing_and_budget)
        if self.last_output is not None:
            self.polls.append((batch_id, self.last_output.snapshot.duration_s))
            self.moving.append((batch_id, len(self.last_output.picture.replicas)))
            if hasattr(self.writer, "last"):
                self.records.append((batch_id, self.writer.last))


def row(label, result):
    fmt = lambda xs, q: f"{percentile(xs, q):.2f}"  # noqa: E731
    return [label, f"{int(np.median(result['replicas'])) if result['replicas'] else '-'}",
            fmt(result["poll"], 50), fmt(result["poll"], 95), fmt(result["compute"], 50), fmt(result["compute"], 95),
            fmt(result["sinks"], 50), fmt(result["sinks"], 95), fmt(result["whole"], 50), fmt(result["whole"], 95),
            f"{int(np.median(result['records']))}" if result.get("records") else "-",
            f"{max(result['gap'])}" if result.get("gap") and max(result["gap"]) else "-"]


def run_synthetic(spark, replicas, batches, checkpoint):
    spark.dataSource.register(SyntheticSource)
    stream = spark.readStream.format(SyntheticSource.name()).option("replicas", str(replicas)).load()
    handler = MeasuringHandler(NullWriter(), MonitorMetrics("bench"), out=None)
    config = JobConfig(bootstrap="", checkpoint_location=checkpoint, trigger_interval_s=1.0)
    query = start_tracking(stream, config, handler)
    try:
        result = measure(query, handler, batches)
    finally:
        stop_between_batches(query)
    # What the phase table needs once the event log is complete (after the session stops): plain values.
    result["query"] = {"id": str(query.id), "timings": list(handler.timings),
                       "progress": [{"batchId": p["batchId"], "durationMs": dict(p["durationMs"])}
                                    for p in query.recentProgress]}
    return result


def with_phases(result, event_log):
    """`result` with its per-batch Spark phases (bench/spark_phases.py) past warm-up in place of the raw query."""
    query = result.pop("query")
    phases = batch_phases(query["progress"], query["timings"], stage_phases(event_log, query["id"]))
    return {**result, "phases": [phases[b] for b in sorted(phases) if b >= WARMUP]}


MAX_PARTITIONS_PER_TOPIC = 5_000  # KRaft refuses one CreateTopics of 10,000 partitions ("excessively large batch")


def run_live(spark, bootstrap, admin, replicas, batches, checkpoint):
    """{arm: result} for both arms, in ARM_ORDER, on the same in-flight moves."""
    from sinks.progress_topic import ensure_progress_topic
    from streaming.cluster.admin import KafkaClusterAdmin
    from streaming.control.applier import applier_of

    sizes = [min(MAX_PARTITIONS_PER_TOPIC, replicas - start) for start in range(0, replicas, MAX_PARTITIONS_PER_TOPIC)]
    topics = {f"bench-stream-{replicas}-{i}": n for i, n in enumerate(sizes)}
    for topic, n in topics.items():
        start_moves(admin, bootstrap, topic, n)
    results = {}
    try:
        for run, arm in enumerate(ARM_ORDER):
            config = JobConfig(bootstrap=bootstrap, checkpoint_location=f"{checkpoint}-{run}",
                               trigger_interval_s=2.0, progress_topic="bench-progress", timeout_s=60)
            door = KafkaClusterAdmin(bootstrap, timeout_s=60)
            applier = applier_of(door)
            ensure_progress_topic(applier, config.progress_topic)
            writer = applier.publisher(config.progress_topic)
            handler = MeasuringHandler(writer, MonitorMetrics("bench"), out=None)
            query = ARMS[arm](spark, config, handler)
            try:
                result = measure(query, handler, batches)
                results[arm] = {k: results.get(arm, {}).get(k, []) + v for k, v in result.items()}
            finally:
                stop_between_batches(query)
                door.close()
    finally:
        for topic, n in topics.items():
            stop_moves(admin, topic, n)
            wait_until(lambda: topic not in admin.list_topics(), 120, f"{topic} deleted")
    return results


def _sizes(text):
    return [int(x) for x in text.split(",") if x]


SYNTHETIC_LABEL = "synthetic {} (no cluster, no Kafka writes)"
PAIR_ORDER = ["before", "after", "after", "before"]


def _load():
    return os.getloadavg()[0]


def run_pairs(before_tree, sizes, batches):
    """Rows of the synthetic sizes, before (TREE's code) and after (this tree's), run A B B A in child
    processes and pooled per arm; and the 1-minute load averages at each child's start and end."""
    before_tree = Path(before_tree).resolve()
    shutil.copytree(ROOT / "bench", before_tree / "bench", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "RESULTS.md"))
    trees = {"before": before_tree, "after": ROOT}
    pooled, loads = {}, []
    with tempfile.TemporaryDirectory() as scratch:
        for n, arm in enumerate(PAIR_ORDER):
            out = Path(scratch) / f"{n}.json"
            print(f"{arm} (run {n + 1} of {len(PAIR_ORDER)}, {trees[arm]})...", flush=True)
            start_load = _load()
            subprocess.run([sys.executable, str(trees[arm] / "bench" / "stream.py"), "--sizes", "",
                            "--synthetic", ",".join(map(str, sizes)), "--batches", str(batches), "--json", str(out)],
                           cwd=trees[arm], env={**os.environ, "PYTHONPATH": str(trees[arm])}, check=True)
            loads.append((arm, start_load, _load()))
            for size, result in json.loads(out.read_text()).items():
                mine = pooled.setdefault((arm, int(size)), {})
                for k, v in result.items():
                    mine[k] = mine.get(k, []) + v
    rows = [row(f"{arm}: {SYNTHETIC_LABEL.format(size)}", pooled[(arm, size)])
            for size in sizes for arm in ("before", "after")]
    return rows, {key: result["phases"] for key, result in pooled.items()}, loads


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--synthetic", default="10000,30000,100000")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--before", help="a tree with older code: the synthetic sizes run paired against it")
    parser.add_argument("--json", help="(child of --before) write the synthetic results here, not RESULTS.md")
    args = parser.parse_args()
    if args.before:
        rows, phases, loads = run_pairs(args.before, _sizes(args.synthetic), args.batches)
        note = ("Synthetic sizes paired before / after, A B B A (`--before`), runs pooled per arm; "
                "1-minute load average at the start / end of each run: "
                + ", ".join(f"{arm} {a:.1f} / {b:.1f}" for arm, a, b in loads) + ".")
        _write(rows, args.batches, SCALE_TITLE, note)
        _write_phases(phases, args.batches, SCALE_PHASES_TITLE, note)
        return
    event_log = tempfile.mkdtemp(prefix="bench-stream-events-")
    os.environ["PYSPARK_SUBMIT_ARGS"] = EVENT_LOG_ARGS.format(event_log) + " pyspark-shell"
    spark = build_session(JobConfig(bootstrap="", master="local[2]"))
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        sizes = [int(x) for x in args.sizes.split(",") if x]
        if sizes:
            started_here = "running" not in cluster(CLUSTER_ENV, "status")
            cluster(CLUSTER_ENV, "up")
            bootstrap = bootstrap_of(CLUSTER_ENV)
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
            try:
                throttle_brokers(admin, 1)
                stop_broker(CLUSTER_ENV, admin, STOPPED)
                for size in sizes:
                    print(f"live {size} replicas...", flush=True)
                    try:
                        for arm, result in run_live(spark, bootstrap, admin, size, args.batches,
                                                    f"{scratch}/live-{size}").items():
                            results.append(row(f"live {size}, {arm}", result))
                    except Exception as error:  # say what happened at this size and go on with the others
                        results.append([f"live {size}", f"failed: {type(error).__name__}: {str(error)[:200]}"]
                                       + [""] * 10)
            finally:
                admin.close()
                if started_here:
                    cluster(CLUSTER_ENV, "down")  # the bench's own cluster: its throttles go with it
                else:
                    cluster(CLUSTER_ENV, "up")  # the stopped broker back, so its throttle rates can go too
                    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
                    wait_until(lambda: attempt(throttle_brokers, admin, None), 300, "throttle rates removed")
                    admin.close()
        raw = {}
        for size in _sizes(args.synthetic):
            print(f"synthetic {size} replicas...", flush=True)
            raw[size] = run_synthetic(spark, size, args.batches, f"{scratch}/synthetic-{size}")
            results.append(row(SYNTHETIC_LABEL.format(size), raw[size]))
    spark.stop()
    raw = {size: with_phases(result, event_log) for size, result in raw.items()}
    shutil.rmtree(event_log, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(raw))
        return
    _write(results, args.batches, TITLE, "")
    if raw:
        _write_phases({("after", size): result["phases"] for size, result in raw.items()}, args.batches, PHASES_TITLE, "")


TITLE = "Streaming micro-batch latency (bench/stream.py)"
SCALE_TITLE = "Streaming scale, before / after (bench/stream.py --before)"
PHASES_TITLE = "Where a synthetic batch's wall time goes in Spark (bench/stream.py)"
SCALE_PHASES_TITLE = "Where a synthetic batch's wall time goes in Spark, before / after (bench/stream.py --before)"


def _write_phases(phases, batches, title, note):
    """The phase table: one row per phase (bench/spark_phases.py), one column per (arm, size), p50 seconds."""
    columns = sorted(phases, key=lambda key: (key[1], key[0] != "before"))
    p50 = {key: medians(phases[key]) for key in columns}
    headers = ["phase (indented: part of the row above), p50 s"] + [f"{arm} {size}" for arm, size in columns]
    rows = [[label] + [f"{p50[key][phase]:.2f}" if p50[key] else "-" for key in columns] for label, phase in PHASE_ROWS]
    table_text = markdown_table(headers, rows)
    print(table_text)
    write_section(title,
                  f"The synthetic runs of the table above, {batches} batches after {WARMUP} warm-up per run, each phase's "
                  "p50 over the batches (a column's phases are medians of their own, so they need not add up). "
                  "From the query's progress (durationMs), the batch handler's clock (toArrow, then the sinks) and "
                  "Spark's event log (the two stages' wall time; inside the stateful stage, Spark's task metrics "
                  "summed over its 4 tasks, which run 2 at a time): bench/spark_phases.py. " + note + "\n\n" + table_text)


def _write(results, batches, title, note):
    headers = ["run", "moving replicas", "poll p50 s", "poll p95 s", "compute p50 s", "compute p95 s",
               "sinks p50 s", "sinks p95 s", "batch p50 s", "batch p95 s", "records / batch p50",
               "most batches between a replica's records"]
    table_text = markdown_table(headers, results)
    print(table_text)
    write_section(title,
                  "local[2], 4 state buckets, trigger 2 s (live; moves to a stopped broker, so replicas are "
                  "BROKER_OFFLINE and DescribeLogDirs is answered by two brokers) / 1 s (synthetic), "
                  "live arms: `one partition (the job)` = the job's source, the whole poll in one input partition; "
                  "`parts` = the poll split into input partitions (cluster part + one DescribeLogDirs part per "
                  "alive broker; poll = the slowest part), "
                  f"{batches} batches after {WARMUP} warm-up batches per run; each live arm runs twice, "
                  "in the order A B B A on the same moves, and its two runs are pooled. compute = Spark scheduling + source + "
                  "transforms + state (poll included for live runs; synthetic snapshot generation included "
                  "for synthetic runs); batch = Spark's triggerExecution; records: progress-topic records a batch "
                  "wrote (synthetic runs: counted, not sent), and the most batches a replica waited between two of "
                  "its records over the run. " + note + "\n\n" + table_text)


if __name__ == "__main__":
    # Spark's workers unpickle the bench's sources and cached snapshot tables by module name, which they
    # can import as bench.stream but not as this script's __main__.
    from bench import stream

    stream.main()
