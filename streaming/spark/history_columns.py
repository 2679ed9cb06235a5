"""streaming.core.history.step in columns, for a state bucket's rows (the stateful step on executors).

Why: row by row, the history step and classify were the largest part of the buckets' CPU per batch at 100,000
moving replicas (bench/RESULTS.md "Where a batch's time goes at 100,000 moving replicas"). It is the same step, not
a second one: each part below is the column form of one named definition, and says which -
- history._elapsed_s, _per_second, _smoothed (the rate rule), the growth and stall rules of _step_row;
- progress.eta_seconds (the one ETA rule) -> `_eta_seconds`;
- classify itself, as `classify_in_columns`: RULES in their order, each by the column form written beside
  its predicate in streaming.core.classify.
Every float is computed with the operations the row form uses, in the same order (numpy adds, multiplies
and divides as Python does, and compares ints with floats the same way below 2**53 bytes); only exp is taken
from Python's math, per row, as _smoothed takes it: numpy's exp may differ in the last bit. tests/test_history_columns.py
proves the two agree on every field of the report and of the memory, on generated rows.

A column is (values, known): a numpy array and a mask, a null's value unspecified.
"""

import math

import numpy as np
import pyarrow as pa

from streaming.core.classify import classify_in_columns
from streaming.core.history import MEMORY_SCHEMA, Settings
from streaming.spark import codec
from streaming.vocabulary.replica_row import FIELDS, KEY, key_of
from streaming.vocabulary.states import ReplicaState

_IN_SYNC, _COMPLETED = ReplicaState.IN_SYNC.name, ReplicaState.COMPLETED.name
# The current row's columns passed to the report as they are.
_PASSED = ("topic", "partition", "broker", "intra_broker", "in_isr", "leader", "offset_lag", "messages_behind_estimate")
_MEMORY_TYPES = {name: codec.ARROW_TYPES[kind] for name, kind in MEMORY_SCHEMA}
_REPORT_SCHEMA = codec.fields_schema(FIELDS)


def _column(values, dtype):
    """(values, known) of a list of Python values, null as None (a list without one converts in one call)."""
    if None not in values:
        return np.array(values, dtype=dtype).reshape(len(values)), np.ones(len(values), dtype=bool)
    known = np.fromiter((value is not None for value in values), dtype=bool, count=len(values))
    filled = np.fromiter((0 if value is None else value for value in values), dtype=dtype, count=len(values))
    return filled, known


def _flag(rows, name, default):
    """classify._flag per row: a yes/no fact, missing or null read as `default`."""
    values, known = _column([row.get(name) for row in rows], bool)
    return np.where(known, values, default)


def _remembered(previous, current):
    """The remembered row's index of each current row, -1 when first seen (history.step's lookup by key)."""
    index = {key_of(row): i for i, row in enumerate(previous)}
    return np.fromiter((index.get(key_of(row), -1) for row in current), dtype=np.int64, count=len(current))


def _recalled(previous, at, name, dtype):
    """A memory column for each current row: (values, known), unknown where first seen or null."""
    if not previous:
        return np.zeros(len(at), dtype=dtype), np.zeros(len(at), dtype=bool)
    values, known = _column([row[name] for row in previous], dtype)
    seen = at >= 0
    where = np.where(seen, at, 0)
    return values[where], known[where] & seen


def _elapsed_s(last_ts_ms, now_ms):
    """history._elapsed_s: seconds since the remembered poll; unknown when first seen or no time passed."""
    last, known = last_ts_ms
    return (now_ms - last) / 1000.0, known & (now_ms > last)


def _per_second(now, before, dt_s):
    """history._per_second: growth from `before` to `now` per second; unknown when any side is."""
    dt, dt_known = dt_s
    known = now[1] & before[1] & dt_known
    return np.divide(now[0] - before[0], dt, out=np.zeros(len(dt)), where=known), known


