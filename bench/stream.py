"""Micro-batch latency of the streaming job.

Live: 100 / 1,000 / 10,000 moving replicas on a local cluster of its own (partitions with data on broker 1,
each reassigned to [1, 2, 3] under a 1 B/s throttle so the moves stay in flight), the real job
(source, stateful operator, Kafka and Prometheus sinks) running in this process, local[2].
Synthetic: the same stateful operator and sinks-side assembly on generated snapshots of 100,000
replicas, fed by a bench-only source, to measure transforms + state without a cluster.

Per batch: poll (inside the source, on the executor), compute (toPandas of the stateful output: Spark
scheduling + source + transforms + state), sinks (records, Kafka write, metrics), whole batch (Spark's
triggerExecution). Prints a table and writes it to bench/RESULTS.md.

    .venv/bin/python bench/stream.py [--sizes 100,1000,10000] [--synthetic 100000] [--batches 8]
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

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition  # noqa: E402

from bench.results import markdown_table, write_section  # noqa: E402
from sinks.prometheus import MonitorMetrics  # noqa: E402
from streaming.history import Settings  # noqa: E402
from streaming.job import STATE_BUCKETS, BatchHandler, JobConfig, build_session, start_query, track  # noqa: E402
from streaming.snapshot import Snapshot, table  # noqa: E402
from streaming.source import SOURCE_SCHEMA, snapshot_rows  # noqa: E402

CLUSTER_ENV = {"CLUSTER_DIR": str(ROOT / ".local-cluster" / "bench-stream"), "KAFKA_BASE_PORT": "37090"}
WARMUP = 2


def percentile(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


class NullWriter:
    def write(self, keyed_values):
        self.last = len(keyed_values)

    def close(self):
        pass


def synthetic_snapshot(replicas, poll_id, ts_ms):
    """`replicas` moves, one adding replica per partition, each copying 1 MB per poll."""
    n = np.arange(replicas)
    topics = np.char.add("topic-", (n // 1000).astype(str)).astype(object)
    partitions = (n % 1000).astype("int32")
    frame = lambda **cols: pd.DataFrame(cols)  # noqa: E731
    tables = {
        "reassignments": frame(topic=topics, partition=partitions, replicas=[[1, 2]] * replicas,
                               adding=[[2]] * replicas, removing=[[]] * replicas),
        "partitions": frame(topic=topics, partition=partitions, leader=np.ones(replicas, "int32"),
                            replicas=[[1, 2]] * replicas, isr=[[1]] * replicas),
        "log_dirs": pd.concat([
            frame(broker=np.ones(replicas, "int32"), log_dir="d", topic=topics, partition=partitions,
                  size=np.full(replicas, 1_000_000_000, "int64"), offset_lag=np.zeros(replicas, "int64"),
                  is_future=False),
            frame(broker=np.full(replicas, 2, "int32"), log_dir="d", topic=topics, partition=partitions,
                  size=np.full(replicas, poll_id * 1_000_000, "int64"), offset_lag=np.zeros(replicas, "int64"),
                  is_future=False)], ignore_index=True),
        "brokers": table("brokers", [{"broker": b, "alive": True, "answered": True} for b in (1, 2, 3)]),
    }
    return Snapshot(ts_ms=ts_ms, cluster_id="synthetic", tables=tables)


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
        schema = pa.schema([("poll_id", pa.int64()), ("ts_ms", pa.int64()), ("bucket", pa.int32()),
                            ("table", pa.string()), ("payload", pa.binary())])
        return iter([pa.RecordBatch.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)])


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
            "replicas": [n for _, n in handler.moving if _ >= WARMUP]}


class MeasuringHandler(BatchHandler):
    """BatchHandler that also keeps each batch's poll duration and number of moving replicas."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.polls, self.moving = [], []

    def __call__(self, frame, batch_id):
        super().__call__(frame, batch_id)
        if self.last_output is not None:
            self.polls.append((batch_id, self.last_output.snapshot.duration_s))
            self.moving.append((batch_id, len(self.last_output.picture.replicas)))


def row(label, result):
    fmt = lambda xs, q: f"{percentile(xs, q):.2f}"  # noqa: E731
    return [label, f"{int(np.median(result['replicas'])) if result['replicas'] else '-'}",
            fmt(result["poll"], 50), fmt(result["poll"], 95), fmt(result["compute"], 50), fmt(result["compute"], 95),
            fmt(result["sinks"], 50), fmt(result["sinks"], 95), fmt(result["whole"], 50), fmt(result["whole"], 95)]


