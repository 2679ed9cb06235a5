"""The streaming job: source -> bucketed stateful progress -> foreachBatch sinks, its findings to the controller.

Driver side only (building the session and query, the batch handler); the per-bucket work is in
streaming.spark.stateful and runs on executors. The job's start-up and restart loop (`run`) are in
streaming.spark.driver, which imports this module only once the job's controller is running.
"""

import collections
import contextlib
import os
import sys
import time
from dataclasses import replace

import pyarrow.compute as pc

from sinks import records
from streaming.spark import codec
from streaming.vocabulary import defaults
from streaming.vocabulary.kafka_apis import PRODUCE
from streaming.spark.checkpoint import local_path
from streaming.core.history import Settings
from streaming.spark.outputs import assemble, describe, poll_facts
from streaming.control.findings import BatchFindings
from streaming.control.plans.report import plan_row
from streaming.spark.source import POLL_TABLE, STATE_BUCKETS, PollDataSource, Target
from streaming.spark.stateful import (CLUSTER_KIND, OUTPUT_SCHEMA, REPLICA_KIND, REPORTED_KINDS, STATE_SCHEMA,
                                     collector_paused, make_tracker)

# Fixed for the life of a checkpoint: the state store's partitions, one per state bucket (source.STATE_BUCKETS).
SHUFFLE_PARTITIONS = STATE_BUCKETS


# Sizing (docs/operations.md "Sizing"), applied where this process starts the JVM (`--master`; under spark-submit
# the operator's --driver-memory and JVM options stand). The driver JVM (with local[*] also the executor) holds a
# batch's Arrow output on its way to Python and the state store's last two versions of four bucket blobs. A smaller
# heap (Spark's floor is 450 MB) was tried and not kept: the idle JVM's resident memory did not shrink
# (bench/RESULTS.md "Idle cost"), so the heap is not where its memory is, and a smaller heap would only add risk
# with many moving replicas. The serial collector has no parallel GC threads to wake on 2 cores, and with the
# free-ratio bounds it gives heap back after a collection instead of keeping the last big batch's peak resident
# while the job idles.
DRIVER_MEMORY = "768m"
DRIVER_JVM_OPTIONS = "-XX:+UseSerialGC -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30"
SPARK_LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark-log4j2.properties")
SPARK_LOG_NAME = "spark-driver.log"
APP_NAME = "kafka-reassign-monitor"  # Spark's application name; a fleet file's cluster adds its name


def _driver_log_options(checkpoint_location):
    """JVM options sending the driver's log (WARN and above) to SPARK_LOG_NAME in a local checkpoint
    location (in the working directory when the checkpoint is remote) instead of the terminal. They take
    effect where this process starts the JVM (local[*], or a cluster master in client mode); under
    spark-submit the JVM already runs with the platform's logging."""
    log_file = os.path.join(os.path.abspath(local_path(checkpoint_location) or "."), SPARK_LOG_NAME)

    def quoted(value):  # Spark splits extraJavaOptions like a shell: quote, escaping \ and "
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return (f"{DRIVER_JVM_OPTIONS} -Dlog4j2.configurationFile={quoted(SPARK_LOG_CONFIG)} "
            f"-Dreassign.monitor.spark.log={quoted(log_file)}")


