"""The package as an operator installs it: the wheel (deploy/build.sh wheel) installed into a fresh virtual
environment outside the repository, its dependencies from the wheelhouse deploy/build.sh keeps (so pyspark is not
downloaded again), and every command run from a directory outside the checkout with nothing pointing into it.

One installation for the session; one `run` (local[2]) against the shared cluster."""

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.artifacts import ROOT, built, outside_env
from tests.cluster_cli import ownership_topic, write_plan
from tests.job_process import FIRST_POLL_S, JobProcess
from tests.kafka_fixtures import wait_for

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = [pattern.rstrip("*") for pattern in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
SUBMIT = ROOT / "deploy" / "spark" / "submit.sh"
PROGRESS = "kafka_reassignment_replica_progress_ratio"
MOVE_BYTES_PER_S = 100_000  # the throttle of the move `run` must see in flight: 30 MB take about 300 s


@dataclass(frozen=True)
class Installed:
    venv: Path
    home: Path  # the working directory of every command: outside the repository
    site_packages: Path

    @property
    def python(self):
        return self.venv / "bin" / "python"

    def env(self):
        return outside_env(self.venv / "bin")

    def run(self, *argv, timeout=120, **env):
        return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                              cwd=self.home, env={**self.env(), **env}, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    wheel, wheelhouse = built("wheel"), built("wheelhouse")
    home = tmp_path_factory.mktemp("installed")
    venv = home / "venv"
    started = time.monotonic()
    # The repository's interpreter makes the environment from its base installation, not from itself.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    # --no-index: only the wheelhouse; --no-compile: byte-compiling pyspark's thousands of modules took longer than
    # the rest of the install (Python compiles what it imports as it goes).
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                             "--no-compile", "--no-index", "--find-links", wheelhouse, wheel],
                            capture_output=True, text=True, timeout=600, cwd=home)
    assert result.returncode == 0, result.stderr[-3000:]
    print(f"wheel installed into a fresh environment in {time.monotonic() - started:.1f} s")
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True, cwd=home).stdout.strip()
    yield Installed(venv, home, Path(site))
    shutil.rmtree(venv)  # a gigabyte, and pytest keeps the temporary directories of the last three sessions


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    result = installed.run("python", "-c", "import json, importlib\n"
                           f"print(json.dumps([importlib.import_module(p).__file__ for p in {PACKAGES!r}]))")
    assert result.returncode == 0, result.stderr
    for path in json.loads(result.stdout):
        assert Path(path).is_relative_to(installed.site_packages), path
    version = installed.run("reassign-monitor", "--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"reassign-monitor {PYPROJECT['project']['version']}")


def test_the_wheel_ships_every_data_file_of_the_packages(installed):
    """Every file of the packages that is not Python (the record schemas, Spark's log4j2 properties, the dashboards'
    JSON, whatever is added or moved later) is installed beside its module, byte for byte."""
    data = [path for package in PACKAGES for path in (ROOT / package).rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts]
    assert {p.suffix for p in data} >= {".json", ".properties"}
    missing = [str(p.relative_to(ROOT)) for p in data
               if not (installed.site_packages / p.relative_to(ROOT)).is_file()
               or (installed.site_packages / p.relative_to(ROOT)).read_bytes() != p.read_bytes()]
    assert not missing, f"not installed as in the checkout: {missing}"


def test_the_installed_dashboards_command_writes_the_dashboards(installed):
    result = installed.run("reassign-monitor", "dashboards", "--out", installed.home / "dashboards")
    assert result.returncode == 0, result.stderr
    written = sorted(p.name for p in (installed.home / "dashboards").glob("*.json"))
    assert written == sorted(p.name for p in (ROOT / "dashboards").glob("*.json"))


def installed_job_main(installed):
    result = installed.run("python", "-c", "import streaming.job_main as m; print(m.__file__)")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.spark
def test_spark_submit_of_the_installed_entry_point_reaches_the_cli(installed):
    """`spark-submit $(python -c 'import streaming.job_main as m; print(m.__file__)') run ...` with the
    installation's own spark-submit, and a flag the CLI refuses, so the job stops at once with its message."""
    result = installed.run("spark-submit", "--master", "local[1]", installed_job_main(installed),
                           "run", "--bootstrap-server", "127.0.0.1:9", "--metrics-port", "0", timeout=180)
    assert result.returncode == 2, result.stderr[-2000:]
    # spark-submit's PythonRunner merges the driver's stderr into its stdout.
    assert "reassign-monitor run: error: --metrics-port 0: not a port" in result.stdout + result.stderr


def test_submit_script_submits_the_entry_point_of_the_installation_it_is_given(installed, tmp_path):
    fake = tmp_path / "spark-submit"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done > "$0.args"\n')
    fake.chmod(0o755)
    result = installed.run("bash", SUBMIT, "--master", "local[1]", "--bootstrap-server", "127.0.0.1:9092",
                           PYSPARK_PYTHON=str(installed.python), SPARK_SUBMIT=str(fake))
    assert result.returncode == 0, result.stderr
    args = Path(f"{fake}.args").read_text().splitlines()
    assert installed_job_main(installed) in args
    assert Path(args[args.index("run") - 1]).is_relative_to(installed.site_packages)


def job_processes(job):
    """[(argv, working directory)] of every process of the job (its session) still there."""
    found = subprocess.run(["pgrep", "-s", str(job.process.pid)], capture_output=True, text=True)
    processes = []
    for pid in found.stdout.split():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:  # ended since
            continue
        if argv:  # a zombie has none
            processes.append(([part.decode() for part in argv], cwd))
    return processes


@pytest.mark.cluster
def test_installed_commands_and_run_against_the_cluster(cluster, clean, installed):
    checkpoint = installed.home / "checkpoint"
    job = JobProcess(cluster.bootstrap, checkpoint, installed.home / "job.log", "--master", "local[2]",
                     "--trigger-interval", "2s", "--throttle-cleanup", "off",
                     command=(installed.venv / "bin" / "reassign-monitor",), cwd=installed.home, env=installed.env())
    started = time.monotonic()
    job.start()  # first: Spark starts while the move is made and the other commands run
    try:
        topic = cluster.create_topic(cluster.unique_topic("installed"), {0: [1]}, megabytes=30)
        own = ownership_topic()
        clean += [topic, own]
        plan = write_plan(installed.home / f"{topic}.json", [(topic, 0, [1, 3])])
        common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
        executed = installed.run("reassign-monitor", "execute", *common, "--reassignment-json-file", plan,
                                 "--throttle", MOVE_BYTES_PER_S)
        assert executed.returncode == 0, executed.stderr
        progress = installed.run("reassign-monitor", "progress", "--bootstrap-server", cluster.bootstrap,
                                 "--reassignment-json-file", plan)
        assert progress.returncode == 1 and topic in progress.stdout, progress.stdout + progress.stderr
        verified = installed.run("reassign-monitor", "verify", *common, "--reassignment-json-file", plan)
        assert verified.returncode == 1 and "in progress" in verified.stdout, verified.stdout + verified.stderr

        labels = {"topic": topic, "partition": 0, "broker": 3}
        wait_for(lambda: job.metric(PROGRESS, **labels) is not None, FIRST_POLL_S, interval_s=1,
                 message="the move in flight on the installed job's /metrics")
        print(f"installed `run`: the move in flight on /metrics {time.monotonic() - started:.1f} s after start")
        job.wait_first_batch(message="the installed job's first Spark batch")
        # Spark's Python workers (they computed that progress) run the installation's interpreter, from outside
        # the checkout: they can only have imported the installed package.
        processes = job_processes(job)
        assert any("pyspark.daemon" in argv for argv, _ in processes), processes
        pythons = [argv for argv, _ in processes if Path(argv[0]).name.startswith("python")]
        assert all(argv[0] == str(installed.python) for argv in pythons), pythons
        assert all(cwd == installed.home for _, cwd in processes), processes
        # The driver's Spark log went where the installed log4j2 properties send it.
        assert (checkpoint / "spark-driver.log").is_file()
    finally:
        job.stop()
    assert job.process.returncode == 0, job.log()[-3000:]
