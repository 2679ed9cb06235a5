"""Helpers for tests that use the real local cluster: start/stop it, make topics with real data,
set throttles. Everything targets 127.0.0.1 only."""

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "deploy" / "local-cluster.sh"


def known_to_every_broker(admin, topic, partitions):
    """Whether each broker's own Metadata answer names `topic` with a leader for each of its `partitions`. A
    broker learns a new topic from the controller a moment after the one that answered `wait_for_topics` did (a
    command run at once was told "unknown topic" by another broker once, on 3.9.1 KRaft)."""
    from kafka.protocol.metadata import MetadataRequest

    manager = admin._manager
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                              allow_auto_topic_creation=False)
    for broker in manager.cluster.brokers():
        async def ask(node=broker.node_id):
            return await manager.send(request, node_id=node)

        [answer] = manager.run(ask).topics
        if answer.error_code or sum(p.leader_id >= 0 for p in answer.partitions) < partitions:
            return False
    return True


def shared_cluster():
    """The session's shared cluster (conftest `cluster`), not started: its own directory and ports (overridable with
    TEST_CLUSTER_DIR / TEST_KAFKA_BASE_PORT), so a running demo cluster is never touched."""
    cluster_dir = Path(os.environ.get("TEST_CLUSTER_DIR", ROOT / ".local-cluster" / "test"))
    return LocalCluster(cluster_dir, int(os.environ.get("TEST_KAFKA_BASE_PORT", "29090")))


class LocalCluster:
    """The three-node cluster of deploy/local-cluster.sh. Tests get one per session (conftest)."""

    def __init__(self, cluster_dir, base_port, **settings):
        """`settings`: more of the script's environment (KAFKA_VERSION, KAFKA_MODE, KAFKA_HEAP)."""
        self.env = {**os.environ, "CLUSTER_DIR": str(cluster_dir), "KAFKA_BASE_PORT": str(base_port), **settings}
        self.base_port = base_port
        self.bootstrap = None
        self.started_here = False

    def _run(self, command):
        return subprocess.run([str(SCRIPT), command], env=self.env, capture_output=True, text=True, timeout=300)

    def up(self):
        self.started_here = "running" not in self._run("status").stdout
        result = self._run("up")
        if result.returncode != 0:
            if self.started_here:  # nodes that did start must not outlive the session
                self._run("down")
            raise RuntimeError(f"local cluster did not start: {result.stderr.strip()}")
        self.bootstrap = result.stdout.strip().splitlines()[-1]
        return self

    def down(self):
        if self.started_here:
            self._run("down")

    def wipe(self):
        """Stop the cluster if it runs (one left by an interrupted session) and delete its data."""
        self._run("down")
        shutil.rmtree(self.env["CLUSTER_DIR"], ignore_errors=True)
        return self

    def pid(self, node):
        return int((Path(self.env["CLUSTER_DIR"]) / f"node{node}" / "pid").read_text())

    def admin(self):
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)

    def unique_topic(self, prefix):
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    def create_topic(self, name, assignment, megabytes=0.0, record_bytes=10_000, configs=None):
        """A topic with partitions placed as `assignment` ({partition: [brokers]}) and topic `configs`, then
        `megabytes` of incompressible data written to each partition."""
        admin = self.admin()
        try:
            admin.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment, topic_configs=configs or {})])
            admin.wait_for_topics([name], timeout_ms=20000)
            wait_for(lambda: known_to_every_broker(admin, name, len(assignment)), 20,
                     message=f"every broker's metadata to name {name}")
        finally:
            admin.close()
        if megabytes:
            self.produce(name, list(assignment), megabytes, record_bytes)
        return name

    def settings(self):
        """librdkafka settings reaching this cluster (the secured cluster adds its credentials)."""
        return {"bootstrap.servers": self.bootstrap}

    def produce(self, topic, partitions, megabytes, record_bytes=10_000):
        producer = Producer({**self.settings(), "linger.ms": 20, "acks": "all", "compression.type": "none"})
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


class FaultCluster(LocalCluster):
    """A LocalCluster that tests may break: SIGKILL or pause a node, restart it, find the active controller.
    Its own directory and ports (conftest `fault_cluster`), so broker kills never disturb other tests."""

    NODES = (1, 2, 3)

    def alive(self, node):
        try:
            os.kill(self.pid(node), 0)
            return True
        except (OSError, ValueError):  # no pid file, or the process is gone
            return False

    def kill(self, node):
        """SIGKILL one node's JVM: no controlled shutdown, the cluster learns of it only by timeouts."""
        import signal

        pid = self.pid(node)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not self.alive(node), 15, interval_s=0.1, message=f"node {node} (pid {pid}) to die")

    def pause(self, node):
        import signal

        os.kill(self.pid(node), signal.SIGSTOP)

    def resume(self, node):
        import signal

        os.kill(self.pid(node), signal.SIGCONT)

    def restart(self):
        """Start the nodes that are not running (`local-cluster.sh up` restarts only dead ones), wake paused
        ones, and wait until every broker is registered and listening. Returns the seconds it took."""
        for node in self.NODES:
            if self.alive(node):
                self.resume(node)  # harmless on a running node
        started = time.monotonic()
        result = self._run("up")
        if result.returncode != 0:
            raise RuntimeError(f"local cluster did not restart: {result.stderr.strip()}")
        return time.monotonic() - started

    def active_controller(self, timeout_s=30):
        """The KRaft quorum leader (DescribeQuorum of __cluster_metadata), retried while an election runs."""
        def leader():
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000,
                                         bootstrap_timeout_ms=5000)
            except Exception:  # every broker tried is down right now: try again
                return None
            try:
                partition = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
                return partition["leader_id"] if partition["leader_id"] >= 0 else None
            except Exception:  # an election in progress, or the node asked just died
                return None
            finally:
                admin.close()

        return wait_for(leader, timeout_s, message="a KRaft quorum leader")

    def under_replicated(self):
        """[(topic, partition, replicas, isr)] of every partition whose ISR is not its whole replica set."""
        admin = self.admin()
        try:
            described = admin.describe_topics()
        finally:
            admin.close()
        return [(t["name"], p["partition_index"], sorted(p["replica_nodes"]), sorted(p["isr_nodes"]))
                for t in described for p in t["partitions"] if sorted(p["isr_nodes"]) != sorted(p["replica_nodes"])]

    def ensure_whole(self, timeout_s=90):
        """All three nodes up and every partition's ISR full: what each fault test leaves, pass or fail."""
        self.restart()

        def whole():
            try:
                return not self.under_replicated()
            except Exception:  # metadata briefly unavailable right after a restart
                return False

        wait_for(whole, timeout_s, interval_s=1, message="every partition's ISR to be full again")
