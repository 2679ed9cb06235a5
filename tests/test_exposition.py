"""/metrics: the snapshot's text written in one pass (sinks.exposition) is what prometheus_client writes for the
same gauges, in both formats a scraper may ask for, and it parses."""

import gzip
import shutil
import subprocess
import urllib.request

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from sinks import metric_names as m
from sinks.exposition import render
from sinks.prometheus import Instruments, MetricsServer, MonitorMetrics, Picture, samples
from streaming.vocabulary.columns import from_rows

OPENMETRICS_ACCEPT = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"


class Families:
    """The samples as prometheus_client's own gauge families: what its exposition writes is the reference."""

    def __init__(self, gauge_samples):
        self.gauge_samples = gauge_samples

    def collect(self):
        families = {}
        for metric, names, values, value in self.gauge_samples:
            if metric not in families:
                families[metric] = GaugeMetricFamily(metric.name, metric.help, labels=list(names))
            families[metric].add_metric(list(values), value)
        return families.values()


def moves(*rows):
    """Replica rows as the picture holds them: columns."""
    return from_rows(list(rows))


def replica(topic, partition, broker, state="STALLED", value=500.0, reason="LEADER_NOT_SENDING"):
    return {"topic": topic, "partition": partition, "broker": broker, "state": state, "numerator": value,
            "denominator": 1000.0, "progress": 0.5, "in_isr": False, "copy_rate": value / 7, "eta_seconds": None,
            "stalled_seconds": 1e21, "reason_code": reason}


PICTURES = [
    ("empty", Picture()),
    ("plain", Picture(replicas=moves(replica("orders", 0, 2)), last_poll_s=1700000000.25,
                      summary={"bytes_remaining": 500, "rate_bytes_per_sec": None, "eta_seconds": None})),
    ("label-values-to-escape", Picture(replicas=moves(replica('we"ird\\topic\nx', 3, 1), replica("t\u00e9st", 1, 2)),
                                       topic_throttles=({"topic": 'a"b', "kind": "leader", "value": "*"},))),
    ("awkward-numbers", Picture(replicas=moves(replica("t", 0, 1, value=float("inf")), replica("t", 1, 1, value=-0.0),
                                             replica("t", 2, 1, value=123456789.125), replica("t", 3, 1, value=1e-300)))),
]


@pytest.mark.parametrize("picture", [p for _, p in PICTURES], ids=[i for i, _ in PICTURES])
@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_render_writes_what_prometheus_client_writes(picture, openmetrics):
    gauge_samples = samples(picture, "replica")
    reference = (openmetrics_latest(Families(gauge_samples)).decode().removesuffix("# EOF\n") if openmetrics
                 else generate_latest(Families(gauge_samples)).decode())
    assert render(gauge_samples, openmetrics) == reference


ODD_HELP = m.Metric("krm_test_odd_help", "gauge", ("a",), 'help with "quotes", a \\ backslash and a\nnewline')


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_help_text_is_escaped_as_each_format_escapes_it(openmetrics):
    gauge_samples = [(ODD_HELP, ("a",), ("x",), 1.0)]
    reference = (openmetrics_latest(Families(gauge_samples)).decode().removesuffix("# EOF\n") if openmetrics
                 else generate_latest(Families(gauge_samples)).decode())
    assert render(gauge_samples, openmetrics) == reference


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=8), st.integers(0, 3), st.floats(allow_nan=False)), max_size=6))
def test_render_writes_what_prometheus_client_writes_for_any_labels_and_values(drawn):
    picture = Picture(replicas=moves(*(replica(topic, partition, 1, value=value) for topic, partition, value in drawn)))
    gauge_samples = samples(picture, "replica")
    assert render(gauge_samples) == generate_latest(Families(gauge_samples)).decode()


def many_moves(n):
    return Picture(replicas=moves(*(replica(f"topic-{i % 3}", i, 1 + i % 4, state="COPYING", value=float(i), reason=None)
                                    for i in range(n))), last_poll_s=1700000000.0)


