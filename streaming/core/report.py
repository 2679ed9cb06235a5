"""What `reassign-monitor progress` prints: a summary of the replica rows, and the rows plus summary as
one JSON document, plain aligned text (one-shot) or a rich table (live view). Pure: rows in, documents,
text and renderables out.

The JSON document's shape is progress_report.schema.json beside this module (tests validate against it):

    {"schema": SCHEMA_ID, "ts_ms", "cluster_id", "source": "ongoing" | "reassignment-json-file",
     "in_progress": bool, "replicas": [{topic, partition, broker, intra_broker, status, state, moving,
     reassigning, numerator, denominator, progress, in_isr, offset_lag, messages_behind_estimate,
     rate_bytes_per_sec, eta_seconds}], "summary": {...}, "errors": [{"api", "message"}]}

Rates and ETAs need two polls: they are null (table: '-') in a one-shot report and filled by `with_history`
while watching.
"""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

# rich (the live view) and the history step are imported by the functions that use them: the one-shot
# report needs neither, and `progress` start-up pays for every module loaded here.
from streaming.core.kip179 import BEHIND
from streaming.core.progress import partition_rollup, reassignment_rollup
from streaming.vocabulary.json_values import json_value
from streaming.vocabulary.states import ReplicaState

SCHEMA_ID = "kafka-reassign-monitor/progress-report/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_report.schema.json")
ONGOING, FROM_FILE = "ongoing", "reassignment-json-file"
REPLICA_FIELDS = ["topic", "partition", "broker", "intra_broker", "status", "state", "moving", "reassigning",
                  "numerator", "denominator", "progress", "in_isr", "offset_lag", "messages_behind_estimate",
                  "rate_bytes_per_sec", "eta_seconds"]
NOT_KNOWN = "-"


@dataclass(frozen=True)
class Report:
    ts_ms: int
    cluster_id: str
    source: str
    replicas: pd.DataFrame
    summary: dict
    errors: tuple = ()

    @property
    def in_progress(self):
        return self.summary["in_progress"]


def with_history(memory, rows, now_ms):
    """(memory, rows) with copy rate, ETA and the history states (STALLED, FALLING_BEHIND) for the moving
    rows; the others pass through. `memory` starts as history.empty_memory()."""
    from streaming.core import history

    moving = rows.loc[rows["moving"]]
    if moving.empty:
        return memory, rows
    memory, stepped = history.step(memory, moving.reset_index(drop=True), now_ms)
    stepped = stepped.rename(columns={"copy_rate": "rate_bytes_per_sec"})
    merged = pd.concat([stepped, rows.loc[~rows["moving"]]], ignore_index=True)
    # Keep the rows' order (file order, or topic/partition order): the table must not jump while redrawn.
    order = rows[["topic", "partition", "broker", "intra_broker"]].reset_index(drop=True).reset_index()
    merged = order.merge(merged, on=["topic", "partition", "broker", "intra_broker"], how="left")
    return memory, merged.drop(columns="index")


def summarize(rows, source):
    """Counts and bytes of a report. Bytes, rate and ETA come from the core's reassignment rollup over the
    replicas that are moving (a listed replica that stays where it is has nothing to copy); the partition
    counts are those of the partitions moving; `statuses` counts every row by status ('Behind' as one)."""
    moving = rows.loc[rows["moving"]]
    rates = moving["rate_bytes_per_sec"] if "rate_bytes_per_sec" in moving else pd.Series(dtype="float64")
    leader_rates = moving["leader_rate"] if "leader_rate" in moving else pd.Series(dtype="float64")
    has_rate = rates.notna().any()
    rollup = reassignment_rollup(
        partition_rollup(moving),
        copy_rate=float(rates.sum()) if has_rate else None,
        leader_rate=float(leader_rates.fillna(0).sum()) if has_rate else None)
    statuses = Counter(BEHIND if s.startswith(BEHIND) else s for s in rows["status"])
    in_progress = bool(rows["moving"].any() or (rows["reassigning"].any() if source == FROM_FILE else False))
    return {**rollup,
            "partitions_listed": int(rows[["topic", "partition"]].drop_duplicates().shape[0]),
            "replicas_listed": int(len(rows)),
            "replicas_moving": int(len(moving)),
            "statuses": dict(sorted(statuses.items())),
            "in_progress": in_progress}


