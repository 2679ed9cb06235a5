"""The job's driver: its configuration and `run`, what `reassign-monitor run` and
`spark-submit streaming/job_main.py` both call.

Light on purpose: /metrics, the admin door and the job's controller (streaming.control.controller: the only code of
the job that changes the cluster) start before anything imports Spark, pyarrow or pandas (streaming.spark.job:
seconds on a loaded machine), so liveness and removals that came due while the job was down do not wait for
Spark. Everything here runs on the driver; nothing is pickled.
"""

import os
import shutil
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass

from sinks.spool import DIRECTORY as SPOOL_DIRECTORY
from sinks.spool import Spool
from streaming.spark.checkpoint import local_path
from streaming.spark.job_log import log_line
from streaming.vocabulary import defaults
from streaming.vocabulary.cluster_name import name_of
from streaming.vocabulary.echo import first_line
from streaming.vocabulary.kafka_apis import POLL_APIS, PRODUCE

QUERY_RESTART_FIRST_PAUSE_S = 1.0
QUERY_RESTART_MAX_PAUSE_S = 30.0


@dataclass(frozen=True)
class JobConfig:
    bootstrap: str
    command_config: str | None = None
    cluster_name: str | None = None  # `--cluster NAME` of a fleet file (docs/operations.md "Several clusters"), or
    # --cluster-name
    timeout_s: float = defaults.TIMEOUT_S
    master: str | None = defaults.MASTER
    checkpoint_location: str = defaults.CHECKPOINT_LOCATION
    progress_topic: str = defaults.PROGRESS_TOPIC
    ownership_topic: str = defaults.OWNERSHIP_TOPIC
    metrics_port: int = defaults.METRICS_PORT
    metrics_address: str = defaults.METRICS_ADDRESS
    metrics_detail: str = defaults.METRICS_DETAIL
    trigger_interval_s: float = defaults.TRIGGER_INTERVAL_S
    stall_after_s: float = defaults.STALL_AFTER_S
    rate_window_s: float = defaults.RATE_WINDOW_S
    throttle_cleanup: str = defaults.THROTTLE_CLEANUP
    dry_run: bool = False
    quiet: bool = False
    steering: object = None  # streaming.control.ownership.records.Steering: `--throttle auto` and its bounds, or None
    throttle_interval_s: float = defaults.THROTTLE_INTERVAL_S
    guard_url: str | None = None
    guard_query: str | None = None

    @property
    def cluster_label(self):
        """The cluster's name in every metric's label and every record (streaming.vocabulary.cluster_name)."""
        return name_of(self.cluster_name, self.bootstrap)

    @property
    def cluster(self):
        """What the job calls the cluster in its lines: its given name (fleet file, --cluster-name) with its
        bootstrap servers, else its bootstrap servers."""
        return f"cluster {self.cluster_name} ({self.bootstrap})" if self.cluster_name else f"cluster {self.bootstrap}"


def controller_of(config, admin, applier, metrics, writer, gate_path, log=log_line):
    """The job's controller (streaming.control.controller), with the one ledger of the ownership topic (created
    through the driver's `applier` unless it exists)."""
    from streaming.cluster.poller import strict_poll
    from streaming.control.controller import Controller
    from streaming.control.ownership.store import KafkaLedger, ensure_ownership_topic
    from streaming.control.throttles.guard import PrometheusGuard
    from streaming.spark.outputs import first_look
    from streaming.vocabulary.throttle_actions import Policy

    guard = PrometheusGuard(config.guard_url, config.guard_query) if config.guard_url else None
    ensure_ownership_topic(applier, config.ownership_topic)
    return Controller(admin, KafkaLedger(admin, config.ownership_topic), metrics, gate_path,
                      config.trigger_interval_s, Policy(cleanup=config.throttle_cleanup, dry_run=config.dry_run),
                      writer=writer, read=lambda topics: strict_poll(admin, topics), timeout_s=config.timeout_s,
                      steering=config.steering, throttle_interval_s=config.throttle_interval_s, guard=guard,
                      picture_of=lambda snapshot: first_look(snapshot, 2 * config.trigger_interval_s), log=log)


def progress_spool(directory, publisher, metrics):
    """What the batches and the controller write the progress topic with when the checkpoint location is local:
    the progress spool in `directory` there (sinks.spool: a batch's records are durable on disk when its write
    returns, and a thread delivers them to Kafka in order through `publisher`), its sender started. With a remote
    checkpoint location there is none: they write through the publisher, each write waiting for Kafka's
    acknowledgement (docs/architecture.md "The progress spool")."""

    def failed(error, backlog):
        metrics.poll_errors.labels(api=PRODUCE).inc()
        log_line(f"progress topic: delivering the spool's {backlog} record(s) failed, retrying: "
                 f"{first_line(str(error)) or type(error).__name__}")

    spool = Spool(directory, publisher.write, failed)
    metrics.progress_spool_records.set_function(lambda: spool.backlog_records)
    return spool.start()


@dataclass
class ClusterParts:
    """One cluster's share of a job on the driver: its door, the progress spool (None with a remote checkpoint
    location), what batches write its records with, and its controller (the only code that changes the cluster)."""
    config: JobConfig
    metrics: object
    admin: object
    spool: object
    writer: object
    controller: object
    gate_path: str
    line_prefix: str = ""  # a fleet job's lines name the cluster they are about

    def handler(self, quiet):
        """The batch handler of this cluster's part of each batch (streaming.spark.job.BatchHandler)."""
        from streaming.spark import job

        return job.BatchHandler(self.writer, self.metrics, self.controller, None if quiet else sys.stdout,
                                pending_after_s=2 * self.config.trigger_interval_s, line_prefix=self.line_prefix)

    def close(self):
        if self.controller is not None:
            self.controller.stop()
        if self.spool is not None:  # its last records delivered before the door closes; what is left waits on disk
            self.spool.close(self.config.timeout_s)
        if self.admin is not None:
            self.admin.close()


