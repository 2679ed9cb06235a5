"""A real Prometheus for end-to-end tests: Debian's `prometheus` binary on 127.0.0.1, a free port, a
throw-away storage directory, scraping the given targets every second with the project's alert rules
loaded (evaluated every second too).

    with prometheus_server(["127.0.0.1:9469"]) as prom:
        [sample] = prom.wait_for_series("kafka_reassignment_remaining_bytes", timeout=30)
        prom.query('ALERTS{alertname="KafkaReassignmentMonitorDown"}')

The process is stopped (and its directory removed) when the block exits, whatever happened inside.
Expect the first scrape about 5 s after start: Prometheus' service discovery hands targets to the
scrape manager at most every 5 s, so wait on series (`wait_for_series`), never on a fixed sleep.
"""

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ALERT_RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
JOB = "kafka-reassign-monitor"
LOOPBACK = "127.0.0.1"
START_ATTEMPTS = 3  # a free port can be taken between finding it and Prometheus binding it


class PrometheusServer:
    def __init__(self, url, process, log_path):
        self.url = url
        self.process = process
        self.log_path = log_path

    def get(self, path, **params):
        """GET an HTTP API path (e.g. "api/v1/rules"); its `data`. A non-success answer raises ValueError
        with Prometheus' error text (a bad expression is an error of the test, not a timeout)."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}/{path}{query}", timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            body = json.load(error)
        if body.get("status") != "success":
            raise ValueError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr):
        """Instant query now: the result list (vector samples as {"metric": {...}, "value": [t, "v"]})."""
        return self.get("api/v1/query", query=expr)["result"]

    def wait_for_series(self, expr, timeout=30.0, poll_s=0.25):
        """The first non-empty result of `expr` within `timeout` seconds; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no series for {expr!r} within {timeout}s")
            time.sleep(poll_s)

    def log(self):
        return self.log_path.read_text(errors="replace")


def free_port():
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def write_config(directory, targets, rule_files):
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(Path(path).resolve()) for path in rule_files],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": list(targets)}]}],
    }
    path = directory / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def _ready(url):
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def _stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _start(binary, config, directory, timeout):
    """The server once /-/ready answers; None when the port was taken (try another)."""
    port = free_port()
    url = f"http://{LOOPBACK}:{port}"
    log_path = directory / f"prometheus-{port}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address={LOOPBACK}:{port}", "--storage.tsdb.retention.time=1h"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    try:
        while not _ready(url):
            if process.poll() is not None:
                if "address already in use" in log_path.read_text(errors="replace"):
                    return None
                raise RuntimeError(f"prometheus exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"prometheus not ready within {timeout}s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.1)
    except BaseException:
        _stop(process)
        raise
    return PrometheusServer(url, process, log_path)


@contextmanager
def prometheus_server(targets, rule_files=(ALERT_RULES,), timeout=30.0):
    """A running Prometheus scraping `targets` ("127.0.0.1:PORT"); stopped when the block exits."""
    bad = [t for t in targets if t.rpartition(":")[0] != LOOPBACK]
    if bad:
        raise ValueError(f"targets must be on {LOOPBACK}: {bad}")
    binary = shutil.which("prometheus")
    if not binary:
        raise RuntimeError("prometheus not on PATH (`make prometheus` installs Debian's package)")
    directory = Path(tempfile.mkdtemp(prefix="prometheus-test-"))
    server = None
    try:
        config = write_config(directory, targets, rule_files)
        for _ in range(START_ATTEMPTS):
            server = _start(binary, config, directory, timeout)
            if server:
                break
        else:
            raise RuntimeError(f"no free port for prometheus after {START_ATTEMPTS} attempts")
        yield server
    finally:
        if server is not None:
            _stop(server.process)
        shutil.rmtree(directory, ignore_errors=True)
