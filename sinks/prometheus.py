"""Prometheus: the latest batch as gauges, plus the monitor's own counters and histograms.

`samples(picture, detail, budget)` is pure: the gauge samples of one batch's picture, per-row series for at
most `budget` rows (sinks.metric_rows). `SnapshotCollector` turns them into text at scrape time from the last
picture it was handed (copied under a lock, never the network), so series of finished moves simply
disappear. Counters and histograms accumulate across batches in ordinary prometheus_client objects. /metrics
serves both (sinks.exposition); `MonitorMetrics.registry` holds both too, for readers in the process.
Names and labels: sinks.metric_names. `samples` are a picture's own labels; the collector and the counters put the
cluster's name (`cluster`, streaming.vocabulary.cluster_name) in front of them, so that one cluster's collector and
counters are what a job of several clusters holds once per cluster.
"""

import threading
from dataclasses import dataclass, field, replace

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

from sinks import metric_names as m
from sinks.carried_rates import carried
from sinks.exposition import metrics_app, render, serve
from sinks.metric_rows import shown_rows
from streaming.vocabulary.columns import Columns
from streaming.vocabulary.defaults import METRICS_ROW_BUDGET
from streaming.vocabulary.json_values import json_value
from streaming.vocabulary.states import MOVING_STATE_NAMES

DETAIL_KEYS = {"replica": ("topic", "partition", "broker"), "partition": ("topic", "partition"), "topic": ("topic",)}
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)


@dataclass(frozen=True)
class Picture:
    """What one batch knows: moving replica rows (history report columns with the model's ETA and the reasons),
    their partition and topic rollups (streaming.core.rollups: the same rollup the progress records carry), all
    three as columns (streaming.vocabulary.columns); partition counts per state, the cluster summary, throttle tables
    (snapshot rows), last poll time, the active plans' rows."""
    replicas: Columns = field(default_factory=Columns)
    partitions: Columns = field(default_factory=Columns)
    topics: Columns = field(default_factory=Columns)
    partition_states: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    broker_throttles: tuple = ()
    topic_throttles: tuple = ()
    last_poll_s: float | None = None
    plans: tuple = ()  # active plans' rows, and finished ones until reported once (streaming.control.plans.report.plan_row)


# Per --metrics-detail: the rows of the picture and which column each per-replica gauge reads. Coarser
# details read the rollup: copied bytes are the bytes done (capped at the target, whole once in the ISR).
REPLICA_GAUGES = ((m.REPLICA_COPIED_BYTES, "numerator"), (m.REPLICA_TARGET_BYTES, "denominator"),
                  (m.REPLICA_PROGRESS_RATIO, "progress"), (m.REPLICA_IN_ISR, "in_isr"),
                  (m.REPLICA_COPY_RATE, "copy_rate"), (m.REPLICA_ETA, "eta_seconds"),
                  (m.REPLICA_STALLED, "stalled_seconds"), (m.REPLICA_REMOTE_BYTES, "remote_bytes"))
ROLLUP_COLUMN = {"numerator": "bytes_done", "denominator": "bytes_total"}
ROLLUP_GAUGES = tuple((metric, ROLLUP_COLUMN.get(column, column)) for metric, column in REPLICA_GAUGES)
DETAIL_ROWS = {"replica": ("replicas", REPLICA_GAUGES), "partition": ("partitions", ROLLUP_GAUGES),
               "topic": ("topics", ROLLUP_GAUGES)}


def _throttled_entries(value):
    return -1 if value.strip() == "*" else len([e for e in value.split(",") if e.strip()])


