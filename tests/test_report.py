"""streaming.core.progress_report: summary, the JSON document (validated against its schema), the table, watch
history."""

import json
from dataclasses import replace

import jsonschema
import pytest
from rich.console import Console

from streaming.core import history
from streaming.core.kip179 import listed_replicas, ongoing_replicas
from streaming.core.progress_report import (FROM_FILE, ONGOING, SCHEMA_PATH, build, human_bytes, human_seconds,
                                            report_rows, summary_line, to_document, to_json, to_table, to_text,
                                            with_history)
from streaming.vocabulary.snapshot import PollError, from_rows
from streaming.core.progress_report import diagnose
from tests.test_kip179 import CASES, SNAPSHOT, moves_for

SCHEMA = json.loads(SCHEMA_PATH.read_text())
EVERY_CASE = moves_for([r for _, r, _, _, _ in CASES])


def rendered(renderable):
    console = Console(width=300, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


def test_file_report_document_matches_schema():
    report = build(SNAPSHOT, listed_replicas(EVERY_CASE, SNAPSHOT), FROM_FILE)
    document = json.loads(to_json(report))
    jsonschema.validate(document, SCHEMA)
    assert document["source"] == FROM_FILE and document["in_progress"] is True
    assert len(document["replicas"]) == len(CASES)


def test_ongoing_report_document_matches_schema_with_errors():
    snapshot = replace(SNAPSHOT, errors=(PollError("DescribeLogDirs", "KafkaTimeoutError: broker 2"),))
    document = to_document(build(snapshot, ongoing_replicas(snapshot), ONGOING))
    jsonschema.validate(document, SCHEMA)
    assert document["errors"] == [{"api": "DescribeLogDirs", "message": "KafkaTimeoutError: broker 2"}]


def test_summary_counts_bytes_of_moving_replicas_only():
    summary = build(SNAPSHOT, listed_replicas(EVERY_CASE, SNAPSHOT), FROM_FILE).summary
    # Moving: t-0 to broker 2 (400 of 1000) and t-4's log-dir move on broker 3 (250 of 1000).
    assert (summary["replicas_moving"], summary["bytes_total"], summary["bytes_remaining"]) == (2, 2000, 1350)
    assert summary["partitions_total"] == 2 and summary["partitions_completed"] == 0
    assert summary["replicas_listed"] == len(CASES)
    assert sum(summary["statuses"].values()) == len(CASES)
    assert summary["statuses"]["Behind"] == sum(1 for _, _, s, _, _ in CASES if s.startswith("Behind"))
    assert summary["rate_bytes_per_sec"] is None and summary["eta_seconds"] is None


IN_PROGRESS = [
    # id, listed replicas, in progress
    ("adding-replica", [("t", 0, 2)], True),
    ("kept-replica-of-reassigning-partition", [("t", 0, 1)], True),
    ("log-dir-move", [("t", 4, 3)], True),
    ("completed", [("t", 1, 1), ("t", 1, 3)], False),
    ("not-hosted-and-unknown", [("t", 1, 2), ("nope", 0, 1), ("t", 9, 1)], False),
    ("nothing-listed", [], False),
]


@pytest.mark.parametrize("replicas, in_progress", [pytest.param(r, p, id=i) for i, r, p in IN_PROGRESS])
def test_in_progress_from_a_file(replicas, in_progress):
    report = build(SNAPSHOT, listed_replicas(moves_for(replicas), SNAPSHOT), FROM_FILE)
    assert report.in_progress is in_progress


def test_in_progress_without_a_file():
    assert build(SNAPSHOT, ongoing_replicas(SNAPSHOT), ONGOING).in_progress
    quiet = from_rows(0, "c", brokers=[{"broker": 1, "alive": True}], log_dirs_answered=[{"broker": 1}])
    report = build(quiet, ongoing_replicas(quiet), ONGOING)
    assert not report.in_progress
    assert summary_line(report) == "Nothing is reassigning."


def test_table_shows_every_listed_replica_and_dashes_without_history():
    text = rendered(to_table(build(SNAPSHOT, listed_replicas(EVERY_CASE, SNAPSHOT), FROM_FILE)))
    for _, _, status, _, _ in CASES:
        assert status in text
    assert "400 B / 1.0 KB" in text and "40.0%" in text
    assert "3 (dir)" in text
    assert "rate -, ETA -" in text
    assert "Listed: 9 partitions, 15 replicas" in text


def test_text_has_a_header_one_aligned_line_per_replica_and_the_summary():
    report = build(SNAPSHOT, listed_replicas(EVERY_CASE, SNAPSHOT), FROM_FILE)
    lines = to_text(report).splitlines()
    assert lines[0].split() == ["topic", "partition", "broker", "state", "%", "copied", "/", "total", "rate", "ETA",
                                "status", "reason"]
    body = lines[1:len(CASES) + 1]
    assert [line.split()[:3] for line in body][:2] == [["t", "0", "2"], ["t", "0", "1"]]
    status_column = lines[0].index("status")
    assert all(line[status_column - 2:status_column] == "  " for line in body)  # columns line up
    assert lines[len(CASES) + 1] == "" and lines[len(CASES) + 2] == summary_line(report)


def test_text_of_nothing_is_the_summary_alone():
    quiet = from_rows(0, "c", brokers=[{"broker": 1, "alive": True}], log_dirs_answered=[{"broker": 1}])
    assert to_text(build(quiet, ongoing_replicas(quiet), ONGOING)) == "Nothing is reassigning."


def test_live_table_shows_the_worst_rows_that_fit_and_counts_the_rest():
    text = rendered(to_table(build(SNAPSHOT, listed_replicas(EVERY_CASE, SNAPSHOT), FROM_FILE), max_rows=2))
    assert "Behind: 600 bytes" in text and "Behind: 750 bytes" in text  # the two COPYING rows come first
    assert "In sync" not in text.split("...")[0]
    assert f"... {len(CASES) - 2} more replicas not shown" in text


def test_table_shows_poll_errors_as_warnings():
    snapshot = replace(SNAPSHOT, errors=(PollError("ListOffsets", "boom"),))
    assert "warning: ListOffsets failed: boom" in rendered(to_table(build(snapshot, ongoing_replicas(snapshot), ONGOING)))


def moved(copied, ts_ms):
    """SNAPSHOT with broker 2's copy of t-0 at `copied` bytes, taken at `ts_ms`."""
    logs = [{**log, "size": copied} if (log["broker"], log["partition"]) == (2, 0) else log
            for log in SNAPSHOT["log_dirs"]]
    return replace(SNAPSHOT, ts_ms=ts_ms, tables={**SNAPSHOT.tables, "log_dirs": logs})


def test_watch_history_gives_rates_and_eta_and_keeps_row_order():
    moves = moves_for([("t", 0, 2), ("t", 1, 3), ("t", 0, 1)])
    memory = history.empty_memory()
    first = moved(400, 10_000)
    memory, rows = with_history(memory, listed_replicas(moves, first), first.ts_ms)
    assert all(row["rate_bytes_per_sec"] is None for row in report_rows(build(first, rows, FROM_FILE)))
    second = moved(500, 20_000)
    memory, rows = with_history(memory, listed_replicas(moves, second), second.ts_ms)
    report = build(second, diagnose(second, rows), FROM_FILE)
    shown = report_rows(report)
    assert [(row["partition"], row["broker"]) for row in shown] == [(0, 2), (0, 1), (1, 3)]
    adding = shown[0]
    assert adding["rate_bytes_per_sec"] == pytest.approx(10.0)
    assert adding["eta_seconds"] == pytest.approx(50.0)
    assert shown[2]["status"] == "In sync"
    assert report.summary["rate_bytes_per_sec"] == pytest.approx(10.0)
    assert report.summary["eta_seconds"] == pytest.approx(50.0)
    jsonschema.validate(to_document(report), SCHEMA)
    assert "10 B/s" in rendered(to_table(report)) and "50s" in rendered(to_table(report))


def test_watch_history_passes_the_rows_that_do_not_move_through():
    # Unknown and not-hosted rows carry no progress facts: they pass through, their history columns null.
    one_shot = listed_replicas(EVERY_CASE, SNAPSHOT)
    memory, rows = with_history(history.empty_memory(), one_shot, SNAPSHOT.ts_ms)
    before, after = one_shot.rows(), rows.rows()
    assert [row["status"] for row in after] == [row["status"] for row in before]
    still = [(b, a) for b, a in zip(before, after) if not b["moving"]]
    assert still and all({name: a[name] for name in b} == b for b, a in still)
    assert all(a[name] is None for _, a in still for name in ("copy_rate", "leader_rate", "stalled_seconds"))
    assert len(memory) == sum(row["moving"] for row in before)


FORMATS = [
    # id, function, value, text
    ("bytes-none", human_bytes, None, "-"),
    ("bytes-small", human_bytes, 999, "999 B"),
    ("bytes-mb", human_bytes, 30_000_000, "30.0 MB"),
    ("bytes-gb", human_bytes, 2.5e9, "2.5 GB"),
    ("seconds-none", human_seconds, None, "-"),
    ("seconds", human_seconds, 42.4, "42s"),
    ("minutes", human_seconds, 125, "2m05s"),
    ("hours", human_seconds, 7260, "2h01m"),
]


@pytest.mark.parametrize("function, value, text", [pytest.param(f, v, t, id=i) for i, f, v, t in FORMATS])
def test_formats(function, value, text):
    assert function(value) == text


def test_a_report_carries_each_moving_replicas_reason_and_the_models_eta():
    """`progress` runs the budget model and the reason rules on its rows: a destination that does not answer
    is named; with no history (one-shot) the ETA stays null."""
    offline = from_rows(3_600_000, "c", brokers=[{"broker": 1, "alive": True}, {"broker": 2, "alive": True}],
                        log_dirs_answered=[{"broker": 1}],
                        partitions=[{"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1]}],
                        reassignments=[{"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2],
                                        "removing": []}],
                        log_dirs=[{"broker": 1, "log_dir": "d", "topic": "t", "partition": 0, "size": 10,
                                   "offset_lag": 0, "is_future": False}])
    report = build(offline, diagnose(offline, ongoing_replicas(offline)), ONGOING)
    (row,) = to_document(report)["replicas"]
    assert row["state"] == "BROKER_OFFLINE" and row["reason_code"] == "DESTINATION_OFFLINE"
    assert row["reason"].startswith("destination broker 2 offline") and row["eta_seconds"] is None
    jsonschema.validate(to_document(report), SCHEMA)
    assert "destination broker 2 offline" in to_text(report)
