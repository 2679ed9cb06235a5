"""The job's driver: its configuration and `run`, what `reassign-monitor run` and
`spark-submit streaming/job_main.py` both call.

Light on purpose: /metrics, the admin door, the janitor and the driver's watch (streaming.watch) start
before anything imports Spark, pyarrow or pandas (streaming.spark.job: seconds on a loaded machine), so
liveness and removals that came due while the job was down do not wait for Spark. Everything here runs on
the driver; nothing is pickled.
"""

import os
import shutil
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass

from streaming.vocabulary import defaults
from streaming.vocabulary.echo import first_line
from streaming.vocabulary.kafka_apis import POLL_APIS, PRODUCE
from streaming.watch.watch import Watch

QUERY_RESTART_FIRST_PAUSE_S = 1.0
QUERY_RESTART_MAX_PAUSE_S = 30.0


@dataclass(frozen=True)
class JobConfig:
    bootstrap: str
    command_config: str | None = None
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
    steering: object = None  # sinks.throttles.ownership.Steering: `--throttle auto` and its bounds, or None
    throttle_interval_s: float = defaults.THROTTLE_INTERVAL_S
    guard_url: str | None = None
    guard_query: str | None = None


def log_line(line):
    """The job's log (stderr): the door's lines about held nodes, from the driver and from the source's executor."""
    print(line, file=sys.stderr, flush=True)


def plan_advancer(config, admin, janitor):
    """The watch's advancer of plans (streaming.watch.plans), with stores of its own on the ownership topic;
    None without a janitor (the job then knows no ownership topic)."""
    from sinks.plans.plan_store import KafkaPlanStore
    from sinks.throttles.ownership_store import KafkaOwnershipStore
    from streaming.cluster.poller import strict_poll
    from streaming.watch.plans import PlanAdvancer

    if janitor is None:
        return None
    return PlanAdvancer(admin, KafkaPlanStore(admin, config.ownership_topic),
                        KafkaOwnershipStore(admin, config.ownership_topic),
                        lambda topics: strict_poll(admin, topics), config.timeout_s, acts=janitor.policy.acts)


def run(config, janitor_factory=None, out=sys.stderr):
    """Run until SIGINT/SIGTERM (then stop cleanly; the checkpoint lets the next run resume).

    Start-up order: /metrics first (a taken port fails before anything is created), then the janitor
    (it reads the ownership records) and the progress topic (created through the admin door, which waits
    until topics have leaders), then the driver's watch (streaming.watch: liveness, removals due while the
    job was down, whether batches are needed), then Spark, whose source asks the watch's gate each trigger.
    A query that fails mid-run (a batch's records could not be written in time) is restarted from the
    checkpoint after a pause, so its batch is replayed: the job itself never stops on a cluster error."""
    from sinks.progress_topic import ProgressTopicWriter, ensure_progress_topic
    from sinks.prometheus import MonitorMetrics
    from sinks.throttles.steer import steerer_factory
    from streaming.cluster.admin import KafkaClusterAdmin

    metrics = MonitorMetrics(config.metrics_detail, apis=POLL_APIS + (PRODUCE,))
    metrics.serve(config.metrics_port, config.metrics_address)
    admin = janitor = spark = watch = None
    gate_directory = tempfile.mkdtemp(prefix="reassign-monitor-gate-")  # the driver's machine (watch.gate)
    try:
        # The driver's one door to the cluster: topics, progress records, the janitor and the watch share it. It
        # logs which node it holds (a node that does not answer) and when that node answers again.
        admin = KafkaClusterAdmin(config.bootstrap, config.command_config, config.timeout_s, log=log_line)
        janitor = janitor_factory(config, admin) if janitor_factory else None
        steerer = steerer_factory(config, admin, janitor.store) if janitor is not None else None
        ensure_progress_topic(admin, config.progress_topic)
        writer = ProgressTopicWriter(admin, config.progress_topic)
        gate_path = os.path.join(gate_directory, "gate.json")
        watch = Watch(admin, metrics, gate_path, config.trigger_interval_s, janitor, writer,
                      plans=plan_advancer(config, admin, janitor)).start()
        from streaming.spark import job  # pyspark, pyarrow, pandas: seconds of imports, after the watch is up

        spark = job.build_session(config)
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        spark.streams.addListener(job._batch_duration_listener(metrics))
        handler = job.BatchHandler(writer, metrics, janitor, None if config.quiet else sys.stdout, watch.batch_done,
                                   steerer, pending_after_s=2 * config.trigger_interval_s, plans=watch.plan_statuses,
                                   plans_reported=watch.plans_reported, writing=watch.batch_writing,
                                   after_failed_poll=watch.batch_ran)
        print(f"reassign-monitor: polling {config.bootstrap} every {config.trigger_interval_s:g}s; "
              f"metrics on http://{config.metrics_address}:{config.metrics_port}/metrics; "
              f"progress topic {config.progress_topic}", flush=True)
        pause_s = QUERY_RESTART_FIRST_PAUSE_S
        while not stop.is_set():
            query = job.start_query(spark, config, handler, gate_path)
            while query.isActive and not stop.is_set():
                try:
                    query.awaitTermination(0.5)
                except Exception:  # it raises once the query failed; query.exception() below says why
                    break
            job.stop_between_batches(query)
            error = query.exception()
            if error is None or stop.is_set():
                break
            print(f"reassign-monitor: streaming query failed ({first_line(getattr(error, 'desc', None) or error) or type(error).__name__}); restarting from the checkpoint "
                  f"in {pause_s:g}s", file=out, flush=True)
            stop.wait(pause_s)
            pause_s = min(pause_s * 2, QUERY_RESTART_MAX_PAUSE_S)
    finally:
        if watch is not None:
            watch.stop()
        shutil.rmtree(gate_directory, ignore_errors=True)
        for closable in (admin, metrics):
            if closable is not None:
                closable.close()
        if spark is not None:
            spark.stop()
    return 0