def samples(picture, detail="replica", budget=METRICS_ROW_BUDGET):
    """[(Metric, label names, label values, value)] for every gauge of the picture; the per-row gauges for
    the `budget` rows shown first (sinks.metric_rows), the rest counted in METRICS_ROWS_OMITTED."""
    keys = DETAIL_KEYS[detail]
    out = []
    table, per_row = DETAIL_ROWS[detail]
    rows = getattr(picture, table)
    shown, omitted = shown_rows(rows, keys, budget)
    per_row = [(metric, column) for metric, column in per_row if column in rows]  # rows without it: no series
    columns = [*keys, "state", *(column for _, column in per_row), *(("reason_code",) if "reason_code" in rows else ())]
    for row in rows.select(list(dict.fromkeys(columns))).take(shown).rows() if len(shown) else ():
        labels = tuple(str(row[k]) for k in keys)
        for metric, column in per_row:
            value = json_value(row[column])
            if column == "bytes_total" and not (value or 0) > 0:
                continue  # a rollup with no known target: absent, as a replica's null denominator is
            if value is not None:
                out.append((metric, keys, labels, float(value)))
        out += [(m.REPLICA_STATE, keys + ("state",), labels + (name,), float(name == row["state"]))
                for name in MOVING_STATE_NAMES]
        if detail == "replica" and row.get("reason_code") is not None:  # rollups carry no reason
            out.append((m.REPLICA_DIAGNOSIS, keys + ("reason_code",), labels + (row["reason_code"],), 1.0))
    out += [(m.METRICS_ROWS_OMITTED, ("detail", "state"), (detail, name), float(omitted[name]))
            for name in MOVING_STATE_NAMES]
    out += [(m.PARTITIONS, ("state",), (name,), float(picture.partition_states.get(name, 0)))
            for name in MOVING_STATE_NAMES]
    summary = picture.summary
    if summary:
        out.append((m.REMAINING_BYTES, (), (), float(summary["bytes_remaining"])))
        out.append((m.COPY_RATE, (), (), float(summary["rate_bytes_per_sec"] or 0.0)))
        if summary.get("eta_seconds") is not None:
            out.append((m.ETA, (), (), float(summary["eta_seconds"])))
    for row in picture.broker_throttles:
        out.append((m.BROKER_THROTTLE_RATE, ("broker", "kind"), (str(row["broker"]), row["kind"]), float(row["rate"])))
    for row in picture.topic_throttles:
        out.append((m.TOPIC_THROTTLED_REPLICAS, ("topic", "kind"), (row["topic"], row["kind"]),
                    float(_throttled_entries(row["value"]))))
    for row in picture.plans:
        request = (row["request_id"],)
        out += [(m.PLAN_PARTITIONS, ("request_id", "state"), request + (state,), float(n))
                for state, n in row["partitions"].items()]
        out.append((m.PLAN_REMAINING_BYTES, ("request_id",), request, float(row["bytes_remaining"])))
        if row["eta_seconds"] is not None:
            out.append((m.PLAN_ETA, ("request_id",), request, float(row["eta_seconds"])))
    if picture.last_poll_s is not None:
        out.append((m.LAST_POLL, (), (), picture.last_poll_s))
    return out


def labelled(gauge_samples, cluster):
    """`gauge_samples` with the cluster label first, as every family in sinks.metric_names has it."""
    first_name, first_value = (m.CLUSTER,), (cluster,)
    return [(metric, first_name + names, first_value + values, value)
            for metric, names, values, value in gauge_samples]


def _later(a, b):
    return b if a is None else a if b is None else max(a, b)