def _smoothed(previous_rate, sample, dt_s, seen_s, window_s):
    """history._smoothed: the rate blended with a new sample by weight max(1 - exp(-dt/window), dt/seen
    or 1.0 when seen is 0); a missing side yields the other. exp is math.exp, per blended row."""
    (rate, rate_known), (value, value_known), (dt, _) = previous_rate, sample, dt_s
    blend = rate_known & value_known
    decay = np.ones(len(dt))
    decay[blend] = [1.0 - math.exp(-x / window_s) for x in dt[blend].tolist()]
    share = np.divide(dt, seen_s, out=np.ones(len(dt)), where=blend & (seen_s != 0))
    weight = np.maximum(decay, share)
    blended = np.where(blend, rate + weight * (value - rate), np.where(rate_known, rate, value))
    return blended, rate_known | value_known


def _eta_seconds(remaining, copy_rate, leader_rate):
    """progress.eta_seconds: 0 when nothing remains; unknown when remaining or the copy rate is; remaining
    over the copy rate net of the leader's growth (unknown growth: none) when that is positive."""
    (left, left_known), (copy, copy_known), (leader, leader_known) = remaining, copy_rate, leader_rate
    done = left_known & (left <= 0)
    net = copy - np.where(leader_known, leader, 0.0)
    flowing = left_known & copy_known & (net > 0) & ~done
    eta = np.divide(left, net, out=np.zeros(len(left)), where=flowing)
    return np.where(done, 0.0, eta), done | flowing


def _arrow(column, arrow_type):
    values, known = column
    return pa.array(values, type=arrow_type, mask=~known)


def _given(values):
    return values, np.ones(len(values), dtype=bool)