def build_session(config):
    from pyspark.sql import SparkSession

    # Workers must run this interpreter (it has the project installed), not the system python.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if (config.master or "").startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # an embedded job needs no outside interface
    builder = (SparkSession.builder.appName(APP_NAME + (f" {config.cluster_name}" if config.cluster_name else ""))
               .config("spark.driver.extraJavaOptions", _driver_log_options(config.checkpoint_location))
               .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
               .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               # One Python worker per core, kept between batches: starting one (pandas, pyarrow, this
               # package) costs about a second; Spark's daemon stops workers left idle.
               .config("spark.python.worker.reuse", "true")
               .config("spark.ui.showConsoleProgress", "false")
               # No web UI: nobody browses an embedded job's UI, and its server, listeners and the UI's store of
               # every batch's stages and tasks live in the driver's heap around the clock.
               .config("spark.ui.enabled", "false")
               .config("spark.sql.streaming.minBatchesToRetain", "20")
               # No batch without new data: the stateful step has no timeout or watermark to advance, and
               # while the controller holds the source's offset (streaming.control.gate) nothing may run.
               .config("spark.sql.streaming.noDataMicroBatches.enabled", "false"))
    if config.master:  # spark-submit passes the master (and sizes the driver) itself
        builder = builder.master(config.master).config("spark.driver.memory", DRIVER_MEMORY)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def batch_rows(batch):
    """(cluster rows {table, payload}, replica rows) of a batch of the stateful output (an Arrow table): the
    cluster rows as dicts, the replica rows as columns (streaming.vocabulary.columns), each bucket's in order."""
    cluster = batch.filter(pc.equal(batch["kind"], CLUSTER_KIND)).select(["table", "payload"])
    blobs = batch.filter(pc.equal(batch["kind"], REPLICA_KIND))["payload"].to_pylist()
    return cluster.to_pylist(), codec.decode_columns(blobs, REPORTED_KINDS)


class BatchHandler:
    """foreachBatch: decode the batch, write records, update Prometheus, and hand the batch's findings to the job's
    controller (streaming.control.controller), which alone acts on the cluster. The records name the cluster as its
    metrics do (`metrics.cluster`). `writer`: the progress spool
    (sinks.spool: durable on disk when `write` returns) or, with a remote checkpoint location, the progress topic's
    publisher (acknowledged by Kafka). A failed write raises: the query stops and a restart replays the batch (no
    transition is lost). `controller` None (the benchmarks): the batch
    only computes and writes."""

    def __init__(self, writer, metrics, controller=None, out=sys.stdout,
                 pending_after_s=2 * defaults.TRIGGER_INTERVAL_S, line_prefix=""):
        self.writer, self.metrics, self.controller, self.out = writer, metrics, controller, out
        self.line_prefix = line_prefix  # a fleet job's lines name the cluster they are about
        self.pending_after_s = pending_after_s  # a PENDING move gets a reason after two triggers
        self.last_output = None
        # (batch id, seconds computing the batch: poll + transforms + state, seconds in the sinks)
        self.timings = collections.deque(maxlen=1000)

    def _requests(self):
        """Ongoing `execute` requests (from the controller's ledger): id -> its partitions."""
        return {} if self.controller is None else self.controller.requests

    def _plan_rows(self, output, ts_ms):
        """The active plans' rows. A plan whose row cannot be computed is left out and logged: a replayed batch
        would fail the same way, so raising would stop every report, not only the plan's."""
        rows = []
        for request_id, status in (self.controller.plan_statuses() if self.controller is not None else {}).items():
            try:
                row = plan_row(status, output.replicas, output.snapshot.tables, ts_ms)
            except Exception as error:
                print(f"{self.line_prefix}plan {request_id}: no report this batch: {type(error).__name__}: {error}", file=sys.stderr,
                      flush=True)
                continue
            if row is not None:
                rows.append(row)
        return rows

    def __call__(self, frame, batch_id):
        started = time.monotonic()
        batch = frame.toArrow()
        self.handle(batch, batch_id, started, time.monotonic())

    def handle(self, batch, batch_id, started, computed, record_budget=defaults.RECORD_ROW_BUDGET):
        """The cluster's rows of a batch of the stateful output (an Arrow table), computed from `started` to
        `computed` (monotonic seconds); `record_budget`: its share of the batch's steady records (docs/records.md
        "When records are written")."""
        with collector_paused():
            cluster, replicas = batch_rows(batch)
            tables = codec.decode_tables([row["table"] for row in cluster], [row["payload"] for row in cluster])
        if POLL_TABLE not in tables:
            return
        facts = poll_facts(tables.pop(POLL_TABLE))
        self.metrics.poll_duration.observe(facts.duration_s)
        for error in facts.errors:
            self.metrics.poll_errors.labels(api=error.api).inc()
        for api, count in facts.retries.items():
            self.metrics.poll_errors.labels(api=api).inc(count)
        if not facts.ok:
            reasons = "; ".join(f"{e.api}: {e.message}" for e in facts.errors)
            print(f"{self.line_prefix}batch {batch_id}: poll failed: {reasons}", file=sys.stderr, flush=True)
            if self.controller is not None:
                self.controller.batch_ran()
            return
        with collector_paused():
            output = assemble(replicas, tables, facts, batch_id, self._requests(), self.pending_after_s,
                              cluster=self.metrics.cluster, record_budget=record_budget)
        keyed = list(output.records)
        plan_rows = self._plan_rows(output, facts.ts_ms)
        keyed += [(records.plan_key(row["request_id"]), records.encode(
            records.plan_record(row, facts.ts_ms, batch_id, facts.cluster_id, cluster=self.metrics.cluster)))
            for row in plan_rows]
        try:
            with self.controller.batch_writing() if self.controller is not None else contextlib.nullcontext():
                self.writer.write(keyed)
        except Exception:  # the query stops and run() restarts it: the batch is replayed from the checkpoint
            self.metrics.poll_errors.labels(api=PRODUCE).inc()
            raise
        self.metrics.snapshot.update(replace(output.picture, plans=tuple(plan_rows)))
        self.last_output = output
        if self.controller is not None:
            self.controller.hand_over(findings_of(output, batch_id, [row["request_id"] for row in plan_rows]))
        self.timings.append((batch_id, computed - started, time.monotonic() - computed))
        if self.out is not None:
            print(f"{self.line_prefix}batch {batch_id}: {describe(output)}", file=self.out, flush=True)