@pytest.fixture
def served():
    """The job's metrics serving more moves than the row budget (2 here), a counter and a histogram."""
    metrics = MonitorMetrics("test", "replica", apis=("Metadata",))
    metrics.snapshot.budget = 2
    metrics.snapshot.update(many_moves(5))
    metrics.poll_errors.labels(api="Metadata").inc()
    metrics.batch_duration.observe(0.3)
    server = MetricsServer(metrics.instruments)
    server.add(metrics)
    server.serve(0)
    yield metrics, f"http://127.0.0.1:{server._server.server_port}/metrics"
    server.close()


def test_one_server_shows_every_cluster_of_a_fleet_each_family_once_and_forgets_a_cluster_taken_out():
    instruments = Instruments()
    server = MetricsServer(instruments)
    for name, labels in (("eu", {"region": "eu-west-1"}), ("us", {})):
        metrics = MonitorMetrics(name, "replica", apis=("Metadata",), instruments=instruments, labels=labels)
        metrics.snapshot.update(many_moves(3))
        metrics.poll_errors.labels(api="Metadata").inc()
        server.add(metrics)
    server.serve(0)
    try:
        url = f"http://127.0.0.1:{server._server.server_port}/metrics"
        families = {f.name: f for f in text_string_to_metric_families(scrape(url)[1].decode())}
        assert {s.labels["cluster"] for s in families[m.REPLICA_STATE.name].samples} == {"eu", "us"}
        assert [(s.labels, s.value) for s in families[m.CLUSTER_INFO.name].samples] == [
            ({"cluster": "eu", "region": "eu-west-1"}, 1.0), ({"cluster": "us"}, 1.0)]
        server.remove("eu")
        body = scrape(url)[1].decode()
        assert 'cluster="eu"' not in body and 'cluster="us"' in body
    finally:
        server.close()


def scrape(url, **headers):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as answer:
        return answer.headers, answer.read()


def test_metrics_in_prometheus_text_are_the_whole_registry_as_prometheus_client_writes_it(served):
    metrics, url = served
    headers, body = scrape(url)
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert body == generate_latest(metrics.registry)
    families = {family.name: family for family in text_string_to_metric_families(body.decode())}
    assert len([s for s in families[m.REPLICA_STATE.name].samples if s.value == 1]) == 2
    assert sum(s.value for s in families[m.METRICS_ROWS_OMITTED.name].samples) == 3


def test_metrics_in_openmetrics_end_with_eof_and_parse(served):
    metrics, url = served
    headers, body = scrape(url, Accept=OPENMETRICS_ACCEPT)
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert body == openmetrics_latest(metrics.registry) and body.endswith(b"# EOF\n")
    names = {family.name for family in parse_openmetrics(body.decode())}
    assert {m.METRICS_ROWS_OMITTED.name, m.LAST_POLL.name, "kafka_reassignment_monitor_poll_errors"} <= names


def test_metrics_are_gzipped_when_the_scraper_accepts_it(served):
    metrics, url = served
    headers, body = scrape(url, **{"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] == "gzip" and gzip.decompress(body) == generate_latest(metrics.registry)


def test_promtool_finds_no_problem_in_the_metrics(served):
    tool = shutil.which("promtool")
    assert tool, "promtool not on PATH (`make prometheus`)"
    _, body = scrape(served[1])
    result = subprocess.run([tool, "check", "metrics"], input=body, capture_output=True, timeout=30)
    assert result.returncode == 0, (result.stdout + result.stderr).decode()


def test_every_series_names_its_cluster_first_of_all(served):
    """The contract of sinks.metric_names: every family's first label is `cluster`, and /metrics fills it in for the
    gauges of the picture, the counters and the histograms alike."""
    assert all(metric.labels[0] == m.CLUSTER for metric in m.ALL)
    metrics, url = served
    _, body = scrape(url)
    series = [s for family in text_string_to_metric_families(body.decode()) for s in family.samples
              if family.name.startswith("kafka_reassignment")]
    assert {s.labels.get(m.CLUSTER) for s in series} == {"test"}
    assert {s.name.removesuffix("_total") for s in series if s.name.startswith("kafka_reassignment_monitor")} >= {
        "kafka_reassignment_monitor_poll_errors", "kafka_reassignment_monitor_batch_duration_seconds_count",
        "kafka_reassignment_monitor_poll_duration_seconds_count", "kafka_reassignment_monitor_last_poll_timestamp_seconds"}