def start_cluster(config, metrics, gate_path, spool_directory, line_prefix=""):
    """A cluster's parts, started: the driver's one door to it (topics, progress records and the controller share
    it; it logs which node it holds and when that node answers again), its progress topic, the progress spool in
    `spool_directory` (None: a remote checkpoint location), its controller. The job's topics are created, and its
    records written, through the one writer (streaming.control.applier); the batches get only the progress topic's
    publisher. What it opened is closed again when a step fails. `line_prefix` goes in front of its lines."""
    from sinks.progress_topic import ensure_progress_topic
    from streaming.cluster.admin import KafkaClusterAdmin
    from streaming.control.applier import applier_of

    def log(line):
        log_line(line_prefix + line)

    parts = ClusterParts(config, metrics, None, None, None, None, gate_path, line_prefix)
    try:
        parts.admin = KafkaClusterAdmin(config.bootstrap, config.command_config, config.timeout_s, log=log)
        applier = applier_of(parts.admin, log=log)
        ensure_progress_topic(applier, config.progress_topic)
        publisher = applier.publisher(config.progress_topic)
        parts.spool = None if spool_directory is None else progress_spool(spool_directory, publisher, metrics)
        parts.writer = publisher if parts.spool is None else parts.spool
        parts.controller = controller_of(config, parts.admin, applier, metrics, parts.writer, gate_path, log).start()
    except BaseException:
        parts.close()
        raise
    return parts


def stop_on_signals():
    """An event set by SIGINT and SIGTERM: the job stops cleanly (the checkpoint lets the next run resume)."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def run_queries(start_query, stop, out, restart_wanted=lambda: False):
    """Run the streaming query `start_query()` until `stop` is set, stopped between batches. A query that fails
    mid-run (a batch's records could not be written in time) is restarted from the checkpoint after a pause, so its
    batch is replayed: the job itself never stops on a cluster error. `restart_wanted()`: the query is to start anew
    (a fleet job's clusters changed); it returns then, for the caller to start the next."""
    from streaming.spark import job

    pause_s = QUERY_RESTART_FIRST_PAUSE_S
    while not stop.is_set():
        query = start_query()
        while query.isActive and not stop.is_set() and not restart_wanted():
            try:
                query.awaitTermination(0.5)
            except Exception:  # it raises once the query failed; query.exception() below says why
                break
        job.stop_between_batches(query)
        error = query.exception()
        if error is None or stop.is_set():
            return
        print(f"reassign-monitor: streaming query failed ({first_line(getattr(error, 'desc', None) or error) or type(error).__name__}); restarting from the checkpoint "
              f"in {pause_s:g}s", file=out, flush=True)
        stop.wait(pause_s)
        pause_s = min(pause_s * 2, QUERY_RESTART_MAX_PAUSE_S)


def run(config, out=sys.stderr):
    """Run until SIGINT/SIGTERM (then stop cleanly; the checkpoint lets the next run resume).

    Start-up order: /metrics first (a taken port fails before anything is created), then the progress topic
    (created through the admin door, which waits until topics have leaders), then the controller (it reads the
    ownership topic; its first tick is the first look: liveness, the throttle baseline, removals due while the
    job was down, whether batches are needed), then Spark, whose source asks the controller's gate each trigger."""
    from sinks.prometheus import Instruments, MetricsServer, MonitorMetrics

    # First of all: /metrics shows the controller's first look seconds before Spark is up, so an operator (or a
    # container runtime) may stop the job while Spark starts; that is a clean stop too.
    stop = stop_on_signals()
    instruments = Instruments()
    metrics = MonitorMetrics(config.cluster_label, config.metrics_detail, apis=POLL_APIS + (PRODUCE,),
                             instruments=instruments)
    server = MetricsServer(instruments)
    server.add(metrics)
    server.serve(config.metrics_port, config.metrics_address)
    parts = spark = None
    gate_directory = tempfile.mkdtemp(prefix="reassign-monitor-gate-")  # the driver's machine (control.gate)
    try:
        checkpoint = local_path(config.checkpoint_location)
        parts = start_cluster(config, metrics, os.path.join(gate_directory, "gate.json"),
                              None if checkpoint is None else os.path.join(checkpoint, SPOOL_DIRECTORY))
        from streaming.spark import job  # pyspark, pyarrow, pandas: seconds of imports, after the controller is up

        spark = job.build_session(config)
        spark.streams.addListener(job.batch_duration_listener(lambda: [metrics]))
        handler = parts.handler(config.quiet)
        print(f"reassign-monitor: polling {config.cluster} every {config.trigger_interval_s:g}s; "
              f"metrics on http://{config.metrics_address}:{config.metrics_port}/metrics; "
              f"progress topic {config.progress_topic}", flush=True)
        run_queries(lambda: job.start_query(spark, config, handler, parts.gate_path), stop, out)
    finally:
        if parts is not None:
            parts.close()
        close_job(gate_directory, server, spark)
    return 0


def close_job(gate_directory, server, spark):
    """What a job closes last, once its clusters' parts are closed: the gates, /metrics, Spark."""
    shutil.rmtree(gate_directory, ignore_errors=True)
    server.close()
    if spark is not None:
        spark.stop()
