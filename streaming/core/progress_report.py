"""What `reassign-monitor progress` prints: a summary of the replica rows, and the rows plus summary as
one JSON document, plain aligned text (one-shot) or a rich table (live view). Pure: rows in, documents,
text and renderables out.

The JSON document's shape is progress_report.schema.json beside this module (tests validate against it):

    {"schema": SCHEMA_ID, "ts_ms", "cluster", "cluster_id", "source": "ongoing" | "reassignment-json-file",
     "in_progress": bool, "replicas": [{topic, partition, broker, intra_broker, status, state, moving,
     reassigning, numerator, denominator, progress, in_isr, offset_lag, messages_behind_estimate, remote_bytes,
     rate_bytes_per_sec, eta_seconds}], "summary": {...}, "errors": [{"api", "message"}]}

The replica rows are streaming.core.kip179's columns (streaming.vocabulary.columns); they become dicts only in
the document and the table. Rates and ETAs need two polls: they are null (table: '-') in a one-shot report and
filled by `with_history` while watching.
"""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# rich (the live view) and the history step are imported by the functions that use them: the one-shot
# report needs neither, and `progress` start-up pays for every module loaded here.
from streaming.core.diagnosis import (diagnosed, offline_brokers, offline_log_dirs, out_of_isr_targets,
                                       unanswered_brokers)
from streaming.core.kip179 import BEHIND
from streaming.core.rollups import partition_rollup, summary
from streaming.vocabulary.columns import KINDS, nulls, partition_ids, unique
from streaming.vocabulary.json_values import json_value

SCHEMA_ID = "kafka-reassign-monitor/progress-report/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_report.schema.json")
ONGOING, FROM_FILE = "ongoing", "reassignment-json-file"
REPLICA_FIELDS = ["topic", "partition", "broker", "intra_broker", "status", "state", "moving", "reassigning",
                  "numerator", "denominator", "progress", "in_isr", "offset_lag", "messages_behind_estimate",
                  "remote_bytes", "rate_bytes_per_sec", "eta_seconds", "reason_code", "reason"]
NOT_KNOWN = "-"
# The document's name of a column the rows hold under another name.
COLUMN_OF = {"rate_bytes_per_sec": "copy_rate"}


@dataclass(frozen=True)
class Report:
    ts_ms: int
    cluster_id: str
    source: str
    replicas: object  # Columns (streaming.core.kip179's, with history and diagnosis where made)
    summary: dict
    errors: tuple = ()
    cluster: str = ""  # its name (streaming.vocabulary.cluster_name), as the job's metrics and records call it

    @property
    def in_progress(self):
        return self.summary["in_progress"]


# While watching, a PENDING move gets a reason after this many redraws (the job: two triggers).
PENDING_REASON_AFTER_POLLS = 2


def _scattered(rows, at, columns):
    """`rows` with the columns of `columns` (rows for the positions `at`) set there, null elsewhere."""
    out = {}
    for name, values in columns.items():
        column = rows[name].copy() if name in rows else nulls(len(rows), KINDS.get(name))
        column[at] = values
        out[name] = column
    return rows.with_columns(**out)


def diagnose(snapshot, rows, pending_after_s=0.0):
    """The rows with the reason of each moving row (`reason_code`, `reason`) and, for rows with a copy rate, the
    budget model's ETA. `progress` reads no throttle configs (docs/progress.md "The `progress` command"): every
    budget runs at the observed rate of the moves using it, so the model's ETAs know that moves into one broker
    share its budget but not what a throttle is set to; without history (one-shot) ETAs stay null."""
    offline = offline_brokers(snapshot["brokers"], snapshot["log_dirs_answered"])
    at = np.flatnonzero(rows["moving"])
    done, _ = diagnosed(rows.take(at), (), (), offline, snapshot.ts_ms, pending_after_s,
                        unanswered_brokers(snapshot["brokers"]), offline_log_dirs(snapshot["offline_log_dirs"]),
                        out_of_isr_targets(snapshot["reassignments"], snapshot["partitions"]))
    return _scattered(rows, at, {name: done[name] for name in ("eta_seconds", "reason_code", "reason")})