def run_synthetic(spark, replicas, batches, checkpoint):
    spark.dataSource.register(SyntheticSource)
    stream = spark.readStream.format("bench_synthetic").option("replicas", str(replicas)).load()
    handler = MeasuringHandler(NullWriter(), MonitorMetrics(), out=None)
    query = (track(stream, Settings()).writeStream.foreachBatch(handler)
             .option("checkpointLocation", checkpoint).trigger(processingTime="1 second")
             .outputMode("update").start())
    try:
        return measure(query, handler, batches)
    finally:
        query.stop()


def cluster(command):
    result = subprocess.run([str(ROOT / "deploy" / "local-cluster.sh"), command], env={**os.environ, **CLUSTER_ENV},
                            capture_output=True, text=True, check=True)
    return result.stdout.strip().splitlines()[-1]


def start_moves(bootstrap, topic, partitions):
    from confluent_kafka import Producer
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120000)
    admin.create_topics([NewTopic(topic, -1, -1, replica_assignments={p: [1] for p in range(partitions)})],
                        timeout_ms=120000)
    admin.wait_for_topics([topic], timeout_ms=120000)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for p in range(partitions):
        producer.produce(topic, os.urandom(20_000), partition=p)
        producer.poll(0)
    producer.flush(120)
    set_ = lambda value: (AlterConfigOp.SET, value)  # noqa: E731
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={
        "leader.replication.throttled.replicas": set_("*"), "follower.replication.throttled.replicas": set_("*")})]
        + [ConfigResource(ConfigResourceType.BROKER, str(b), configs={
            "leader.replication.throttled.rate": set_("1"), "follower.replication.throttled.rate": set_("1")})
           for b in (1, 2, 3)], raise_on_unknown=False)
    admin.alter_partition_reassignments({TopicPartition(topic, p): [1, 2, 3] for p in range(partitions)},
                                        timeout_ms=120000)
    return admin


def stop_moves(admin, topic, partitions):
    from kafka import TopicPartition

    try:
        admin.alter_partition_reassignments({TopicPartition(topic, p): None for p in range(partitions)},
                                            timeout_ms=120000)
    except Exception as error:  # moves that already completed cannot be cancelled; the topic goes anyway
        print(f"cancel: {error}", file=sys.stderr)
    admin.delete_topics([topic])
    admin.close()


def run_live(spark, bootstrap, replicas, batches, checkpoint):
    from sinks.progress_topic import ProgressTopicWriter, ensure_topic

    topic, partitions = f"bench-{replicas}", replicas // 2
    admin = start_moves(bootstrap, topic, partitions)
    config = JobConfig(bootstrap=bootstrap, checkpoint_location=checkpoint, trigger_interval_s=2.0,
                       progress_topic="bench-progress")
    ensure_topic(bootstrap, None, config.progress_topic)
    writer = ProgressTopicWriter(bootstrap, None, config.progress_topic)
    handler = MeasuringHandler(writer, MonitorMetrics(), out=None)
    query = start_query(spark, config, handler)
    try:
        return measure(query, handler, batches)
    finally:
        query.stop()
        writer.close()
        stop_moves(admin, topic, partitions)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--synthetic", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    spark = build_session(JobConfig(bootstrap="", master="local[2]"))
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        try:
            bootstrap = cluster("up")
            for size in [int(s) for s in args.sizes.split(",") if s]:
                print(f"live {size} replicas...", flush=True)
                results.append(row(f"live {size}", run_live(spark, bootstrap, size, args.batches, f"{scratch}/live-{size}")))
        finally:
            cluster("down")
        if args.synthetic:
            print(f"synthetic {args.synthetic} replicas...", flush=True)
            result = run_synthetic(spark, args.synthetic, args.batches, f"{scratch}/synthetic")
            results.append(row(f"synthetic {args.synthetic} (no cluster, no Kafka writes)", result))
    spark.stop()
    headers = ["run", "moving replicas", "poll p50 s", "poll p95 s", "compute p50 s", "compute p95 s",
               "sinks p50 s", "sinks p95 s", "batch p50 s", "batch p95 s"]
    table_text = markdown_table(headers, results)
    print(table_text)
    write_section("Streaming micro-batch latency (bench/stream.py)",
                  "local[2], 4 state buckets, trigger 2 s (live) / 1 s (synthetic), "
                  f"{args.batches} batches after {WARMUP} warm-up batches. compute = Spark scheduling + source + "
                  "transforms + state (poll included for live runs; synthetic snapshot generation included "
                  "for synthetic runs); batch = Spark's triggerExecution.\n\n" + table_text)


if __name__ == "__main__":
    main()
