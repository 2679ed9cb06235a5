import os
import re
import shutil
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from dashboards.build import DASHBOARDS
from streaming.cli import build_parser
from streaming.vocabulary.client_config import read_config
from streaming.commands import run as run_command
from tests.containerfile import image_facts, image_name

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
SUBMIT = DEPLOY / "spark" / "submit.sh"
JOB_MAIN = "streaming/job_main.py"
IMAGE = image_facts()  # what deploy/Containerfile provides: its paths (ENV), user, port, volume

YAML_FILES = sorted(p for d in ("k8s", "prometheus", "grafana") for p in (DEPLOY / d).rglob("*") if p.suffix in (".yml", ".yaml"))


def run_parser():
    """`reassign-monitor` with the real `run` flags (and no other command's imports)."""
    stub = types.SimpleNamespace(add_arguments=lambda parser: None)
    return build_parser(load=lambda name: run_command if name == "run" else stub)


DEFAULT_PORT = run_parser().parse_args(["run", "--bootstrap-server", "x:9092"]).metrics_port


def load(path):
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def k8s_objects():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [doc for name in kustomization["resources"] for doc in load(K8S / name)]


def one(kind):
    [obj] = [o for o in k8s_objects() if o["kind"] == kind]
    return obj


@pytest.mark.parametrize("path", YAML_FILES, ids=[str(p.relative_to(DEPLOY)) for p in YAML_FILES])
def test_every_deploy_yaml_parses(path):
    assert load(path)


def test_the_default_metrics_port_is_the_contract_s():
    assert DEFAULT_PORT == 9469


# --- Kubernetes ------------------------------------------------------------------------------------

def test_kustomization_lists_every_manifest():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert set(kustomization["resources"]) == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.parametrize("kind, api_version", [
    ("Namespace", "v1"), ("ServiceAccount", "v1"), ("Role", "rbac.authorization.k8s.io/v1"),
    ("RoleBinding", "rbac.authorization.k8s.io/v1"), ("Secret", "v1"), ("PersistentVolumeClaim", "v1"),
    ("SparkApplication", "sparkoperator.k8s.io/v1beta2"), ("Service", "v1"),
    ("ServiceMonitor", "monitoring.coreos.com/v1"),
])
def test_kind_and_api_version(kind, api_version):
    assert one(kind)["apiVersion"] == api_version


def test_every_object_is_named_in_the_one_namespace():
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    assert one("Namespace")["metadata"]["name"] == namespace
    for obj in k8s_objects():
        assert obj["metadata"]["name"]
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == namespace, obj["kind"]


def spark_args():
    return run_parser().parse_args(one("SparkApplication")["spec"]["arguments"])


def test_spark_application_runs_the_image_this_repository_builds():
    assert one("SparkApplication")["spec"]["image"] == image_name()  # deploy/build.sh's name for it


def test_spark_application_runs_the_job_main_script_with_valid_run_flags():
    spec = one("SparkApplication")["spec"]
    assert spec["type"] == "Python"
    # The Containerfile links the installed streaming/job_main.py there (tests/test_image.py looks in the image).
    assert spec["mainApplicationFile"] == f"local://{IMAGE.env['REASSIGN_MONITOR_JOB']}"
    assert (ROOT / JOB_MAIN).is_file()
    args = spark_args()  # argparse exits 2 on any flag `run` does not know
    assert args.command == "run" and args.bootstrap_server


@pytest.mark.parametrize("role", ["driver", "executor"])
def test_pods_mount_where_the_image_keeps_config_and_checkpoint(role):
    mounts = {m["name"]: m["mountPath"] for m in one("SparkApplication")["spec"][role]["volumeMounts"]}
    assert mounts == {"command-config": IMAGE.env["REASSIGN_MONITOR_CONFIG"],
                      "checkpoint": IMAGE.env["REASSIGN_MONITOR_DATA"]}
    assert IMAGE.volumes == (IMAGE.env["REASSIGN_MONITOR_DATA"],) and IMAGE.workdir == IMAGE.volumes[0]


