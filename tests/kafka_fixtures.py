"""Helpers for tests that use the real local cluster: start/stop it, make topics with real data,
set throttles. Everything targets 127.0.0.1 only."""

import os
import subprocess
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "deploy" / "local-cluster.sh"


class LocalCluster:
    """The three-node cluster of deploy/local-cluster.sh. Tests get one per session (conftest)."""

    def __init__(self, cluster_dir, base_port):
        self.env = {**os.environ, "CLUSTER_DIR": str(cluster_dir), "KAFKA_BASE_PORT": str(base_port)}
        self.base_port = base_port
        self.bootstrap = None
        self.started_here = False

    def _run(self, command):
        return subprocess.run([str(SCRIPT), command], env=self.env, capture_output=True, text=True, timeout=300)

    def up(self):
        self.started_here = "running" not in self._run("status").stdout
        result = self._run("up")
        if result.returncode != 0:
            raise RuntimeError(f"local cluster did not start: {result.stderr.strip()}")
        self.bootstrap = result.stdout.strip().splitlines()[-1]
        return self

    def down(self):
        if self.started_here:
            self._run("down")

    def pid(self, node):
        return int((Path(self.env["CLUSTER_DIR"]) / f"node{node}" / "pid").read_text())

    def admin(self):
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)

    def unique_topic(self, prefix):
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    def create_topic(self, name, assignment, megabytes=0.0, record_bytes=10_000):
        """A topic with partitions placed as `assignment` ({partition: [brokers]}), then `megabytes` of
        incompressible data written to each partition."""
        admin = self.admin()
        try:
            admin.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment)])
            admin.wait_for_topics([name], timeout_ms=20000)
        finally:
            admin.close()
        if megabytes:
            self.produce(name, list(assignment), megabytes, record_bytes)
        return name

    def produce(self, topic, partitions, megabytes, record_bytes=10_000):
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20, "acks": "all",
                             "compression.type": "none"})
        count = int(megabytes * 1_000_000 / record_bytes)
        for partition in partitions:
            for _ in range(count):
                producer.produce(topic, os.urandom(record_bytes), partition=partition)
                producer.poll(0)
        if producer.flush(60) != 0:
            raise RuntimeError("records left unsent")

    def set_configs(self, topic_configs=None, broker_configs=None):
        """{topic: {key: value}}, {broker: {key: value}}; a value of None deletes the key."""
        from kafka.admin import AlterConfigOp

        resources = []
        for kind, entries in ((ConfigResourceType.TOPIC, topic_configs or {}),
                              (ConfigResourceType.BROKER, broker_configs or {})):
            for name, configs in entries.items():
                ops = {k: (AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, str(v))
                       for k, v in configs.items()}
                resources.append(ConfigResource(kind, str(name), configs=ops))
        admin = self.admin()
        try:
            admin.alter_configs(resources, raise_on_unknown=False)
        finally:
            admin.close()

    def delete_topics(self, names):
        admin = self.admin()
        try:
            admin.delete_topics(list(names))
        except Exception:  # cleanup of a topic a test may already have removed
            pass
        finally:
            admin.close()


def wait_for(condition, timeout_s, interval_s=0.5, message="condition"):
    """Poll `condition` until it returns a truthy value (returned) or the deadline passes (AssertionError)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {message} (last: {last!r})")
