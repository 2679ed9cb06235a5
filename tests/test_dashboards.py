import json
import subprocess
import sys
from pathlib import Path

import pytest

from dashboards.build import DASHBOARDS, HERE, all_queries, render, substitute
from dashboards.common import STATE_COLORS
from sinks import metric_names as m
from streaming.cli import main
from streaming.vocabulary.states import STATE_NAMES
from tests.promql import matchers, problems, series_names

ROOT = Path(__file__).resolve().parent.parent
QUERIES = all_queries()


@pytest.mark.parametrize("name", DASHBOARDS)
def test_committed_json_is_what_the_builder_generates(name):
    committed = (HERE / f"{name}.json").read_text(encoding="utf-8")
    assert committed == render(DASHBOARDS[name]()), (
        f"dashboards/{name}.json is stale: run `reassign-monitor dashboards --out dashboards` and commit it")


@pytest.mark.parametrize("dashboard, title, expr", QUERIES, ids=[f"{d}:{t}:{i}" for i, (d, t, _) in enumerate(QUERIES)])
def test_every_query_uses_only_exported_series_labels_and_values(dashboard, title, expr):
    assert problems(expr) == []
    assert "$" not in expr, "a template variable was not substituted"


def test_every_exported_metric_is_on_some_dashboard():
    used = {name.removesuffix(suffix) for _, _, expr in QUERIES for name in series_names(expr)
            for suffix in ("_bucket", "") if name.endswith(suffix)}
    assert {metric.name for metric in m.ALL} - used == set()


@pytest.mark.parametrize("name", DASHBOARDS)
def test_panel_titles_are_unique_and_panels_do_not_overlap(name):
    panels = json.loads(render(DASHBOARDS[name]()))["panels"]
    titles = [p["title"] for p in panels]
    assert len(titles) == len(set(titles))
    cells = [(p["gridPos"]["x"] + dx, p["gridPos"]["y"] + dy) for p in panels
             for dx in range(p["gridPos"]["w"]) for dy in range(p["gridPos"]["h"])]
    assert len(cells) == len(set(cells))
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels)


@pytest.mark.parametrize("name, variables", [
    ("fleet", ["datasource", "cluster"]),
    ("overview", ["datasource", "cluster"]),
    ("brokers", ["datasource", "cluster", "topic", "broker"]),
    ("replicas", ["datasource", "cluster", "topic", "broker"]),
])
def test_template_variables(name, variables):
    data = json.loads(render(DASHBOARDS[name]()))
    assert [v["name"] for v in data["templating"]["list"]] == variables
    for variable in data["templating"]["list"][1:]:
        assert (variable["includeAll"], variable["multi"], variable["allValue"]) == (True, True, ".*")
    panel_datasources = {json.dumps(p["datasource"], sort_keys=True) for p in data["panels"]}
    assert panel_datasources == {json.dumps({"type": "prometheus", "uid": "${datasource}"}, sort_keys=True)}


RAW_QUERIES = all_queries(variables_filled=False)


@pytest.mark.parametrize("dashboard, title, expr", RAW_QUERIES,
                         ids=[f"{d}:{t}:{i}" for i, (d, t, _) in enumerate(RAW_QUERIES)])
def test_every_series_of_every_query_is_filtered_by_the_cluster_variable(dashboard, title, expr):
    picked = [name for name, label, op, value in matchers(expr) if (label, op, value) == (m.CLUSTER, "=~", "$cluster")]
    assert sorted(picked) == sorted(series_names(expr))


@pytest.mark.parametrize("name", DASHBOARDS)
def test_the_topic_and_broker_values_offered_are_those_of_the_clusters_picked(name):
    data = json.loads(render(DASHBOARDS[name]()))
    cluster, *others = [v for v in data["templating"]["list"] if v["type"] == "query"]
    assert cluster["query"] == f"label_values({m.LAST_POLL.name}, cluster)"
    assert all('{cluster=~"$cluster"}' in v["query"] for v in others)