@pytest.mark.parametrize("role", ["driver", "executor"])
def test_pods_run_as_the_image_user_and_not_as_root(role):
    spec = one("SparkApplication")["spec"][role]
    uid, gid = (int(part) for part in IMAGE.user.split(":"))
    assert uid != 0
    container = spec["securityContext"]
    assert (container["runAsUser"], container["runAsGroup"], container["runAsNonRoot"]) == (uid, gid, True)
    assert spec["podSecurityContext"]["fsGroup"] == gid


def test_image_exposes_the_metrics_port_and_starts_from_a_base_the_build_makes():
    assert IMAGE.exposed == (DEFAULT_PORT,)
    # deploy/build.sh base makes debian:SUITE-slim from Debian's packages when no registry serves it.
    assert re.fullmatch(r"docker\.io/library/debian:[a-z]+-slim", IMAGE.base)


def test_ports_agree_with_the_default_metrics_port():
    driver = one("SparkApplication")["spec"]["driver"]
    [service_port] = one("Service")["spec"]["ports"]
    assert spark_args().metrics_port == DEFAULT_PORT
    assert [p["containerPort"] for p in driver["ports"]] == [DEFAULT_PORT]
    assert service_port["port"] == service_port["targetPort"] == DEFAULT_PORT


def test_service_selects_the_driver_and_only_the_driver():
    spec = one("SparkApplication")["spec"]
    selector = one("Service")["spec"]["selector"].items()
    assert selector <= spec["driver"]["labels"].items()
    assert not selector <= spec["executor"]["labels"].items()


