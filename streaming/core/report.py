"""What `reassign-monitor progress` prints: a summary of the replica rows, and the rows plus summary as
one JSON document, plain aligned text (one-shot) or a rich table (live view). Pure: rows in, documents,
text and renderables out.

The JSON document's shape is progress_report.schema.json beside this module (tests validate against it):

    {"schema": SCHEMA_ID, "ts_ms", "cluster_id", "source": "ongoing" | "reassignment-json-file",
     "in_progress": bool, "replicas": [{topic, partition, broker, intra_broker, status, state, moving,
     reassigning, numerator, denominator, progress, in_isr, offset_lag, messages_behind_estimate,
     rate_bytes_per_sec, eta_seconds}], "summary": {...}, "errors": [{"api", "message"}]}

The replica rows are streaming.core.kip179's dicts (None is null). Rates and ETAs need two polls: they
are null (table: '-') in a one-shot report and filled by `with_history` while watching.
"""

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# rich (the live view) and the history step are imported by the functions that use them: the one-shot
# report needs neither, and `progress` start-up pays for every module loaded here.
from streaming.core.kip179 import BEHIND
from streaming.core.budget_view import last_eta
from streaming.core.progress import partition_rollup, reassignment_rollup
from streaming.core.reasons import diagnosed, offline_brokers, unanswered_brokers
from streaming.vocabulary.json_values import json_value
from streaming.vocabulary.replica_row import key_of, partition_of
from streaming.vocabulary.states import SEVERITY

SCHEMA_ID = "kafka-reassign-monitor/progress-report/v1"
SCHEMA_PATH = Path(__file__).with_name("progress_report.schema.json")
ONGOING, FROM_FILE = "ongoing", "reassignment-json-file"
REPLICA_FIELDS = ["topic", "partition", "broker", "intra_broker", "status", "state", "moving", "reassigning",
                  "numerator", "denominator", "progress", "in_isr", "offset_lag", "messages_behind_estimate",
                  "rate_bytes_per_sec", "eta_seconds", "reason_code", "reason"]
NOT_KNOWN = "-"
UNKNOWN_SEVERITY = -1  # a row without a state (not hosted, unknown) sorts below every state


@dataclass(frozen=True)
class Report:
    ts_ms: int
    cluster_id: str
    source: str
    replicas: list  # row dicts
    summary: dict
    errors: tuple = ()

    @property
    def in_progress(self):
        return self.summary["in_progress"]


def _moving(rows):
    return [row for row in rows if row["moving"]]


def _with_rate_name(row):
    """A history row with its copy rate under the report's name for it."""
    return {("rate_bytes_per_sec" if name == "copy_rate" else name): value for name, value in row.items()}


# While watching, a PENDING move gets a reason after this many redraws (the job: two triggers).
PENDING_REASON_AFTER_POLLS = 2


def diagnose(snapshot, rows, pending_after_s=0.0):
    """The rows with the reason of each moving row (`reason_code`, `reason`) and, for rows with a copy rate,
    the budget model's ETA. `progress` reads no throttle configs (README contract change 14): every budget
    runs at the observed rate of the moves using it, so the model's ETAs know that moves into one broker
    share its budget but not what a throttle is set to; without history (one-shot) ETAs stay null."""
    offline = offline_brokers(snapshot["brokers"], snapshot["log_dirs_answered"])
    # The model reads the copy rate under the history's name for it.
    moving = [{**row, "copy_rate": row.get("rate_bytes_per_sec")} for row in rows if row["moving"]]
    if not moving:
        return rows
    done, _ = diagnosed(moving, (), (), offline, snapshot.ts_ms, pending_after_s,
                        unanswered_brokers(snapshot["brokers"]))
    by_key = {key_of(row): row for row in done}
    return [by_key[key_of(row)] if row["moving"] else {**row, "reason_code": None, "reason": None} for row in rows]


def with_history(memory, rows, now_ms):
    """(memory, rows) with copy rate, ETA and the history states (STALLED, FALLING_BEHIND) for the moving
    rows; the others pass through, their history columns null. `memory` starts as history.empty_memory()."""
    from streaming.core import history

    moving = _moving(rows)
    if not moving:
        return memory, rows
    memory, stepped = history.step(memory, moving, now_ms)
    stepped = [_with_rate_name(row) for row in stepped]
    blank = dict.fromkeys(stepped[0])  # every column a stepped row has, null for the rows that stay put
    by_key = {key_of(row): row for row in stepped}
    # Keep the rows' order (file order, or topic/partition order): the table must not jump while redrawn.
    return memory, [by_key[key_of(row)] if row["moving"] else {**blank, **row} for row in rows]


def _known(values):
    return [value for value in values if value is not None]


def summarize(rows, source):
    """Counts and bytes of a report. Bytes, rate and ETA come from the core's reassignment rollup over the
    replicas that are moving (a listed replica that stays where it is has nothing to copy); the partition
    counts are those of the partitions moving; `statuses` counts every row by status ('Behind' as one)."""
    moving = _moving(rows)
    rates = _known(row.get("rate_bytes_per_sec") for row in moving)
    leader_rates = _known(row.get("leader_rate") for row in moving)
    rollup = reassignment_rollup(
        partition_rollup(moving),
        copy_rate=float(sum(rates)) if rates else None,
        leader_rate=float(sum(leader_rates)) if rates else None)
    if moving:  # the budget model's: the last move's finish
        rollup["eta_seconds"] = last_eta(row.get("eta_seconds") for row in moving)
    statuses = Counter(BEHIND if row["status"].startswith(BEHIND) else row["status"] for row in rows)
    in_progress = bool(moving) or (source == FROM_FILE and any(row["reassigning"] for row in rows))
    return {**rollup,
            "partitions_listed": len({partition_of(row) for row in rows}),
            "replicas_listed": len(rows),
            "replicas_moving": len(moving),
            "statuses": dict(sorted(statuses.items())),
            "in_progress": in_progress}


def build(snapshot, rows, source):
    return Report(snapshot.ts_ms, snapshot.cluster_id, source, list(rows), summarize(rows, source),
                  tuple(snapshot.errors))


def to_document(report):
    replicas = [{name: json_value(row.get(name)) for name in REPLICA_FIELDS} for row in report.replicas]
    return {"schema": SCHEMA_ID, "ts_ms": int(report.ts_ms), "cluster_id": report.cluster_id,
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
    rows = [[name for name, _ in COLUMNS]] + list(_cells(report.replicas))
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if justify == "left" else cell.rjust(w)
                       for cell, w, (_, justify) in zip(row, widths, COLUMNS)).rstrip() for row in rows]
    body = lines + [""] if report.replicas else []
    return "\n".join(body + [summary_line(report)] + _warnings(report))


def _severity(row):
    return UNKNOWN_SEVERITY if row["state"] is None else SEVERITY[row["state"]]


def _by_severity(rows):
    """Worst state first (unknown rows last), file or topic order within a state (sorted is stable)."""
    return sorted(rows, key=_severity, reverse=True)


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
    shown = rows if max_rows is None else rows[:max(max_rows, 0)]
    for cells in _cells(shown):
        table.add_row(*cells)
    hidden = [Text(f"... {len(rows) - len(shown)} more replicas not shown (--output json lists all)")
              ] if len(shown) < len(rows) else []
    lines = hidden + [Text(summary_line(report))] + [Text(w, style="yellow") for w in _warnings(report)]
    head = [table] if report.replicas else [Text(title)] if title else []
    return Group(*head, *lines)