def step_columns(previous, current, now_ms, settings=Settings()):
    """history.step in columns: (memory to keep, report) as {column: Arrow array} in MEMORY_SCHEMA's and the
    replica row's (FIELDS) columns, rows in `current` order; the memory leaves out the finished moves."""
    n = len(current)
    at = _remembered(previous, current)
    seen_before = at >= 0
    last_ts = _recalled(previous, at, "last_ts_ms", np.int64)
    last_numerator = _recalled(previous, at, "last_numerator", np.float64)
    last_denominator = _recalled(previous, at, "last_denominator", np.float64)
    first_seen = _recalled(previous, at, "first_seen_ms", np.int64)
    last_growth = _recalled(previous, at, "last_growth_ms", np.int64)
    since = _recalled(previous, at, "state_since_ms", np.int64)
    previous_states = [previous[i]["state"] if i >= 0 else None for i in at.tolist()]

    numerator = _column([row["numerator"] for row in current], np.int64)
    denominator = _column([row["denominator"] for row in current], np.int64)
    finished = _flag(current, "finished", False)
    in_isr = _flag(current, "in_isr", False)

    dt = _elapsed_s(last_ts, now_ms)
    first_seen_ms = np.where(first_seen[1], first_seen[0], now_ms)
    seen_s = (now_ms - first_seen_ms) / 1000.0
    numerator_f = (numerator[0].astype(np.float64), numerator[1])
    denominator_f = (denominator[0].astype(np.float64), denominator[1])
    copy_rate = _smoothed(_recalled(previous, at, "copy_rate", np.float64), _per_second(numerator_f, last_numerator, dt),
                          dt, seen_s, settings.rate_window_s)
    leader_rate = _smoothed(_recalled(previous, at, "leader_rate", np.float64),
                            _per_second(denominator_f, last_denominator, dt), dt, seen_s, settings.rate_window_s)
    grew = ~seen_before | (numerator[1] & last_numerator[1] & (numerator_f[0] > last_numerator[0]))
    last_growth_ms = np.where(grew, now_ms, np.where(last_growth[1], last_growth[0], now_ms))

    moving = ~(in_isr | finished)
    both = numerator[1] & denominator[1]
    remaining = np.maximum((denominator[0] - numerator[0]).astype(np.float64), 0.0), both
    eta = _eta_seconds(remaining, copy_rate, leader_rate)
    # A finished move is reported with the last bytes seen while it moved (history._step_row).
    reported_numerator = (np.where(finished, last_numerator[0].astype(np.int64), numerator[0]),
                          np.where(finished, last_numerator[1], numerator[1]))
    reported_denominator = (np.where(finished, last_denominator[0].astype(np.int64), denominator[0]),
                            np.where(finished, last_denominator[1], denominator[1]))
    facts = {
        "finished": finished, "in_isr": in_isr, "was_in_sync": np.array([s == _IN_SYNC for s in previous_states], dtype=bool),
        **{name: _flag(current, name, default) for name, default in (
            ("in_replica_set", False), ("still_reassigning", False), ("being_removed", False),
            ("destination_alive", True), ("leader_alive", True))},
        "stalled_seconds": _given(np.where(moving, (now_ms - last_growth_ms) / 1000.0, 0.0)),
        "observed_seconds": _given((now_ms - first_seen_ms) / 1000.0),
        "copy_rate": copy_rate, "leader_rate": leader_rate, "numerator": reported_numerator,
    }
    states = classify_in_columns(facts, settings.stall_after_s, settings.rate_window_s)

    last_known = last_numerator[1] & last_denominator[1]
    last_progress = np.minimum(np.divide(last_numerator[0], np.maximum(last_denominator[0], 1.0),
                                         out=np.zeros(n), where=last_known), 1.0)
    progress = _column([row["progress"] for row in current], np.float64)
    completed = np.array([state == _COMPLETED for state in states], dtype=bool)
    progress = (np.where(finished, np.where(completed, 1.0, last_progress), progress[0]),
                np.where(finished, completed | last_known, progress[1]))
    transition = np.array([before != state for before, state in zip(previous_states, states)], dtype=bool)
    state_since_ms = np.where(transition, now_ms, np.where(since[1], since[0], now_ms))

    report = {name: pa.array([row[name] for row in current], type=_REPORT_SCHEMA.field(name).type) for name in _PASSED}
    report.update(
        numerator=_arrow(reported_numerator, pa.int64()), denominator=_arrow(reported_denominator, pa.int64()),
        progress=_arrow(progress, pa.float64()), copy_rate=_arrow(copy_rate, pa.float64()),
        leader_rate=_arrow(leader_rate, pa.float64()),
        eta_seconds=_arrow((np.where(moving, eta[0], 0.0), ~moving | eta[1]), pa.float64()),
        stalled_seconds=pa.array(facts["stalled_seconds"][0]), state=pa.array(states, type=pa.string()),
        previous_state=pa.array(previous_states, type=pa.string()), transition=pa.array(transition),
        state_since_ms=pa.array(state_since_ms, type=pa.int64()))
    report = {name: report[name] for name in FIELDS}

    kept = ~finished
    memory = {name: report[name].filter(kept) for name in KEY}
    memory.update(
        first_seen_ms=pa.array(first_seen_ms[kept], type=pa.int64()),
        last_ts_ms=pa.array(np.full(int(kept.sum()), now_ms, dtype=np.int64)),
        # An unknown numerator keeps the last known one, so one missed poll does not reset the rate.
        last_numerator=_arrow(_kept_or_last(numerator_f, last_numerator, kept), pa.float64()),
        last_denominator=_arrow(_kept_or_last(denominator_f, last_denominator, kept), pa.float64()),
        copy_rate=_arrow((copy_rate[0][kept], copy_rate[1][kept]), pa.float64()),
        leader_rate=_arrow((leader_rate[0][kept], leader_rate[1][kept]), pa.float64()),
        last_growth_ms=pa.array(last_growth_ms[kept], type=pa.int64()),
        state=report["state"].filter(kept), state_since_ms=pa.array(state_since_ms[kept], type=pa.int64()))
    return {name: memory[name].cast(_MEMORY_TYPES[name]) for name, _ in MEMORY_SCHEMA}, report


def _kept_or_last(now, last, kept):
    """The current value where known, else the remembered one, of the kept rows."""
    values = np.where(now[1], now[0], last[0])
    return values[kept], (now[1] | last[1])[kept]
