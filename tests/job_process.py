"""`reassign-monitor run` as a real subprocess for end-to-end tests: start, scrape, kill, stop."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from sinks.metric_names import POLL_DURATION, PROGRESS_SPOOL_RECORDS
from sinks.metric_names import LAST_POLL as LAST_POLL_METRIC
from tests.kafka_fixtures import wait_for

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("reassign-monitor"))
OWNED_JOB_TRIGGER_S = 2.0  # the shared `owned_job` (conftest)
OWNED_JOB_CLUSTER = "shared-owned"  # its --cluster-name: the `cluster` of its series and records
LAST_POLL = LAST_POLL_METRIC.name
SPOOLED = PROGRESS_SPOOL_RECORDS.name
# Spark batches handled (the poll-duration histogram's count, observed in foreachBatch itself; the batch-duration
# histogram comes from Spark's listener events, which can lag a batch). Liveness (LAST_POLL) comes from the
# driver's watch seconds after start, long before Spark's first batch: tests that need Spark's results wait on this.
BATCHES = POLL_DURATION.name + "_count"
# A Spark start on the 2-core machine took 24 s quiet, up to 45 s under the suite's own load, and over 150 s (a first
# batch alone 60 s) when both parts' clusters and jobs started at once beside other work (CI at a load of 14-24):
# bound it far above. TEST_FIRST_POLL_S raises it further where the machine is loaded beyond that.
FIRST_POLL_S = float(os.environ.get("TEST_FIRST_POLL_S", "360"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JobProcess:
    """`command run ...`: by default this environment's `reassign-monitor`, started from the repository. The
    installed-package tests pass another `command` (an installed one, `podman run IMAGE`), `cwd` and `env`."""

    def __init__(self, bootstrap, checkpoint, log_path, *flags, metrics_port=None, command=(CLI,), cwd=ROOT,
                 env=None):
        self.bootstrap = bootstrap
        self.metrics_port = metrics_port or free_port()
        self.progress_topic = f"progress-{uuid.uuid4().hex[:8]}"
        self.args = [*command, "run", "--bootstrap-server", bootstrap, "--checkpoint-location", str(checkpoint),
                     "--metrics-port", str(self.metrics_port), "--metrics-address", "127.0.0.1",
                     "--progress-topic", self.progress_topic, *flags]
        self.log_path = log_path
        self.cwd, self.env = cwd, env
        self.process = None

    def start(self, extra=()):
        log = open(self.log_path, "a")
        env = {**(os.environ if self.env is None else self.env), "SPARK_LOCAL_IP": "127.0.0.1"}
        self.process = subprocess.Popen(self.args + list(extra), stdout=log, stderr=subprocess.STDOUT, env=env,
                                        stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.cwd)
        return self

    def ensure_started(self):
        """Start it when it is not running (a test before may have killed it)."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        return self

    def wait_first_batch(self, timeout_s=FIRST_POLL_S, interval_s=0.5, message="the job's first Spark batch"):
        wait_for(lambda: self.metric(BATCHES), timeout_s, interval_s=interval_s, message=message)
        return self

    def kill(self):
        """SIGKILL the whole process group (the Python driver and its Spark JVM)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    @contextlib.contextmanager
    def spark_stopped(self):
        """The job's Spark JVM SIGSTOPped for the block (no batch is planned or run; the Python driver and its
        watch go on), and continued after it whatever happens."""
        found = subprocess.run(["pgrep", "-s", str(self.process.pid), "java"], capture_output=True, text=True)
        [jvm] = [int(pid) for pid in found.stdout.split()]
        os.kill(jvm, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(jvm, signal.SIGCONT)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the driver only: it stops its Spark JVM itself
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def samples(self):
        """{(name, frozenset(labels.items())): value} from /metrics, or {} while not up."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as response:
                text = response.read().decode()
        except OSError:
            return {}
        return {(s.name, frozenset(s.labels.items())): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def metric(self, name, **labels):
        return sample_value(self.samples(), name, **labels)

    def delivered(self, timeout_s=60):
        """Wait until the job's progress spool holds nothing Kafka has not acknowledged (its records are in the
        progress topic: a write to the spool returns before that, docs/architecture.md "The progress spool");
        at once when the job is not running. Returns self."""
        if self.process is not None and self.process.poll() is None:
            wait_for(lambda: self.metric(SPOOLED) == 0, timeout_s, message="the progress spool delivered")
        return self

    def log(self):
        return Path(self.log_path).read_text()


def sample_value(samples, name, **labels):
    """The value of the first sample of `samples` (JobProcess.samples) named `name` with these labels, or None."""
    wanted = {k: str(v) for k, v in labels.items()}
    for (sample_name, sample_labels), value in samples.items():
        if sample_name == name and all(dict(sample_labels).get(k) == v for k, v in wanted.items()):
            return value
    return None


def running(job):
    """A shared job up and polling: started again when a test before killed it."""
    return job.ensure_started().wait_first_batch()


def read_topic(bootstrap, topic, timeout_s=20):
    """Every (key, value dict) in the topic, from the beginning to the current end."""
    return [(key.decode(), json.loads(value)) for key, value in read_raw({"bootstrap.servers": bootstrap}, topic,
                                                                         timeout_s)]


def read_raw(settings, topic, timeout_s=20):
    """Every (key bytes, value bytes) in the topic, from the beginning to the current end, read through
    librdkafka with client `settings` (any codec, any security protocol)."""
    consumer = Consumer({**settings, "group.id": f"test-{uuid.uuid4().hex}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "enable.partition.eof": True, "log_level": 0})
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = list(metadata.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        done, out = set(), []
        deadline = time.monotonic() + timeout_s
        while len(done) < len(partitions) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    done.add(message.partition())
                continue
            out.append((message.key() or b"", message.value() or b""))
        return out
    finally:
        consumer.close()


# -- the job's own account of its batches, from its log (run without --quiet) --
# Each batch prints one line: `batch N: ...` on success, `batch N: poll failed: ...` when the poll failed;
# the throttle janitor prints `throttle janitor: batch N: skipped: ...` when it could not run.

import re  # noqa: E402  (kept with the helpers that use it)

BATCH_LINE = re.compile(r"^batch (\d+): (.*)$", re.M)
JANITOR_SKIPPED = re.compile(r"^throttle janitor: batch (\d+): skipped: (.*)$", re.M)


def batch_lines(log_text):
    """[(batch id, ok, rest of the line)] in log order; a replayed batch appears again."""
    return [(int(m.group(1)), not m.group(2).startswith("poll failed"), m.group(2))
            for m in BATCH_LINE.finditer(log_text)]


def failures_after(log_text, batch_id):
    """Lines saying a poll or the janitor failed in a batch later than `batch_id`: [(batch id, line)]."""
    failed = [(b, f"batch {b}: {rest}") for b, ok, rest in batch_lines(log_text) if not ok and b > batch_id]
    failed += [(int(m.group(1)), m.group(0)) for m in JANITOR_SKIPPED.finditer(log_text) if int(m.group(1)) > batch_id]
    return sorted(failed)


def watch_decision(log_text):
    """The controller's last logged decision (streaming.control.controller): IDLE_LINE, or the line saying why
    batches run; None before the first."""
    from streaming.control.controller import BATCHES_LINE, IDLE_LINE, LOG_PREFIX

    lines = [line[len(LOG_PREFIX):] for line in log_text.splitlines() if line.startswith(LOG_PREFIX)]
    decisions = [line for line in lines if line == IDLE_LINE or line.startswith(BATCHES_LINE)]
    return decisions[-1] if decisions else None


def idle(log_text):
    from streaming.control.controller import IDLE_LINE

    return watch_decision(log_text) == IDLE_LINE


def last_batch(log_text):
    """The highest batch id the log shows, -1 before the first batch."""
    return max((b for b, _, _ in batch_lines(log_text)), default=-1)