class SnapshotCollector:
    """The gauges of the latest picture of one cluster (`cluster`: its name)."""

    def __init__(self, cluster, detail="replica", labels=None):
        self.cluster = cluster
        self.labels = dict(labels or {})  # the fleet file's labels of the cluster (kafka_reassignment_cluster_info)
        self._lock = threading.Lock()
        self._picture = Picture()
        self._rows_s = None  # the time of the poll the shown rows come from (liveness may be later: `touch`)
        self._throttles_s = None  # ... the shown throttle tables come from (a read of its own: `offer_throttles`)
        self._look = None  # the reason of the last look at the cluster (`looked`), None before the first
        self.detail = detail
        self.budget = METRICS_ROW_BUDGET  # rows with series of their own; bench/scrape.py lifts it for its `before` arm

    def update(self, picture):
        """A batch's picture: shown unless the rows shown come from a later poll (one `offer`ed while this batch was
        late): /metrics never goes back to an older look at the cluster. Its plans' rows are shown
        either way."""
        self._show(picture, lambda shown_s: shown_s > picture.last_poll_s, picture.plans)

    def offer(self, picture):
        """A picture of a poll the controller took outside the batches (before Spark's first batch, and while a
        batch is late: streaming.control.controller): shown unless the rows shown come from the same or a later
        poll. Only batches compute the plans' rows: those shown stay; so do the rates and ETAs only batches measure
        (sinks.carried_rates)."""
        self._show(picture, lambda shown_s: shown_s >= picture.last_poll_s, None, carry=True)

    def _show(self, picture, newer_shown, plans, carry=False):
        with self._lock:
            shown = self._picture if self._rows_s is not None and newer_shown(self._rows_s) else picture
            if shown is picture:
                if carry and self._rows_s is not None:
                    shown = carried(picture, self._picture, self._rows_s)
                self._rows_s = picture.last_poll_s
            newer_read = self._throttles_s is not None and self._throttles_s > shown.last_poll_s  # `offer_throttles`
            throttles = self._picture if newer_read else shown
            self._throttles_s = _later(self._throttles_s, shown.last_poll_s)
            self._picture = replace(shown, last_poll_s=_later(self._picture.last_poll_s, picture.last_poll_s),
                                    plans=self._picture.plans if plans is None else plans,
                                    topic_throttles=throttles.topic_throttles,
                                    broker_throttles=throttles.broker_throttles)

    def offer_throttles(self, topic_throttles, broker_throttles, poll_s):
        """The throttle tables of a read the controller took while no batch ran (once a trigger while nothing
        moves): shown unless those shown come from a later poll. Without it a throttle set while nothing moves
        would never reach /metrics, nor the alert on leaked throttles. A read of the same millisecond as the tables
        shown is taken: it was offered after them."""
        with self._lock:
            if self._throttles_s is not None and self._throttles_s > poll_s:
                return
            self._throttles_s = poll_s
            self._picture = replace(self._picture, topic_throttles=tuple(topic_throttles),
                                    broker_throttles=tuple(broker_throttles))

    def touch(self, poll_s):
        """Liveness from a poll that changed nothing else in the picture (the job's controller while no
        batch runs, streaming.control). Liveness never moves back: a batch's poll may predate the controller's."""
        with self._lock:
            self._picture = replace(self._picture, last_poll_s=_later(self._picture.last_poll_s, poll_s))

    def looked(self, reason):
        """The outcome of a look at the cluster: m.POLLED, or the kind of error that failed it (the error table,
        streaming.vocabulary.errors): kafka_reassignment_cluster_up says it until the next look."""
        with self._lock:
            self._look = reason

    def describe(self):
        return []  # names are fixed, but describing none keeps registration from calling collect()

    def samples(self):
        with self._lock:
            picture, look = self._picture, self._look
        out = samples(picture, self.detail, self.budget)
        if look is not None:
            out.append((m.CLUSTER_UP, ("reason",), (look,), float(look == m.POLLED)))
        out.append((m.CLUSTER_INFO, tuple(self.labels), tuple(self.labels.values()), 1.0))
        return labelled(out, self.cluster)

    def collect(self):
        families = {}
        for metric, label_names, label_values, value in self.samples():
            family = families.get(metric.name)
            if family is None:
                family = families[metric.name] = GaugeMetricFamily(metric.name, metric.help, labels=list(label_names))
            family.add_metric(list(label_values), value)
        yield from families.values()

    def text(self, openmetrics=False):
        """What collect() yields, as exposition text written in one pass (sinks.exposition.render)."""
        return render(self.samples(), openmetrics)


class _OfCluster:
    """A counter or histogram with its cluster label given: `labels(**others)` and `observe` fill it in, so
    the code that counts never names the cluster."""

    def __init__(self, metric, cluster):
        self._metric, self._cluster = metric, cluster

    def labels(self, **others):
        return self._metric.labels(**{m.CLUSTER: self._cluster}, **others)

    def observe(self, value):
        self.labels().observe(value)


