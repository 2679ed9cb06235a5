"""The disk cluster (conftest `disk_cluster`): three brokers with two log dirs each (deploy/local-cluster.sh
LOG_DIRS_PER_BROKER), for every test of moves between log dirs and of a disk that fills. Broker SMALL_BROKER's second
log dir is a small tmpfs the fixture mounts before the node is formatted (KRaft's format writes meta.properties into
every log dir) and unmounts after the cluster stopped: a move into it fills it and Kafka takes the dir offline."""

import subprocess
from pathlib import Path

from tests.kafka_fixtures import LocalCluster

SMALL_BROKER = 3
SMALL_DIR_MB = 24
# The disk cluster's job: a short trigger and rate window keep its moves small; it removes what `execute` set.
TRIGGER_S = 2.0
DISK_JOB_FLAGS = ("--trigger-interval", f"{TRIGGER_S:g}s", "--rate-window", "10s", "--master", "local[2]")


def log_dirs(cluster_dir, node, count):
    """Node `node`'s `count` log dirs, in the script's order (data, data2, ...)."""
    return [str(Path(cluster_dir) / f"node{node}" / ("data" if i == 1 else f"data{i}")) for i in range(1, count + 1)]


def mounted(path):
    return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())


class DiskCluster(LocalCluster):
    """A LocalCluster with several log dirs per broker (`settings`: the script's environment, conftest
    DISK_CLUSTER_SETTINGS), broker SMALL_BROKER's second on a tmpfs of SMALL_DIR_MB."""

    def __init__(self, cluster_dir, base_port, settings):
        super().__init__(cluster_dir, base_port, **settings)
        self.count = int(settings["LOG_DIRS_PER_BROKER"])
        self.small_dir = Path(self.log_dirs(SMALL_BROKER)[1])

    def wipe(self):
        self._run("down")
        self._unmount()
        return super().wipe()

    def up(self):
        """Mount the small dir (a fresh tmpfs: the cluster is wiped first), then start the cluster."""
        self.small_dir.mkdir(parents=True, exist_ok=True)
        if not mounted(self.small_dir):
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL_DIR_MB}m", "tmpfs", str(self.small_dir)],
                           check=True, capture_output=True, text=True, timeout=30)
        try:
            return super().up()
        except Exception:
            self._unmount()
            raise

    def down(self):
        super().down()
        self._unmount()

    def _unmount(self):
        """The small dir's tmpfs: this fixture's own mount point, inside the cluster's directory (mounted by this
        session, or left by an interrupted one)."""
        if mounted(self.small_dir):
            subprocess.run(["umount", str(self.small_dir)], check=False, capture_output=True, timeout=30)

    def log_dirs(self, node):
        return log_dirs(self.env["CLUSTER_DIR"], node, self.count)
