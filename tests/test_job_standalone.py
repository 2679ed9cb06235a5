"""The fleet job on a Spark standalone cluster (a master and two workers of one core each on 127.0.0.1, started
from the pyspark package's own launcher): in standalone mode no task runs in the driver, so a poll that reaches the
sinks was read by an executor. The fleet file names the shared cluster twice (`left` and `right`, each its own
state, door and controller; the job removes no throttle): each batch's two input partitions, one per cluster, run
on both workers' executors, each of which logs the clusters it polls."""

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from kafka import TopicPartition

from streaming.spark.fleet_source import POLLS_HERE
from tests.job_process import JobProcess, free_port
from tests.kafka_fixtures import wait_for
from tests.test_job_cluster import clear_throttles, start_throttled_move

pytestmark = pytest.mark.cluster
WORKERS = ("worker-1", "worker-2")
CLUSTERS = ("left", "right")
SPARK_HOME = Path(pyspark.__file__).parent


def spark_daemon(cls, *args, log):
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), cls, *args], env=env, stdin=subprocess.DEVNULL,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)


def test_the_fleet_runs_on_a_standalone_master_with_two_workers(cluster, tmp_path):
    port = free_port()
    master = spark_daemon("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                          "--webui-port", str(free_port()), log=tmp_path / "master.log")
    work = tmp_path / "work"
    workers = [spark_daemon("org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                            "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(work / name),
                            f"spark://127.0.0.1:{port}", log=tmp_path / f"{name}.log") for name in WORKERS]
    topic = cluster.unique_topic("standalone")
    fleet = tmp_path / "fleet.toml"
    fleet.write_text("".join(f'[clusters.{name}]\nbootstrap-servers = "{cluster.bootstrap}"\n' for name in CLUSTERS))
    job = JobProcess(cluster.bootstrap, tmp_path / "checkpoint", tmp_path / "job.log", "--trigger-interval", "2s",
                     "--master", f"spark://127.0.0.1:{port}", "--throttle-cleanup", "off")
    job.args = [word for word in job.args if word not in ("--bootstrap-server", cluster.bootstrap)] + [
        "--clusters", str(fleet)]
    try:
        # Written while the master and worker start; moved once Spark runs, however long it took to start on a
        # loaded machine (a move started first had ended before the first batch: 8 MB in 92 s, Kafka's floor of one
        # 1 MB fetch per quota window beating a 20 KB/s rate). About 200 s at 100 KB/s: cancelled below.
        cluster.create_topic(topic, {0: [1]}, megabytes=20)
        wait_for(lambda: all("Successfully registered with master" in (tmp_path / f"{name}.log").read_text()
                             for name in WORKERS), 60, message="both workers to register")
        job.start()
        job.wait_first_batch(interval_s=1, message="the first batch on the standalone cluster")
        start_throttled_move(cluster, topic, 1, 3, rate=100_000)
        for name in CLUSTERS:
            labels = {"cluster": name, "topic": topic, "partition": 0, "broker": 3}
            wait_for(lambda: job.metric("kafka_reassignment_replica_progress_ratio", **labels) is not None, 60,
                     interval_s=1, message=f"replica progress of cluster {name} computed on the standalone cluster")
        polled = {worker: sorted({line.split("]")[0].lstrip("[") for path in (work / worker).glob("app-*/*/stderr")
                                  for line in path.read_text().splitlines() if POLLS_HERE in line})
                  for worker in WORKERS}
        print(f"\nSTANDALONE FIGURES clusters each worker's executor polled: {polled}", flush=True)
        assert all(polled.values()), polled
    finally:
        job.stop()
        for process in (*workers, master):
            process.terminate()
            process.wait(30)
        admin = cluster.admin()
        try:
            admin.alter_partition_reassignments({TopicPartition(topic, 0): None})
        except Exception:  # the move may have completed already
            pass
        finally:
            admin.close()
        clear_throttles(cluster, topic, 1, 3)
        cluster.delete_topics([topic])
