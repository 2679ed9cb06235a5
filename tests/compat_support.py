"""The compatibility lane (tests/test_compat_cluster.py): the Kafka versions it proves, one line each, and the
cluster and job each version's tests share (conftest `compat`, warmed in the background one version ahead).

A version other than the default gets a three-node cluster of its own from deploy/local-cluster.sh
(KAFKA_VERSION, KAFKA_MODE), fresh each session, on ports TEST_COMPAT_KAFKA_BASE_PORT + 150 x its place in
VERSIONS; the default version (4.1.1, KRaft) is the suite's shared cluster. Each version has one job
(`reassign-monitor run`, --throttle-cleanup owned, a 2 s trigger), started once; every check of the version runs
against it."""

import os
import shutil
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.job_process import JobProcess
from tests.kafka_fixtures import ROOT, LocalCluster

DEFAULT_VERSION = "4.1.1"  # deploy/local-cluster.sh's (and deploy/kafka/pom.xml's)
TRIGGER_S = 2.0
HEAP = "256m"  # per broker: the lane's clusters hold a few MB; two run at once at most
PORTS_PER_VERSION = 150  # brokers BASE+1..3, controllers or ZooKeeper BASE+100..103, the job's metrics BASE+50
METRICS_PORT_OFFSET = 50


@dataclass(frozen=True)
class Version:
    kafka: str
    mode: str  # kraft | zookeeper
    plan: bool = False  # also run a small plan (execute --max-partitions-in-flight) here
    log_dirs: int = 1  # log dirs per broker (deploy/local-cluster.sh LOG_DIRS_PER_BROKER); 2: a move between them too

    @property
    def id(self):
        return f"{self.kafka}-{self.mode}"

    @property
    def shared(self):
        """The default cluster: the suite's shared `cluster`, not one of the lane's own."""
        return self.kafka == DEFAULT_VERSION and self.mode == "kraft"

    @property
    def warm_name(self):
        return f"compat:{self.id}"


# In the order they run. The shared cluster's version comes last: its job removes throttles of any move it sees
# (docs/ownership.md "Adoption"), so it starts only once every other test of that cluster has run (the lane runs last).
VERSIONS = (
    Version("2.8.2", "zookeeper", plan=True),
    Version("3.6.2", "zookeeper"),
    Version("3.9.1", "zookeeper", log_dirs=2),  # JBOD in ZooKeeper mode; KRaft's is the disk cluster's (4.1.1)
    Version("3.9.1", "kraft"),
    Version("4.4.0", "kraft"),
    Version(DEFAULT_VERSION, "kraft"),
)


class Lane:
    """One version's cluster and job, and when they were asked for (for the lane's time per version)."""

    def __init__(self, version, cluster, job, own_cluster):
        self.version, self.cluster, self.job = version, cluster, job
        self.own_cluster = own_cluster  # stopped with the lane (not the shared one)
        self.ownership_topic = job.ownership_topic
        self.waited_s = 0.0  # how long its first test waited for it (conftest `compat`)
        self._stopping = None

    def common(self):
        """The flags every command of the lane takes: this cluster, the job's ownership topic."""
        return ["--bootstrap-server", self.cluster.bootstrap, "--ownership-topic", self.ownership_topic]

    def stop(self):
        """Stop the job, then the lane's own cluster, in a thread of their own: the next version's tests need
        not wait for two JVMs' shutdowns. `join()` waits for it."""
        if self._stopping is None:
            def stop_both():
                self.job.stop()
                if self.own_cluster:
                    self.cluster.down()
            self._stopping = threading.Thread(target=stop_both, name=f"stop {self.version.id}")
            self._stopping.start()
        return self

    def join(self):
        if self._stopping is not None:
            self._stopping.join()

    def close(self):
        """Stop and wait until stopped (the session's end)."""
        self.stop().join()


def start_lane(version, shared_cluster=None):
    """The version's cluster (fresh, or the shared one given) and its job, after the job's first batch."""
    index = VERSIONS.index(version)
    base = int(os.environ.get("TEST_COMPAT_KAFKA_BASE_PORT", "30000")) + PORTS_PER_VERSION * index
    root = Path(os.environ.get("TEST_COMPAT_CLUSTER_DIR", ROOT / ".local-cluster" / "compat"))
    directory = root / version.id
    if shared_cluster is None:
        cluster = LocalCluster(directory, base, KAFKA_VERSION=version.kafka, KAFKA_MODE=version.mode, KAFKA_HEAP=HEAP,
                               LOG_DIRS_PER_BROKER=str(version.log_dirs))
        cluster._run("down")  # a cluster left by an interrupted session: stop it before wiping its data
        shutil.rmtree(directory, ignore_errors=True)
        try:
            cluster.up()
        except Exception:  # nodes that did start must not outlive the session
            cluster._run("down")
            raise
        cluster.started_here = True
    else:
        cluster = shared_cluster
    jobs = directory / "job"
    shutil.rmtree(jobs, ignore_errors=True)
    jobs.mkdir(parents=True)
    ownership_topic = f"own-compat-{uuid.uuid4().hex[:8]}"
    job = JobProcess(cluster.bootstrap, jobs / "checkpoint", jobs / "job.log", "--master", "local[2]",
                     "--trigger-interval", f"{TRIGGER_S:g}s", "--ownership-topic", ownership_topic, "--quiet",
                     metrics_port=base + METRICS_PORT_OFFSET)
    job.ownership_topic = ownership_topic
    try:
        job.start().wait_first_batch()
    except Exception:  # the fixture raises it; nothing of the lane may outlive the session
        job.stop()
        if shared_cluster is None:
            cluster.down()
        raise
    return Lane(version, cluster, job, own_cluster=shared_cluster is None)