def test_fleet_table_has_a_row_per_cluster_with_what_the_issue_asks_for():
    table = next(p for p in json.loads(render(DASHBOARDS["fleet"]()))["panels"] if p["type"] == "table")
    organize = next(t for t in table["transformations"] if t["id"] == "organize")["options"]
    assert organize["indexByName"]["cluster"] == 0
    assert {"Replica moves", "Bytes left", "ETA", "Unhealthy partitions", "Polled", "Why"} <= set(
        organize["renameByName"].values())
    per_cluster = ("sum by (cluster)", "max by (cluster)", "time() - max by (cluster)", "max by (cluster, reason)")
    assert all(t["instant"] and t["format"] == "table" and t["expr"].startswith(per_cluster) for t in table["targets"])


def test_replica_table_shows_every_column_the_issue_asks_for():
    table = next(p for p in json.loads(render(DASHBOARDS["replicas"]()))["panels"] if p["type"] == "table")
    organize = next(t for t in table["transformations"] if t["id"] == "organize")["options"]
    columns = set(organize["indexByName"])
    assert {"topic", "partition", "broker", "state", "Progress", "Rate", "ETA", "Stalled"} <= columns
    progress = next(o for o in table["fieldConfig"]["overrides"] if o["matcher"]["options"] == "Progress")
    assert {"id": "custom.cellOptions", "value": {"type": "gauge", "mode": "gradient"}} in progress["properties"]
    assert all(t["instant"] and t["format"] == "table" for t in table["targets"])


def test_overview_marks_throttle_actions_with_annotations():
    data = json.loads(render(DASHBOARDS["overview"]()))
    [annotation] = data["annotations"]["list"]
    assert m.THROTTLE_ACTIONS.name in annotation["expr"]


def test_every_state_has_a_colour():
    assert set(STATE_COLORS) == set(STATE_NAMES)


@pytest.mark.parametrize("expr, variables, expected", [
    ('x{topic=~"$topic"}', {"topic": ".*"}, 'x{topic=~".*"}'),
    ('x{broker=~"${broker}"}', {"broker": ".*"}, 'x{broker=~".*"}'),
    ("rate(x[$__rate_interval])", {}, "rate(x[1m])"),
])
def test_substitute(expr, variables, expected):
    assert substitute(expr, variables) == expected


def test_substitute_refuses_an_unknown_variable():
    with pytest.raises(KeyError):
        substitute('x{topic=~"$typo"}', {"topic": ".*"})


# The checker itself must be able to fail, or the tests above prove nothing.
@pytest.mark.parametrize("expr, expected", [
    ("sum(kafka_reassignment_partitions)", []),
    ("kafka_reassignment_partition", ["unknown series kafka_reassignment_partition"]),
    ("rate(kafka_reassignment_monitor_poll_duration_seconds_bucket[1m])", []),
    ("kafka_reassignment_remaining_bytes_bucket", ["unknown series kafka_reassignment_remaining_bytes_bucket"]),
    ("kafka_reassignment_throttle_actions", ["unknown series kafka_reassignment_throttle_actions"]),
    ('kafka_reassignment_partitions{broker="1"}', ["kafka_reassignment_partitions has no label broker"]),
    ('kafka_reassignment_partitions{state="STUCK"}',
     [f"state='STUCK' is not one of {sorted(STATE_NAMES)}"]),
    ("time() - 3", ["selects no series"]),
])
def test_problems_finds_what_is_wrong(expr, expected):
    assert problems(expr) == expected


def test_matchers_reads_label_matchers():
    assert matchers('a{x="1", y=~"b|c"} + b{z!="q"}') == [("a", "x", "=", "1"), ("a", "y", "=~", "b|c"),
                                                          ("b", "z", "!=", "q")]


def test_cli_writes_parseable_dashboards(tmp_path):
    out = tmp_path / "new" / "dir"
    result = subprocess.run([sys.executable, "-m", "streaming.cli", "dashboards", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for name in DASHBOARDS:
        data = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        assert data["uid"] and data["panels"]


def test_cli_bad_out_is_bad_input(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert main(["dashboards", "--out", str(blocker / "sub")]) == 2
    assert "--out" in capsys.readouterr().err


def test_cli_out_is_required(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["dashboards"])
    assert exit_info.value.code == 2
    assert "--out" in capsys.readouterr().err
