"""The container image (deploy/Containerfile, built by deploy/build.sh: a Debian base made from Debian's packages,
then podman build), run with podman: what it provides against what the Containerfile and the manifests say, the
Spark-on-Kubernetes driver command, and `progress`, `execute` and `run` against the shared cluster over the host
network. Skipped, saying why, where podman is missing or cannot run containers.

The image is built once per checkout under a name of its own (tests.artifacts.TEST_IMAGE) and rebuilt only when
its inputs changed; one `run` against the cluster."""

import json
import shutil
import time

import pytest

from tests.artifacts import PODMAN, TEST_IMAGE, built, podman
from tests.cluster_cli import ownership_topic, write_plan
from tests.containerfile import image_facts
from tests.job_process import FIRST_POLL_S, JobProcess
from tests.kafka_fixtures import wait_for
from tests.test_deploy_manifests import one

pytestmark = pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed (`make podman`)")
FACTS = image_facts()
DATA = FACTS.env["REASSIGN_MONITOR_DATA"]
PROGRESS = "kafka_reassignment_replica_progress_ratio"
MOVE_BYTES_PER_S = 100_000  # 30 MB take about 300 s: still moving when Spark's first batch comes


@pytest.fixture(scope="session")
def image():
    base = built("base")
    probe = podman("run", "--rm", "--network", "host", base, "true")
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(f"podman cannot run containers here ({reason})")
    started = time.monotonic()
    name = built("image", IMAGE=TEST_IMAGE)
    print(f"image {name} ready in {time.monotonic() - started:.1f} s")
    return name


def inside(image, script):
    """(exit code, stdout) of a shell script run in the image as its user."""
    result = podman("run", "--rm", "--entrypoint", "/bin/sh", image, "-c", script)
    return result.returncode, result.stdout + result.stderr


def test_the_image_is_what_the_containerfile_says(image):
    inspected = podman("image", "inspect", "--format", "{{json .Config}}", image)
    assert inspected.returncode == 0, inspected.stderr
    config = json.loads(inspected.stdout)
    env = dict(entry.split("=", 1) for entry in config["Env"])
    paths = {key: value for key, value in FACTS.env.items() if key != "PATH"}  # PATH extends the base's
    assert {key: env.get(key) for key in paths} == paths
    assert env["PATH"].startswith(f"{FACTS.env['REASSIGN_MONITOR_HOME']}/bin:")
    assert config["User"] == FACTS.user
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in FACTS.exposed}
    assert set(config["Volumes"]) == set(FACTS.volumes)
    assert config["WorkingDir"] == FACTS.workdir
    assert tuple(config["Entrypoint"]) == FACTS.entrypoint


def test_the_image_runs_as_its_user_with_the_paths_the_manifests_mount(image):
    uid = int(FACTS.user.split(":")[0])
    code, out = inside(image, 'id -u; readlink -f "$REASSIGN_MONITOR_JOB"; '
                              'test -d "$REASSIGN_MONITOR_CONFIG" && echo config; '
                              'test -w "$REASSIGN_MONITOR_DATA" && echo data; '
                              'python -c "import pyspark; print(pyspark.__version__)"; java -version 2>&1 | head -n 1')
    assert code == 0, out
    user, job, config, data, spark, java = out.splitlines()
    assert int(user) == uid != 0
    assert job.endswith("/site-packages/streaming/job_main.py")
    assert (config, data) == ("config", "data")
    assert spark == one("SparkApplication")["spec"]["sparkVersion"]
    assert " version " in java  # a Java runtime for Spark
    version = podman("run", "--rm", image, "--version")
    assert version.returncode == 0 and version.stdout.startswith("reassign-monitor "), version.stdout + version.stderr


