"""The fleet job's driver: `run --clusters FILE` without `--cluster`, every cluster of the fleet file in one job
(docs/operations.md "Several clusters", docs/architecture.md "The fleet job").

Each cluster gets the parts a job of one cluster has (streaming.spark.driver.ClusterParts: its door, progress topic
and spool, its controller with its duties, its gate), started on a thread of its own: a cluster that is down or
refuses the credentials at the start is retried there, its `kafka_reassignment_cluster_up` saying why, and keeps no
other cluster from starting. One /metrics serves them all; one streaming query polls the started ones
(streaming.spark.fleet_source), one input partition per cluster.

The fleet file is read again on SIGHUP and when it changes: clusters added are started, clusters removed are stopped
(their series leave /metrics), clusters whose settings changed are started anew; each change starts the query anew
between two batches, from the checkpoint, with every other cluster's state as it was. A file that no longer reads is
said in one line and changes nothing.
"""

import os
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass, replace
from typing import Callable

from sinks.spool import DIRECTORY as SPOOL_DIRECTORY
from streaming.spark.checkpoint import local_path
from streaming.spark.driver import JobConfig, close_job, run_queries, start_cluster, stop_on_signals
from streaming.spark.job_log import log_line
from streaming.vocabulary.echo import first_line
from streaming.vocabulary.errors import BadInput, kind_of
from streaming.vocabulary.kafka_apis import POLL_APIS, PRODUCE

START_RETRY_FIRST_PAUSE_S = 2.0
START_RETRY_MAX_PAUSE_S = 60.0
WATCH_INTERVAL_S = 1.0  # how often the fleet file's modification time is compared


@dataclass(frozen=True)
class Member:
    """One cluster of the fleet: its job's configuration (the command line's flags with the cluster's own) and the
    fleet file's labels."""
    config: JobConfig
    labels: tuple = ()  # ((name, value), ...)


@dataclass(frozen=True)
class FleetConfig:
    job: JobConfig  # the job-wide flags (Spark master, checkpoint, /metrics, stdout): the first cluster's config
    members: tuple  # Member, ... in the file's order
    path: str
    reread: Callable[[], tuple]  # the members of the file read again; raises BadInput


def changes(running, wanted):
    """(names to stop, members to start) to go from `running` {name: Member} to `wanted` {name: Member}: a cluster
    whose settings changed is stopped and started anew."""
    stopped = [name for name, member in running.items() if wanted.get(name) != member]
    started = [member for name, member in wanted.items() if running.get(name) != member]
    return stopped, started


class Fleet:
    """The clusters of a fleet job on the driver: their metrics on the job's /metrics, their parts once started."""

    def __init__(self, job, server, instruments, gate_directory):
        self.job, self.server, self.instruments, self.gate_directory = job, server, instruments, gate_directory
        self.changed = threading.Event()  # the started clusters changed: the query is to start anew
        self._lock = threading.Lock()
        self._members = {}  # name -> Member wanted
        self._cancel = {}  # name -> Event ending its starting thread
        self._parts = {}  # name -> ClusterParts, started
        self._handlers = {}  # name -> BatchHandler
        self._retired = []  # ClusterParts stopped once the query is

    def apply(self, members):
        """Start and stop clusters so that the fleet is `members`."""
        wanted = {member.config.cluster_label: member for member in members}
        with self._lock:
            stopped, started = changes(self._members, wanted)
            for name in stopped:
                self._cancel.pop(name).set()
                del self._members[name]
                self._handlers.pop(name, None)
                if name in self._parts:
                    self._retired.append(self._parts.pop(name))
                self.server.remove(name)
                log_line(f"fleet: cluster {name} stopped")
            for member in started:
                self._start(member)
        if stopped:
            self.changed.set()

    def _start(self, member):
        from sinks.prometheus import MonitorMetrics

        config = member.config
        name = config.cluster_label
        metrics = MonitorMetrics(name, self.job.metrics_detail, apis=POLL_APIS + (PRODUCE,),
                                 instruments=self.instruments, labels=dict(member.labels))
        self.server.add(metrics)
        cancel = threading.Event()
        self._members[name], self._cancel[name] = member, cancel
        threading.Thread(target=self._starting, args=(member, metrics, cancel), name=f"start {name}",
                         daemon=True).start()

    def _starting(self, member, metrics, cancel):
        config = member.config
        name = config.cluster_label
        checkpoint = local_path(self.job.checkpoint_location)
        spool_directory = None if checkpoint is None else os.path.join(checkpoint, SPOOL_DIRECTORY, name)
        gate_path = os.path.join(self.gate_directory, f"{name}.json")
        pause_s = START_RETRY_FIRST_PAUSE_S
        while not cancel.is_set():
            try:
                parts = start_cluster(config, metrics, gate_path, spool_directory, line_prefix=f"[{name}] ")
            except Exception as error:
                metrics.snapshot.looked(kind_of(error))
                log_line(f"fleet: {config.cluster}: not started ({first_line(str(error)) or type(error).__name__}); "
                         f"trying again in {pause_s:g}s")
                cancel.wait(pause_s)
                pause_s = min(2 * pause_s, START_RETRY_MAX_PAUSE_S)
                continue
            with self._lock:
                if cancel.is_set():  # taken out of the fleet while it started
                    self._retired.append(parts)
                    return
                self._parts[name] = parts
                self._handlers[name] = parts.handler(self.job.quiet)
            log_line(f"fleet: {config.cluster} started")
            self.changed.set()
            return

    def running(self):
        """[(JobConfig, gate path)] of the started clusters, in the file's order."""
        with self._lock:
            return [(self._parts[name].config, self._parts[name].gate_path) for name in self._members
                    if name in self._parts]

    def handlers(self):
        with self._lock:
            return dict(self._handlers)

    def metrics(self):
        with self._lock:
            return [parts.metrics for parts in self._parts.values()]

    def settle(self):
        """Close the parts of the clusters taken out (once no batch uses them), side by side."""
        with self._lock:
            retired, self._retired = self._retired, []
        _close_all(retired)

    def close(self):
        with self._lock:
            for cancel in self._cancel.values():
                cancel.set()
            parts, self._parts = [*self._parts.values(), *self._retired], {}
            self._retired = []
        _close_all(parts)


