import shutil
import socket
import subprocess
import urllib.request

import pytest
import yaml
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from dashboards.build import all_queries
from tests.prometheus_server import ALERT_RULES, JOB, PrometheusServer, prometheus_server

GAUGE = "krm_harness_test_value"


@pytest.fixture(scope="module")
def target():
    """A scrape target exposing one gauge, from prometheus_client's own HTTP server on a free port."""
    registry = CollectorRegistry()
    Gauge(GAUGE, "A value for the harness test.", ["kind"], registry=registry).labels(kind="fixed").set(42)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def prom(target):
    with prometheus_server([target]) as server:
        yield server


def test_scrapes_the_target(prom, target):
    [sample] = prom.wait_for_series(GAUGE, timeout=30)
    assert sample["metric"] == {"__name__": GAUGE, "kind": "fixed", "job": JOB, "instance": target}
    assert sample["value"][1] == "42"
    [up] = prom.wait_for_series(f'up{{instance="{target}"}}', timeout=10)
    assert up["value"][1] == "1"


def test_scrapes_every_second(prom):
    prom.wait_for_series(GAUGE, timeout=30)
    [count] = prom.wait_for_series(f"count_over_time({GAUGE}[10s]) >= 3", timeout=15)
    assert float(count["value"][1]) >= 3


def test_loads_the_alert_rules(prom):
    groups = prom.get("api/v1/rules")["groups"]
    loaded = {rule["name"] for group in groups for rule in group["rules"]}
    expected = {rule["alert"] for group in yaml.safe_load(ALERT_RULES.read_text())["groups"] for rule in group["rules"]}
    assert loaded == expected
    assert {group["interval"] for group in groups} == {1}


def test_wait_for_series_times_out(prom):
    with pytest.raises(TimeoutError):
        prom.wait_for_series("krm_harness_no_such_series", timeout=0.5)


def test_a_bad_expression_is_an_error_not_an_empty_result(prom):
    with pytest.raises(ValueError, match="bad_data"):
        prom.query("sum(")


def test_every_dashboard_query_is_valid_promql(prom):
    failures = []
    for dashboard, title, expr in all_queries():
        try:
            prom.query(expr)
        except ValueError as error:
            failures.append(f"{dashboard} / {title}: {error}")
    assert failures == []


def test_promtool_accepts_the_target_s_exposition(target):
    tool = shutil.which("promtool")
    assert tool, "promtool not on PATH (`make prometheus`)"
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=5) as response:
        text = response.read()
    assert GAUGE.encode() in text
    result = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert result.returncode == 0, (result.stdout + result.stderr).decode()


def test_stops_prometheus_and_cleans_up_on_exit():
    with prometheus_server([]) as server:
        assert isinstance(server, PrometheusServer)
        port = int(server.url.rpartition(":")[2])
        assert server.query("vector(1)")[0]["value"][1] == "1"
        directory = server.log_path.parent
    assert server.process.poll() is not None
    assert not directory.exists()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_stops_prometheus_when_the_block_raises():
    with pytest.raises(RuntimeError, match="boom"):
        with prometheus_server([]) as server:
            raise RuntimeError("boom")
    assert server.process.poll() is not None


def test_refuses_targets_off_loopback():
    with pytest.raises(ValueError, match="127.0.0.1"):
        with prometheus_server(["10.0.0.1:9469"]):
            pass
