"""deploy/local-cluster.sh's idea of a running node: a pid file is not enough (pids are reused)."""

import subprocess
import time

import pytest

from tests.kafka_fixtures import SCRIPT


@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_a_pid_file_whose_pid_runs_something_else_is_neither_running_nor_stopped_by_down(tmp_path, mode):
    """A node that died leaves its pid file; the kernel may give the pid to any process. `status` must call the
    node stopped (else `up` keeps a dead cluster's directory), and `down` must not signal that process."""
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        for name in ("node1", "node2", "node3", "zookeeper"):
            (tmp_path / name).mkdir()
            (tmp_path / name / "pid").write_text(f"{stranger.pid}\n")
        env = {"CLUSTER_DIR": str(tmp_path), "KAFKA_BASE_PORT": "29990", "KAFKA_MODE": mode, "PATH": "/usr/bin:/bin"}
        status = subprocess.run([str(SCRIPT), "status"], env=env, capture_output=True, text=True, timeout=30)
        assert "running" not in status.stdout, status.stdout
        subprocess.run([str(SCRIPT), "down"], env=env, capture_output=True, text=True, timeout=30)
        time.sleep(0.2)
        assert stranger.poll() is None, "down signalled a process that is not one of its nodes"
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize("settings, refusal", [
    ({"TIERED_STORAGE": "yes"}, "TIERED_STORAGE=yes: expected 0 or 1"),
    ({"TIERED_STORAGE": "1", "KAFKA_VERSION": "3.5.2"}, "TIERED_STORAGE=1 needs Kafka 3.6 or newer"),
    ({"TIERED_STORAGE": "1", "SECURITY": "sasl_ssl"}, "TIERED_STORAGE=1 needs SECURITY=plaintext"),
    ({"REPLICATION_LISTENER": "yes"}, "REPLICATION_LISTENER=yes: expected 0 or 1"),
    ({"REPLICATION_LISTENER": "1", "SECURITY": "sasl_ssl"}, "REPLICATION_LISTENER=1 needs SECURITY=plaintext and KAFKA_MODE=kraft"),
    ({"REPLICATION_LISTENER": "1", "KAFKA_MODE": "zookeeper", "KAFKA_VERSION": "3.6.2"},
     "REPLICATION_LISTENER=1 needs SECURITY=plaintext and KAFKA_MODE=kraft"),
], ids=["tiered-not-a-switch", "tiered-before-3.6", "tiered-secured", "replication-listener-not-a-switch",
        "replication-listener-secured", "replication-listener-zookeeper"])
def test_a_setting_is_refused_where_it_cannot_run_before_anything_starts(tmp_path, settings, refusal):
    env = {"CLUSTER_DIR": str(tmp_path), "KAFKA_BASE_PORT": "29990", "PATH": "/usr/bin:/bin", **settings}
    up = subprocess.run([str(SCRIPT), "up"], env=env, capture_output=True, text=True, timeout=30)
    assert up.returncode == 1 and refusal in up.stderr, up.stderr
    assert not any(tmp_path.glob("node*")), "a node was made before the settings were checked"