def build(snapshot, rows, source):
    return Report(snapshot.ts_ms, snapshot.cluster_id, source, rows.reset_index(drop=True), summarize(rows, source),
                  tuple(snapshot.errors))


def to_document(report):
    rows = report.replicas.reindex(columns=REPLICA_FIELDS)
    replicas = [{name: json_value(value) for name, value in zip(REPLICA_FIELDS, values)}
                for values in rows.itertuples(index=False, name=None)]
    return {"schema": SCHEMA_ID, "ts_ms": int(report.ts_ms), "cluster_id": report.cluster_id,
            "source": report.source, "in_progress": report.in_progress, "replicas": replicas,
            "summary": {k: json_value(v) if not isinstance(v, dict) else v for k, v in report.summary.items()},
            "errors": [{"api": e.api, "message": e.message} for e in report.errors]}


def to_json(report):
    return json.dumps(to_document(report), allow_nan=False)


def human_bytes(value):
    if value is None or pd.isna(value):
        return NOT_KNOWN
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{int(value)} B"


def human_seconds(value):
    if value is None or pd.isna(value):
        return NOT_KNOWN
    minutes, seconds = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def _rate(value):
    return NOT_KNOWN if value is None or pd.isna(value) else f"{human_bytes(value)}/s"


def _percent(value):
    return NOT_KNOWN if value is None or pd.isna(value) else f"{100 * value:.1f}%"


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


# Status, the longest text, comes last so that a narrow terminal loses it before the numbers. The
# columns that may take two lines in a narrow terminal, and the width they keep at least:
WRAPPING = {"topic": 10, "status": 16}
COLUMNS = (("topic", "left"), ("partition", "right"), ("broker", "right"), ("state", "left"), ("%", "right"),
           ("copied / total", "right"), ("rate", "right"), ("ETA", "right"), ("status", "left"))


def _cells(rows):
    """The table's cells, one list of strings per replica row."""
    for r in rows.to_dict("records"):
        broker = f"{r['broker']} (dir)" if r["intra_broker"] else str(r["broker"])
        state = r["state"] if isinstance(r["state"], str) else NOT_KNOWN
        copied = (NOT_KNOWN if pd.isna(r["denominator"]) and pd.isna(r["numerator"])
                  else f"{human_bytes(r['numerator'])} / {human_bytes(r['denominator'])}")
        yield [r["topic"], str(r["partition"]), broker, state, _percent(r["progress"]), copied,
               _rate(r.get("rate_bytes_per_sec")), human_seconds(r.get("eta_seconds")), r["status"]]


def _warnings(report):
    return [f"warning: {e.api} failed: {e.message}" for e in report.errors]


def to_text(report):
    """The one-shot table as plain aligned columns, one line per replica: fast for thousands of rows
    (rich takes seconds for 5,000) and easy to grep or diff."""
    rows = [[name for name, _ in COLUMNS]] + list(_cells(report.replicas))
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if justify == "left" else cell.rjust(w)
                       for cell, w, (_, justify) in zip(row, widths, COLUMNS)).rstrip() for row in rows]
    body = lines + [""] if len(report.replicas) else []
    return "\n".join(body + [summary_line(report)] + _warnings(report))


def _by_severity(rows):
    """Worst state first (unknown rows last), file or topic order within a state."""
    severity = rows["state"].map(lambda name: ReplicaState[name].value if isinstance(name, str) else -1)
    return rows.assign(_severity=severity.to_numpy()).sort_values("_severity", ascending=False, kind="stable")


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
    shown = rows if max_rows is None else rows.head(max(max_rows, 0))
    for cells in _cells(shown):
        table.add_row(*cells)
    hidden = [Text(f"... {len(rows) - len(shown)} more replicas not shown (--output json lists all)")
              ] if len(shown) < len(rows) else []
    lines = hidden + [Text(summary_line(report))] + [Text(w, style="yellow") for w in _warnings(report)]
    head = [table] if len(report.replicas) else [Text(title)] if title else []
    return Group(*head, *lines)