def with_history(memory, rows, now_ms):
    """(memory, rows) with copy rate and the history states (STALLED, FALLING_BEHIND) for the moving rows; the
    others pass through, their history columns null. `memory` starts as history.empty_memory()."""
    from streaming.core import history

    at = np.flatnonzero(rows["moving"])
    if not len(at):
        return memory, rows
    memory, stepped = history.step(memory, rows.take(at), now_ms)
    # Keep the rows' order (file order, or topic/partition order): the table must not jump while redrawn.
    return memory, _scattered(rows, at, dict(stepped.items()))


def summarize(rows, source):
    """Counts and bytes of a report. Bytes, rate and ETA come from the core's rollups over the replicas that are
    moving (a listed replica that stays where it is has nothing to copy); the partition counts are those of the
    partitions moving; `statuses` counts every row by status ('Behind' as one)."""
    moving = rows.take(rows["moving"])
    rates = moving["copy_rate"][~np.isnan(moving["copy_rate"])] if "copy_rate" in moving else ()
    rollup = summary(partition_rollup(moving), copy_rate=float(np.sum(rates)) if len(rates) else None)
    statuses = Counter(BEHIND if status.startswith(BEHIND) else status for status in rows["status"].tolist())
    in_progress = bool(len(moving)) or (source == FROM_FILE and bool(rows["reassigning"].any()))
    return {**rollup,
            "partitions_listed": len(unique(partition_ids((rows["topic"], rows["partition"]))[0])),
            "replicas_listed": len(rows),
            "replicas_moving": len(moving),
            "statuses": dict(sorted(statuses.items())),
            "in_progress": in_progress}


def build(snapshot, rows, source, cluster=""):
    return Report(snapshot.ts_ms, snapshot.cluster_id, source, rows, summarize(rows, source), tuple(snapshot.errors),
                  cluster)


def report_rows(report, replicas=None):
    """The report's replica rows as dicts of REPLICA_FIELDS (a column the rows lack is null)."""
    replicas = report.replicas if replicas is None else replicas
    names = [COLUMN_OF.get(name, name) for name in REPLICA_FIELDS]
    values = replicas.select([name for name in names if name in replicas]).rows()
    return [{field: row.get(name) for field, name in zip(REPLICA_FIELDS, names)} for row in values]


def to_document(report):
    replicas = [{name: json_value(value) for name, value in row.items()} for row in report_rows(report)]
    return {"schema": SCHEMA_ID, "ts_ms": int(report.ts_ms), "cluster": report.cluster, "cluster_id": report.cluster_id,
            "source": report.source, "in_progress": report.in_progress, "replicas": replicas,
            "summary": {k: json_value(v) if not isinstance(v, dict) else v for k, v in report.summary.items()},
            "errors": [{"api": e.api, "message": e.message} for e in report.errors]}


def to_json(report):
    return json.dumps(to_document(report), allow_nan=False)


def human_bytes(value):
    if value is None:
        return NOT_KNOWN
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{int(value)} B"


def human_seconds(value):
    if value is None:
        return NOT_KNOWN
    minutes, seconds = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def _rate(value):
    return NOT_KNOWN if value is None else f"{human_bytes(value)}/s"


def _percent(value):
    return NOT_KNOWN if value is None else f"{100 * value:.1f}%"