@pytest.mark.spark
def test_the_driver_command_is_spark_submit_of_the_installed_job(image):
    """What the Spark operator's driver pod runs (`driver --properties-file ... --class PythonRunner
    local://$REASSIGN_MONITOR_JOB run ...`), with a local master and a flag the CLI refuses."""
    spec = one("SparkApplication")["spec"]
    result = podman("run", "--rm", "--network", "host", "-e", "SPARK_DRIVER_BIND_ADDRESS=127.0.0.1", image,
                    "driver", "--master", "local[1]", "--class", "org.apache.spark.deploy.PythonRunner",
                    spec["mainApplicationFile"], "run", "--bootstrap-server", "127.0.0.1:9", "--metrics-port", "0",
                    timeout=180)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "reassign-monitor run: error: --metrics-port 0: not a port" in result.stdout + result.stderr


@pytest.mark.spark
def test_the_executor_command_starts_sparks_kubernetes_executor_backend(image):
    """What an executor pod runs, configured as Spark configures one; no driver listens at the URL, so the backend
    starts, fails to reach it and exits."""
    executor_env = {"SPARK_EXECUTOR_MEMORY": "512m", "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@127.0.0.1:9",
                    "SPARK_EXECUTOR_ID": "1", "SPARK_EXECUTOR_CORES": "1", "SPARK_APPLICATION_ID": "app-test",
                    "SPARK_EXECUTOR_POD_IP": "127.0.0.1", "SPARK_EXECUTOR_POD_NAME": "executor-1",
                    "SPARK_JAVA_OPT_0": "-Dspark.driver.port=9"}
    flags = [flag for name, value in executor_env.items() for flag in ("-e", f"{name}={value}")]
    result = podman("run", "--rm", "--network", "host", *flags, image, "executor", timeout=180)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "KubernetesExecutorBackend: Started daemon" in output, output[-3000:]
    assert "Failed to connect to /127.0.0.1:9" in output, output[-3000:]


@pytest.mark.cluster
def test_the_image_against_the_cluster(cluster, clean, image, tmp_path):
    name = f"reassign-monitor-test-{tmp_path.name}"
    # Host network: the cluster is on 127.0.0.1. --rm: the container and its checkpoint volume go when it stops.
    in_container = (PODMAN, "run", "--rm", "--name", name, "--network", "host", image)
    job = JobProcess(cluster.bootstrap, f"{DATA}/checkpoint", tmp_path / "job.log", "--master", "local[2]",
                     "--trigger-interval", "2s", "--throttle-cleanup", "off", command=in_container)
    started = time.monotonic()
    job.start()  # first: Spark starts while the move is made
    try:
        topic = cluster.create_topic(cluster.unique_topic("image"), {0: [1]}, megabytes=30)
        own = ownership_topic()
        clean += [topic, own]
        tmp_path.chmod(0o755)  # the image's user reads the plan through the mount
        plan = write_plan(tmp_path / "plan.json", [(topic, 0, [1, 3])])
        plan.chmod(0o644)
        common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own,
                  "--reassignment-json-file", "/plans/plan.json"]
        mounted = ("run", "--rm", "--network", "host", "-v", f"{tmp_path}:/plans:ro", image)
        executed = podman(*mounted, "execute", *common, "--throttle", MOVE_BYTES_PER_S)
        assert executed.returncode == 0, executed.stdout + executed.stderr
        progress = podman(*mounted, "progress", *common)
        assert progress.returncode == 1 and topic in progress.stdout, progress.stdout + progress.stderr

        labels = {"topic": topic, "partition": 0, "broker": 3}
        wait_for(lambda: job.metric(PROGRESS, **labels) is not None, FIRST_POLL_S, interval_s=1,
                 message="the move in flight on the container's /metrics")
        print(f"`run` in the container: the move in flight on /metrics {time.monotonic() - started:.1f} s "
              "after `podman run`")
        job.wait_first_batch(message="the container's first Spark batch")
        users = podman("top", name, "user")
        assert users.returncode == 0 and set(users.stdout.split()[1:]) == {"reassign-monitor"}, users.stdout
    finally:
        job.stop()  # SIGTERM to podman, which hands it to tini, which hands it to `run`
        podman("rm", "--force", "--time", "0", name)  # only if it did not stop
    assert job.process.returncode == 0, job.log()[-3000:]