def test_service_monitor_selects_the_service():
    service, monitor = one("Service"), one("ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    assert all(e["path"] == "/metrics" for e in monitor["spec"]["endpoints"])


@pytest.mark.parametrize("role", ["driver", "executor"])
def test_pods_mount_the_command_config_and_the_checkpoint(role):
    spec = one("SparkApplication")["spec"]
    args = spark_args()
    mounts = {m["mountPath"]: m["name"] for m in spec[role]["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    for path in (args.command_config, args.checkpoint_location):
        [name] = [n for mount, n in mounts.items() if path.startswith(mount + "/")]
        assert name in volumes
    assert volumes["command-config"]["secret"]["secretName"] == one("Secret")["metadata"]["name"]
    assert volumes["checkpoint"]["persistentVolumeClaim"]["claimName"] == \
        one("PersistentVolumeClaim")["metadata"]["name"]


def test_checkpoint_claim_is_shared_by_driver_and_executors():
    assert one("PersistentVolumeClaim")["spec"]["accessModes"] == ["ReadWriteMany"]


def test_command_config_secret_is_a_valid_command_config(tmp_path):
    args = spark_args()
    [(key, text)] = one("Secret")["stringData"].items()
    assert key == Path(args.command_config).name
    (tmp_path / key).write_text(text)
    assert read_config(tmp_path / key).settings


def test_rbac_binds_the_driver_service_account():
    account = one("ServiceAccount")["metadata"]["name"]
    binding = one("RoleBinding")
    assert one("SparkApplication")["spec"]["driver"]["serviceAccount"] == account
    assert {"kind": "ServiceAccount", "name": account} == {k: binding["subjects"][0][k] for k in ("kind", "name")}
    assert binding["roleRef"]["name"] == one("Role")["metadata"]["name"]


# --- Prometheus and Grafana ------------------------------------------------------------------------

def test_prometheus_scrapes_the_job_and_loads_the_alert_rules():
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"] and (DEPLOY / "prometheus" / "alerts.yml").is_file()
    targets = [t for job in config["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert targets == [f"127.0.0.1:{DEFAULT_PORT}"]


def test_promtool_check_config():
    tool = shutil.which("promtool")
    assert tool, "promtool not on PATH (`make prometheus`)"
    result = subprocess.run([tool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout


def test_grafana_datasource_is_the_local_prometheus():
    [source] = load(DEPLOY / "grafana/provisioning/datasources/prometheus.yml")[0]["datasources"]
    assert (source["type"], source["url"]) == ("prometheus", "http://127.0.0.1:9090")


def test_grafana_dashboard_provider_points_at_the_dashboards_json(monkeypatch):
    [provider] = load(DEPLOY / "grafana/provisioning/dashboards/dashboards.yml")[0]["providers"]
    assert provider["type"] == "file"
    monkeypatch.setenv("REASSIGN_MONITOR_DASHBOARDS", str(ROOT / "dashboards"))
    path = Path(os.path.expandvars(provider["options"]["path"]))
    assert {f"{name}.json" for name in DASHBOARDS} <= {p.name for p in path.glob("*.json")}


# --- spark-submit ----------------------------------------------------------------------------------

@pytest.fixture
def fake_submit(tmp_path):
    """A spark-submit that records its arguments and PYSPARK_PYTHON."""
    script = tmp_path / "spark-submit"
    script.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done > "$0.args"\necho "$PYSPARK_PYTHON" > "$0.python"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def submit(*args, **env):
    return subprocess.run(["bash", str(SUBMIT), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, cwd="/")


def test_submit_passes_master_and_run_flags_through(fake_submit):
    run_flags = ["--bootstrap-server", "127.0.0.1:9092", "--checkpoint-location", "hdfs:///cp", "--dry-run"]
    result = submit("--master", "spark://127.0.0.1:7077", *run_flags, SPARK_SUBMIT=str(fake_submit),
                    PYSPARK_PYTHON=sys.executable, SPARK_SUBMIT_OPTIONS="--executor-memory 1g")
    assert result.returncode == 0, result.stderr
    args = Path(f"{fake_submit}.args").read_text().splitlines()
    assert args[args.index("--master") + 1] == "spark://127.0.0.1:7077"
    assert f"spark.pyspark.python={sys.executable}" in args
    assert args[args.index("--executor-memory") + 1] == "1g"
    tail = args[args.index(str(ROOT / JOB_MAIN)) + 1:]
    assert tail == ["run", *run_flags]
    run_parser().parse_args(tail)
    assert Path(f"{fake_submit}.python").read_text().strip() == sys.executable


@pytest.mark.parametrize("args, env, message", [
    (["--bootstrap-server", "127.0.0.1:9092"], {}, "--master"),
    (["--master", "mesos://127.0.0.1:5050"], {}, "expected spark://"),
    (["--master", "yarn"], {"PYSPARK_PYTHON": "/bin/false"}, "cannot import the project"),
])
def test_submit_refuses_bad_usage(fake_submit, args, env, message):
    result = submit(*args, SPARK_SUBMIT=str(fake_submit), **{"PYSPARK_PYTHON": sys.executable, **env})
    assert result.returncode == 2
    assert message in result.stderr
    assert not Path(f"{fake_submit}.args").exists()


@pytest.mark.spark
def test_submit_with_the_real_spark_submit_reaches_the_cli():
    """The whole chain (spark-submit, PYSPARK_PYTHON, job_main.py, the CLI) with a flag the CLI refuses,
    so the job stops at once with the CLI's exit code and message."""
    result = submit("--master", "local[1]", "--bootstrap-server", "127.0.0.1:9", "--metrics-port", "0",
                    PYSPARK_PYTHON=sys.executable, SPARK_SUBMIT="", SPARK_SUBMIT_OPTIONS="")
    assert result.returncode == 2, result.stderr[-2000:]
    # spark-submit's PythonRunner merges the driver's stderr into its stdout.
    assert "reassign-monitor run: error: --metrics-port 0: not a port" in result.stdout + result.stderr