def _close_all(parts):
    closing = [threading.Thread(target=part.close, daemon=True) for part in parts]
    for thread in closing:
        thread.start()
    for thread in closing:
        thread.join()


class FileWatch:
    """Whether the fleet file changed since it was last read (its modification time and size), or SIGHUP came."""

    def __init__(self, path):
        self.path = path
        self.hangup = threading.Event()
        self._seen = self._stamp()

    def _stamp(self):
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size

    def due(self):
        stamp = self._stamp()
        if self.hangup.is_set() or stamp != self._seen:
            self.hangup.clear()
            self._seen = stamp
            return True
        return False


def reload(config, fleet, out):
    """The fleet file read again and applied; a file that does not read is one line, and the fleet stays."""
    try:
        members = config.reread()
    except BadInput as error:
        print(f"reassign-monitor: --clusters {config.path}: {error}; the clusters stay as they were", file=out,
              flush=True)
        return
    fleet.apply(members)


def run_fleet(config, out=sys.stderr):
    """Run the fleet until SIGINT/SIGTERM (then stop cleanly; the checkpoint lets the next run resume)."""
    from sinks.prometheus import Instruments, MetricsServer

    stop = stop_on_signals()
    watch = FileWatch(config.path)
    signal.signal(signal.SIGHUP, lambda *_: watch.hangup.set())
    instruments = Instruments()
    server = MetricsServer(instruments)
    server.serve(config.job.metrics_port, config.job.metrics_address)
    gate_directory = tempfile.mkdtemp(prefix="reassign-monitor-gate-")
    fleet = Fleet(config.job, server, instruments, gate_directory)
    spark = None
    try:
        fleet.apply(config.members)
        from streaming.spark import job

        spark = job.build_session(config.job)
        spark.streams.addListener(job.batch_duration_listener(fleet.metrics))
        handler = job.FleetBatchHandler(fleet.handlers)
        names = ", ".join(member.config.cluster_label for member in config.members)
        print(f"reassign-monitor: polling {len(config.members)} cluster(s) of {config.path} ({names}); metrics on "
              f"http://{config.job.metrics_address}:{config.job.metrics_port}/metrics", flush=True)

        def restart_wanted():
            if watch.due():
                reload(config, fleet, out)
            return fleet.changed.is_set()

        while not stop.is_set():
            members = fleet.running()
            fleet.changed.clear()
            if not members:  # none started yet: wait for one (or a change of the file)
                while not stop.wait(WATCH_INTERVAL_S / 2) and not restart_wanted():
                    pass
                continue
            # The query's trigger is the shortest interval; each cluster is polled at its own (fleet_source).
            query_config = replace(config.job, trigger_interval_s=min(c.trigger_interval_s for c, _ in members))
            run_queries(lambda: job.start_fleet_query(spark, query_config, handler, members), stop, out,
                        restart_wanted)
            fleet.settle()
    finally:
        fleet.close()
        close_job(gate_directory, server, spark)
    return 0