class Instruments:
    """The counters and histograms of a job, one set whatever the number of clusters it watches (each series has its
    cluster label: `MonitorMetrics` fills it in), in `registry`, which /metrics has prometheus_client write."""

    def __init__(self):
        self.registry = CollectorRegistry()

        def counter(metric):
            return Counter(metric.name.removesuffix("_total"), metric.help, list(metric.labels), registry=self.registry)

        def histogram(metric):
            return Histogram(metric.name, metric.help, list(metric.labels), registry=self.registry,
                             buckets=DURATION_BUCKETS)

        self.throttle_actions = counter(m.THROTTLE_ACTIONS)
        self.poll_errors = counter(m.POLL_ERRORS)
        self.poll_duration = histogram(m.POLL_DURATION)
        self.batch_duration = histogram(m.BATCH_DURATION)
        self.progress_spool_records = Gauge(m.PROGRESS_SPOOL_RECORDS.name, m.PROGRESS_SPOOL_RECORDS.help,
                                            list(m.PROGRESS_SPOOL_RECORDS.labels), registry=self.registry)
        self.collectors = (self.throttle_actions, self.poll_errors, self.poll_duration, self.batch_duration,
                           self.progress_spool_records)

    def forget(self, cluster):
        """Every series of `cluster`: a cluster taken out of a fleet job (streaming.spark.driver) leaves none behind."""
        for collector in self.collectors:  # prometheus_client lists no family's series but in `_metrics`
            for labels in [key for key in list(collector._metrics) if key[0] == cluster]:
                collector.remove(*labels)


class MonitorMetrics:
    """What the job serves for the cluster `cluster` (its name): the snapshot gauges plus counters and histograms.
    `registry` holds them all, for readers in the process; /metrics (`MetricsServer`) writes the snapshots' text
    itself and has prometheus_client write the rest. `instruments`: the job's counters and histograms, shared by
    the clusters of a fleet job (a job of one cluster makes its own). `labels`: the fleet file's labels of the
    cluster, on its `kafka_reassignment_cluster_info` series. `apis`: the calls a poll makes, whose error counters
    start at 0 (increase() then sees the first error)."""

    def __init__(self, cluster, detail="replica", apis=(), instruments=None, labels=None):
        self.cluster = cluster
        self.instruments = instruments or Instruments()
        self.registry = CollectorRegistry()
        self.snapshot = SnapshotCollector(cluster, detail, labels)
        self.registry.register(self.snapshot)
        for collector in self.instruments.collectors:
            self.registry.register(collector)
        self.throttle_actions = _OfCluster(self.instruments.throttle_actions, cluster)
        for scope in m.THROTTLE_SCOPES:  # known labels start at 0: increase() then sees the first action
            for action in m.THROTTLE_ACTION_NAMES:
                self.throttle_actions.labels(scope=scope, action=action)
        self.poll_errors = _OfCluster(self.instruments.poll_errors, cluster)
        for api in apis:
            self.poll_errors.labels(api=api)
        for histogram in (self.instruments.poll_duration, self.instruments.batch_duration):
            histogram.labels(cluster)  # its series from the start, as an unlabelled histogram has
        self.poll_duration = _OfCluster(self.instruments.poll_duration, cluster)
        self.batch_duration = _OfCluster(self.instruments.batch_duration, cluster)
        self.progress_spool_records = self.instruments.progress_spool_records.labels(cluster)


class MetricsServer:
    """/metrics of a job: the snapshot gauges of every cluster it watches (one text, one family per metric) and the
    job's instruments. Clusters join and leave while it serves (a fleet job's reload)."""

    def __init__(self, instruments):
        self.instruments = instruments
        self._lock = threading.Lock()
        self._clusters = {}  # name -> MonitorMetrics
        self._server = None

    def add(self, metrics):
        with self._lock:
            self._clusters[metrics.cluster] = metrics

    def remove(self, cluster):
        with self._lock:
            self._clusters.pop(cluster, None)
        self.instruments.forget(cluster)

    def text(self, openmetrics=False):
        with self._lock:
            clusters = list(self._clusters.values())
        return render([sample for metrics in clusters for sample in metrics.snapshot.samples()], openmetrics)

    def serve(self, port, address="127.0.0.1"):
        self._server, _ = serve(metrics_app(self.text, self.instruments.registry), port, address)
        return self

    def close(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