def _count(n, noun):
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary_line(report):
    s = report.summary
    parts = []
    if report.source == FROM_FILE:
        counts = ", ".join(f"{n} {status}" for status, n in s["statuses"].items())
        parts.append(f"Listed: {_count(s['partitions_listed'], 'partition')}, "
                     f"{_count(s['replicas_listed'], 'replica')} ({counts or 'none'}).")
    if s["replicas_moving"]:
        parts.append(f"Moving: {_count(s['replicas_moving'], 'replica')} in {_count(s['partitions_total'], 'partition')} "
                     f"({s['partitions_in_sync']} in sync), {human_bytes(s['bytes_remaining'])} of "
                     f"{human_bytes(s['bytes_total'])} left to copy, rate {_rate(s['rate_bytes_per_sec'])}, "
                     f"ETA {human_seconds(s['eta_seconds'])}.")
    elif s["in_progress"]:  # a listed replica that stays put, in a partition that still reassigns
        parts.append("A listed partition is still reassigning.")
    else:
        parts.append("Nothing listed is still moving." if report.source == FROM_FILE else "Nothing is reassigning.")
    return " ".join(parts)


# Status and reason, the longest texts, come last so that a narrow terminal loses them before the numbers. The
# columns that may take two lines in a narrow terminal, and the width they keep at least:
WRAPPING = {"topic": 10, "status": 16, "reason": 16}
COLUMNS = (("topic", "left"), ("partition", "right"), ("broker", "right"), ("state", "left"), ("%", "right"),
           ("copied / total", "right"), ("rate", "right"), ("ETA", "right"), ("status", "left"), ("reason", "left"))


def _cells(rows):
    """The table's cells, one list of strings per replica row."""
    for r in rows:
        broker = f"{r['broker']} (dir)" if r["intra_broker"] else str(r["broker"])
        state = NOT_KNOWN if r["state"] is None else r["state"]
        copied = (NOT_KNOWN if r["denominator"] is None and r["numerator"] is None
                  else f"{human_bytes(r['numerator'])} / {human_bytes(r['denominator'])}")
        yield [r["topic"], str(r["partition"]), broker, state, _percent(r["progress"]), copied,
               _rate(r.get("rate_bytes_per_sec")), human_seconds(r.get("eta_seconds")), r["status"], r.get("reason") or ""]


def _warnings(report):
    return [f"warning: {e.api} failed: {e.message}" for e in report.errors]


def to_text(report):
    """The one-shot table as plain aligned columns, one line per replica: fast for thousands of rows
    (rich takes seconds for 5,000) and easy to grep or diff."""
    rows = [[name for name, _ in COLUMNS]] + list(_cells(report_rows(report)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if justify == "left" else cell.rjust(w)
                       for cell, w, (_, justify) in zip(row, widths, COLUMNS)).rstrip() for row in rows]
    body = lines + [""] if len(report.replicas) else []
    return "\n".join(body + [summary_line(report)] + _warnings(report))


def _by_severity(replicas):
    """Worst state first (unknown rows last), file or topic order within a state (a stable sort)."""
    return replicas.take(np.argsort(-replicas["state"].astype(np.int64), kind="stable"))


def to_table(report, title=None, max_rows=None):
    """A rich renderable for the live view: the replica rows (worst state first; at most `max_rows`, the
    rest counted), then the summary line and any poll errors."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    # Light rules and wrapping text columns: a row must stay readable in an 80-column terminal.
    table = Table(title=title, title_justify="left", expand=False, box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True)
    for name, justify in COLUMNS:
        table.add_column(name, justify=justify, no_wrap=name not in WRAPPING, min_width=WRAPPING.get(name),
                         overflow="fold")
    rows = _by_severity(report.replicas)
    shown = rows if max_rows is None else rows.take(np.arange(min(max(max_rows, 0), len(rows))))
    for cells in _cells(report_rows(report, shown)):
        table.add_row(*cells)
    hidden = [Text(f"... {len(rows) - len(shown)} more replicas not shown (--output json lists all)")
              ] if len(shown) < len(rows) else []
    lines = hidden + [Text(summary_line(report))] + [Text(w, style="yellow") for w in _warnings(report)]
    head = [table] if len(report.replicas) else [Text(title)] if title else []
    return Group(*head, *lines)
