"""What needs history: copy rate, leader growth rate, ETA, stall time, state transitions. Pure.

`step(previous, current, now_ms, settings)` takes the remembered rows of some replica moves and this
poll's replica rows (the progress core's output, plus `finished` rows for moves that left the
reassignment), and returns the rows to remember and the rows to report. The clock is an argument;
each row is stepped on its own, against its remembered row found by key (one pass over each list).

Rates are exponentially weighted over `rate_window_s` with the weight of each sample set by the time
since the previous one (polls need not be evenly spaced, and a restarted job resumes mid-window). Until a
move has been seen for a window, a sample weighs at least its share of the time since the move was first
seen, so the rate is then the mean since first seen: a throttled copy arrives in bursts (Kafka's quota lets a
fetch through, then holds the next until its window's average is under the rate), and a first sample taken
in a pause (0 B/s) must not hold the rate near 0 for a whole window, as it did when it seeded the average.
"""

import math
from dataclasses import dataclass

from streaming.core.classify import classify
from streaming.core.progress import eta_seconds
from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.replica_row import KEY, key_of
from streaming.vocabulary.snapshot import BOOL, FLOAT64, INT32, INT64, STRING
from streaming.vocabulary.states import ReplicaState

# One remembered row per unfinished move. The job checkpoints these rows as an Arrow IPC blob with this
# schema, so names and types are a stored format: changing one makes old checkpoints unreadable.
MEMORY_SCHEMA = (("topic", STRING), ("partition", INT32), ("broker", INT32), ("intra_broker", BOOL),
                 ("first_seen_ms", INT64), ("last_ts_ms", INT64), ("last_numerator", FLOAT64),
                 ("last_denominator", FLOAT64), ("copy_rate", FLOAT64), ("leader_rate", FLOAT64),
                 ("last_growth_ms", INT64), ("state", STRING), ("state_since_ms", INT64))
MEMORY_COLUMNS = [column for column, _ in MEMORY_SCHEMA]
# The names _step_row compares with, read once: an enum member's `.name` is a property lookup, twice per row.
_IN_SYNC, _COMPLETED = ReplicaState.IN_SYNC.name, ReplicaState.COMPLETED.name


@dataclass(frozen=True)
class Settings:
    stall_after_s: float = STALL_AFTER_S
    rate_window_s: float = RATE_WINDOW_S


def empty_memory():
    return []


def _or(value, default):
    """`value`, or `default` where it is null (0 is a value: the first poll of a test clock is at 0 ms)."""
    return default if value is None else value


def _as_float(value):
    return None if value is None else float(value)


def _as_int(value):
    return None if value is None else int(value)


def _smoothed(previous_rate, sample, dt_s, seen_s, window_s):
    """The rate blended with a new sample covering the last `dt_s` of the `seen_s` since the move was first
    seen, by weight 1 - exp(-dt/window) or, while that is smaller, dt/seen (the mean since first seen: module
    docstring); a missing side yields the other."""
    if previous_rate is None:
        return sample
    if sample is None:
        return previous_rate
    weight = max(1.0 - math.exp(-dt_s / window_s), dt_s / seen_s if seen_s else 1.0)
    return previous_rate + weight * (sample - previous_rate)


def _per_second(now, before, dt_s):
    """The growth from `before` to `now` per second; null when either is unknown or no time passed."""
    if now is None or before is None or dt_s is None:
        return None
    return (now - before) / dt_s


def _elapsed_s(last_ts_ms, now_ms):
    """Seconds since the remembered poll; null when first seen or when no time passed (no rate sample)."""
    if last_ts_ms is None or now_ms <= last_ts_ms:
        return None
    return (now_ms - last_ts_ms) / 1000.0


def _step_row(before, row, now_ms, settings):
    """(row to remember or None when the move finished, row to report) for one current row and its
    remembered row (None when first seen)."""
    seen_before = before is not None
    before = before or {}
    dt_s = _elapsed_s(before.get("last_ts_ms"), now_ms)
    numerator, denominator = row["numerator"], row["denominator"]
    last_numerator, last_denominator = before.get("last_numerator"), before.get("last_denominator")

    first_seen_ms = _or(before.get("first_seen_ms"), now_ms)
    seen_s = (now_ms - first_seen_ms) / 1000.0
    copy_rate = _smoothed(before.get("copy_rate"), _per_second(numerator, last_numerator, dt_s), dt_s, seen_s,
                          settings.rate_window_s)
    leader_rate = _smoothed(before.get("leader_rate"), _per_second(denominator, last_denominator, dt_s), dt_s,
                            seen_s, settings.rate_window_s)
    grew = not seen_before or (numerator is not None and last_numerator is not None and numerator > last_numerator)
    last_growth_ms = now_ms if grew else _or(before.get("last_growth_ms"), now_ms)

    report = dict(row)
    finished = bool(row["finished"])
    if finished:
        # A finished move is reported with the last bytes seen while it moved; a completed one is whole.
        report["numerator"], report["denominator"] = _as_int(last_numerator), _as_int(last_denominator)
    moving = not (row["in_isr"] or finished)
    remaining = None if numerator is None or denominator is None else max(float(denominator - numerator), 0.0)
    report.update(
        copy_rate=copy_rate, leader_rate=leader_rate,
        stalled_seconds=(now_ms - last_growth_ms) / 1000.0 if moving else 0.0,
        observed_seconds=(now_ms - first_seen_ms) / 1000.0,
        eta_seconds=eta_seconds(remaining, copy_rate, leader_rate) if moving else 0.0,
        was_in_sync=before.get("state") == _IN_SYNC,
    )
    report["state"] = classify(report, settings.stall_after_s, settings.rate_window_s)
    if finished:
        # A finished move is whole only when it completed; otherwise it reports how far it got.
        last_progress = (None if last_numerator is None or last_denominator is None
                         else min(last_numerator / max(last_denominator, 1.0), 1.0))
        report["progress"] = 1.0 if report["state"] == _COMPLETED else last_progress
    report["previous_state"] = before.get("state")
    report["transition"] = report["previous_state"] != report["state"]
    report["state_since_ms"] = now_ms if report["transition"] else _or(before.get("state_since_ms"), now_ms)
    if finished:
        return None, report

    memory = {
        **{column: row[column] for column in KEY},
        "first_seen_ms": int(first_seen_ms), "last_ts_ms": int(now_ms),
        # An unknown numerator keeps the last known one, so one missed poll does not reset the rate.
        "last_numerator": _as_float(_or(numerator, last_numerator)),
        "last_denominator": _as_float(_or(denominator, last_denominator)),
        "copy_rate": copy_rate, "leader_rate": leader_rate, "last_growth_ms": int(last_growth_ms),
        "state": report["state"], "state_since_ms": int(report["state_since_ms"]),
    }
    return memory, report


def step(previous, current, now_ms, settings=Settings()):
    """(memory to keep, report rows in `current` order). Finished rows are reported once and forgotten."""
    remembered = {key_of(row): row for row in previous}
    memory, report = [], []
    for row in current:
        kept, reported = _step_row(remembered.get(key_of(row)), row, now_ms, settings)
        if kept is not None:
            memory.append(kept)
        report.append(reported)
    return memory, report
