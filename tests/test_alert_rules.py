import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dashboards.common import NOT_FINISHED
from tests.promql import problems

ROOT = Path(__file__).resolve().parent.parent
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS / "alerts.yml"
RULE_TESTS = sorted((PROMETHEUS / "tests").glob("*.yml"))
RUNBOOK = ROOT / "docs" / "alerts.md"
# Sections of the runbook page that belong to no single alert.
GENERAL_SECTIONS = {"the-alerts", "first-look", "reason-codes"}
SEVERITIES = {"critical", "warning", "info"}

ALERTS = [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"] if "alert" in rule]
NAMES = [rule["alert"] for rule in ALERTS]


def promtool(*args):
    tool = shutil.which("promtool")
    assert tool, "promtool not on PATH (`make prometheus` installs Debian's prometheus package)"
    result = subprocess.run([tool, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"promtool {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def github_anchor(heading):
    """The fragment GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def runbook_anchors():
    return {github_anchor(line.lstrip("#")) for line in RUNBOOK.read_text().splitlines() if line.startswith("## ")}


def test_promtool_check_rules():
    assert f"SUCCESS: {len(ALERTS)} rules found" in promtool("check", "rules", str(RULES))


def test_promtool_unit_tests():
    assert RULE_TESTS
    promtool("test", "rules", *map(str, RULE_TESTS))


def test_the_issue_s_alerts_exist():
    assert {"KafkaReassignmentReplicaStalled", "KafkaReassignmentReplicaFallingBehind", "KafkaReassignmentEtaTooLong",
            "KafkaReplicationThrottleLeaked", "KafkaReassignmentMonitorDown", "KafkaReassignmentMonitorPollErrors",
            "KafkaReplicationThrottleRemovalFailed"} <= set(NAMES)
    assert len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("rule", ALERTS, ids=NAMES)
def test_alert_labels_annotations_and_runbook(rule):
    assert rule["labels"]["severity"] in SEVERITIES
    annotations = rule["annotations"]
    assert {"summary", "description", "runbook_url"} <= set(annotations)
    path, _, anchor = annotations["runbook_url"].partition("#")
    assert path == str(RUNBOOK.relative_to(ROOT))
    assert anchor == github_anchor(rule["alert"]) and anchor in runbook_anchors()


@pytest.mark.parametrize("rule", ALERTS, ids=NAMES)
def test_every_alert_names_its_cluster_and_keeps_clusters_apart(rule):
    """The cluster is a label of every alert (the series' own, or the rule's for an alert on no series), its summary
    and description say it, and every sum and join keeps it (`by (...)`, `on(...)`)."""
    annotations = rule["annotations"]
    assert "$labels.cluster" in annotations["summary"] and "$labels.cluster" in annotations["description"]
    groupings = re.findall(r"\b(?:by|on)\s*\(([^)]*)\)", rule["expr"])
    assert all("cluster" in [label.strip() for label in grouping.split(",")] for grouping in groupings), groupings
    assert "absent(" not in rule["expr"] or "$labels.cluster" in rule["labels"].get("cluster", "")


@pytest.mark.parametrize("rule", ALERTS, ids=NAMES)
def test_alert_expression_uses_only_exported_series_labels_and_values(rule):
    assert problems(rule["expr"]) == []


def test_every_runbook_section_belongs_to_an_alert():
    assert runbook_anchors() == {github_anchor(name) for name in NAMES} | GENERAL_SECTIONS


def test_leaked_throttle_counts_the_partitions_that_still_reassign():
    [leaked] = [rule for rule in ALERTS if rule["alert"] == "KafkaReplicationThrottleLeaked"]
    assert NOT_FINISHED in leaked["expr"]


@pytest.mark.parametrize("name", NAMES)
def test_every_alert_is_unit_tested_firing_and_not_firing(name):
    cases = [case for path in RULE_TESTS for test in yaml.safe_load(path.read_text())["tests"]
             for case in test.get("alert_rule_test", []) if case["alertname"] == name]
    assert any(case["exp_alerts"] for case in cases), f"no promtool test where {name} fires"
    assert any(not case.get("exp_alerts") for case in cases), f"no promtool test where {name} stays quiet"


def test_github_anchor():
    assert github_anchor(" KafkaReassignmentMonitorDown") == "kafkareassignmentmonitordown"
    assert github_anchor("Running in production") == "running-in-production"