def findings_of(output, batch_id, plans_reported=()):
    """What the batch hands the controller (streaming.control.findings.BatchFindings)."""
    return BatchFindings(
        batch_id=batch_id, snapshot=output.snapshot, tracks_moves=bool(output.tracked_partitions()),
        reported=frozenset(output.reported_partitions()), falling_behind=frozenset(output.falling_behind_brokers()),
        throttles_binding=output.throttles_binding, plans_reported=tuple(plans_reported))


class FleetBatchHandler:
    """foreachBatch of a fleet job: each cluster's rows of the batch to its own BatchHandler (`handlers()`:
    {cluster name: BatchHandler}, those of the clusters the query polls). A cluster whose handler fails does not keep
    the others' from theirs; the first failure is raised after them all, so that the batch is replayed (records
    carry the batch id: a replayed record supersedes its first write). The batch's budget of steady records is one
    job's, shared evenly by the clusters it polled: 20 clusters of 5,000 moving replicas cost a batch what one cluster
    of 100,000 does, instead of twenty times its records (bench/RESULTS.md "Fleet batch latency (bench/fleet.py
    latency)")."""

    def __init__(self, handlers):
        self.handlers = handlers

    def __call__(self, frame, batch_id):
        started = time.monotonic()
        batch = frame.toArrow()
        computed = time.monotonic()
        failure = None
        handlers = self.handlers()
        names = pc.unique(batch["cluster"]).to_pylist()
        share = max(1, defaults.RECORD_ROW_BUDGET // max(1, len(names)))
        for name in names:
            handler = handlers.get(name)
            if handler is None:  # a replayed batch of a cluster taken out of the fleet since: nobody to tell
                continue
            try:
                handler.handle(batch.filter(pc.equal(batch["cluster"], name)), batch_id, started, computed, share)
            except Exception as error:
                print(f"batch {batch_id}: cluster {name}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
                failure = failure or error
        if failure is not None:
            raise failure


def batch_duration_listener(watched):
    """A listener observing each batch's wall time for the clusters `watched()` returns (their MonitorMetrics)."""
    from pyspark.sql.streaming import StreamingQueryListener

    class BatchDurations(StreamingQueryListener):
        def onQueryStarted(self, event):
            pass

        def onQueryProgress(self, event):
            total_ms = event.progress.durationMs.get("triggerExecution")
            if total_ms is not None:
                for metrics in watched():
                    metrics.batch_duration.observe(total_ms / 1000.0)

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    return BatchDurations()


# What the state is keyed by: a job of one cluster by bucket alone (as every checkpoint before fleet jobs), a fleet
# job by cluster and bucket, so that each cluster's state is its own in the checkpoint.
ONE_CLUSTER_KEY, FLEET_KEY = ("bucket",), ("cluster", "bucket")


def track(stream, settings, key=ONE_CLUSTER_KEY, per_cluster=None):
    """The stateful part of the query, on any stream of source rows (the benchmarks feed it synthetic ones);
    `per_cluster`: a fleet's clusters' own Settings (streaming.spark.stateful.make_tracker)."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    return stream.groupBy(*key).applyInPandasWithState(
        make_tracker(settings, per_cluster), OUTPUT_SCHEMA, STATE_SCHEMA, "update", GroupStateTimeout.NoTimeout)


def poll_stream(spark, config, source=PollDataSource, gate_path=None):
    """The stream of source rows: one poll per trigger while the controller wants a batch (`gate_path`,
    streaming.control.gate; None: every trigger). bench/stream.py passes its alternative sources."""
    spark.dataSource.register(source)
    return (spark.readStream.format(source.name())
            .options(**Target.of_config(config).options())
            .option("buckets", str(STATE_BUCKETS))
            .option("gate", gate_path or "")
            .load())


def settings_of(config):
    return Settings(stall_after_s=config.stall_after_s, rate_window_s=config.rate_window_s)


def start_tracking(stream, config, handler, key=ONE_CLUSTER_KEY, per_cluster=None):
    """The stateful query over `stream`, its batches handed to `handler`, checkpointed."""
    tracked = track(stream, settings_of(config), key, per_cluster)
    return (tracked.writeStream.foreachBatch(handler)
            .option("checkpointLocation", config.checkpoint_location)
            .trigger(processingTime=f"{int(config.trigger_interval_s * 1000)} milliseconds")
            .outputMode("update")
            .queryName(APP_NAME)
            .start())


def start_query(spark, config, handler, gate_path=None):
    return start_tracking(poll_stream(spark, config, gate_path=gate_path), config, handler)


def start_fleet_query(spark, config, handler, members):
    """The fleet job's query (streaming.spark.fleet_source): `config` the job's (checkpoint, trigger), `members`
    [(JobConfig, gate path)] of the clusters it polls, each with its own trigger interval and Settings."""
    from streaming.spark.fleet_source import FleetDataSource, roster_option

    spark.dataSource.register(FleetDataSource)
    roster = roster_option([(Target.of_config(c), gate_path, c.trigger_interval_s) for c, gate_path in members])
    stream = (spark.readStream.format(FleetDataSource.name()).option("roster", roster)
              .option("buckets", str(STATE_BUCKETS)).option("poll_deadline", str(2 * config.trigger_interval_s))
              .load())
    per_cluster = {c.cluster_label: settings_of(c) for c, _ in members}
    return start_tracking(stream, config, handler, FLEET_KEY, per_cluster)


def last_finished_batch(query):
    """The id of the last batch the query finished (offsets committed), -1 before the first."""
    progress = query.lastProgress
    return progress["batchId"] if progress else -1


def may_stop_now(finished_at_request, trigger_active, finished_now):
    """Between batches: no trigger running, or the batch that ran when the stop was asked for has finished.
    Waiting for an idle moment instead never ends while batches run back to back (a batch longer than the
    trigger interval): the stop then took the whole bound and let a dozen more batches run."""
    return not trigger_active or finished_now > finished_at_request


def stop_between_batches(query, bound_s=30.0):
    """Stop once the running batch finished: interrupting foreachBatch mid-write only wastes it."""
    deadline = time.monotonic() + bound_s
    finished_at_request = last_finished_batch(query)
    while (query.isActive and time.monotonic() < deadline
           and not may_stop_now(finished_at_request, query.status.get("isTriggerActive"), last_finished_batch(query))):
        time.sleep(0.05)
    if query.isActive:
        query.stop()
