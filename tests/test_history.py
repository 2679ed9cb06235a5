"""History rules on plain data: sequences of polls in, the last report row out (one case per row). A move's ETA
is the budget model's over the poll's moves (here one, on its destination's unthrottled budget: remaining bytes
over its own smoothed rate)."""

import math
import pytest
from hypothesis import given, settings, strategies as st

from streaming.core.budget_view import model
from streaming.core.history import Settings, empty_memory, step
from streaming.core.measure import REPLICA_KINDS, finished_replicas, replica_progress
from streaming.core.snapshot_columns import from_snapshot
from streaming.vocabulary.columns import concat
from streaming.vocabulary.snapshot import from_rows

SETTINGS = Settings(stall_after_s=30, rate_window_s=20)
# 10 KB/s for the first 20 s, then a 20 KB/s sample of 20 s (one window): weight 1 - e^-1 beats the mean's 1/2
PAST_WINDOW_RATE = 10_000 + (1 - math.exp(-1)) * 10_000


def snapshot(ts_ms, copied, leader=1_000_000, in_isr=False, moving=True, replicas=(1, 2), alive=(1, 2, 3)):
    rows = {
        "brokers": [{"broker": b, "alive": b in alive} for b in (1, 2, 3)],
        "log_dirs_answered": [{"broker": b} for b in alive],
        "partitions": [{"topic": "t", "partition": 0, "leader": 1, "replicas": list(replicas),
                        "isr": [1, 2] if in_isr else [1]}],
        "log_dirs": [{"broker": 1, "log_dir": "d", "topic": "t", "partition": 0, "size": leader, "offset_lag": 0,
                      "is_future": False},
                     {"broker": 2, "log_dir": "d", "topic": "t", "partition": 0, "size": copied, "offset_lag": 0,
                      "is_future": False}],
    }
    if moving:
        rows["reassignments"] = [{"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []}]
    return from_rows(ts_ms, "c", **rows)


def run(polls, settings=SETTINGS):
    """Feed (seconds, snapshot kwargs) polls through step; return the memory and every report (row dicts, each
    with the budget model's ETA)."""
    memory, reports = empty_memory(), []
    for seconds, kwargs in polls:
        ts_ms = int(seconds * 1000)
        snap = from_snapshot(snapshot(ts_ms, **kwargs))
        current = replica_progress(snap)
        if len(memory):
            current = concat([current, finished_replicas(memory, snap, current)], REPLICA_KINDS)
        memory, report = step(memory, current, ts_ms, settings)
        reports.append(report.with_columns(eta_seconds=model(report, (), (), ts_ms).eta_seconds()).rows())
    return memory.rows(), reports


CASES = [
    # id, polls, expected state, expected (rate, eta) or None for null
    ("first-poll-pending", [(0, dict(copied=0))], "PENDING", (None, None)),
    ("steady-copy", [(0, dict(copied=0)), (10, dict(copied=100_000))], "COPYING", (10_000, 90.0)),
    ("in-isr", [(0, dict(copied=0)), (10, dict(copied=1_000_000, in_isr=True))], "IN_SYNC", (100_000, 0.0)),
    # A throttled copy comes in bursts: a first sample taken in a pause does not hold the rate near 0; until a
    # window has passed the rate is the mean since first seen (600 KB in 6 s), then recent samples weigh more.
    ("first-sample-in-a-pause", [(0, dict(copied=0)), (2, dict(copied=0)), (4, dict(copied=400_000)),
                                 (6, dict(copied=600_000))], "COPYING", (100_000, 4.0)),
    ("past-a-window-recent-samples-weigh-more", [(0, dict(copied=0)), (20, dict(copied=200_000)),
                                                 (40, dict(copied=600_000))], "COPYING",
     (PAST_WINDOW_RATE, 400_000 / PAST_WINDOW_RATE)),
    ("no-growth-stalls", [(0, dict(copied=10)), (20, dict(copied=10)), (40, dict(copied=10))], "STALLED",
     (0.0, None)),
    ("growth-resets-stall", [(0, dict(copied=10)), (20, dict(copied=10)), (40, dict(copied=20))], "COPYING", None),
    ("leader-outgrows-copy", [(0, dict(copied=0, leader=1_000)), (10, dict(copied=100, leader=2_000)),
                              (20, dict(copied=200, leader=3_000)), (30, dict(copied=300, leader=4_000))],
     "FALLING_BEHIND", None),
    ("destination-offline", [(0, dict(copied=0)), (10, dict(copied=0, alive=(1, 3)))], "BROKER_OFFLINE", None),
    ("completed", [(0, dict(copied=0)), (10, dict(copied=1_000_000, moving=False))], "COMPLETED", None),
    ("cancelled", [(0, dict(copied=0)), (10, dict(copied=0, moving=False, replicas=(1,)))], "CANCELLED", None),
]


@pytest.mark.parametrize("polls, state, rate_eta", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_history_case(polls, state, rate_eta):
    _, reports = run(polls)
    last = reports[-1][0]
    assert last["state"] == state
    if rate_eta is not None:
        rate, eta = rate_eta
        assert (rate is None and last["copy_rate"] is None) or last["copy_rate"] == pytest.approx(rate)
        assert (eta is None and last["eta_seconds"] is None) or last["eta_seconds"] == pytest.approx(eta)


def test_transitions_are_reported_once_with_their_previous_state():
    _, reports = run([(0, dict(copied=0)), (10, dict(copied=5)), (20, dict(copied=9)),
                      (30, dict(copied=1_000_000, moving=False))])
    rows = [r[0] for r in reports]
    assert [(r["previous_state"], r["state"], r["transition"]) for r in rows] == [
        (None, "PENDING", True), ("PENDING", "COPYING", True), ("COPYING", "COPYING", False),
        ("COPYING", "COMPLETED", True)]
    assert rows[2]["state_since_ms"] == 10_000


def test_finished_moves_leave_the_memory():
    memory, _ = run([(0, dict(copied=0)), (10, dict(copied=1_000_000, moving=False))])
    assert memory == []


def test_completed_move_reports_last_bytes_seen():
    _, reports = run([(0, dict(copied=0)), (10, dict(copied=400_000)), (20, dict(copied=1_000_000, moving=False))])
    last = reports[-1][0]
    assert (last["numerator"], last["denominator"], last["progress"]) == (400_000, 1_000_000, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 30), st.integers(0, 2_000_000), st.integers(1, 2_000_000)),
                min_size=1, max_size=8))
def test_rates_and_eta_are_finite_or_null_and_eta_never_negative(samples):
    t, polls = 0, []
    for gap, copied, leader in samples:
        t += gap
        polls.append((t, dict(copied=copied, leader=leader)))
    _, reports = run(polls)
    for report in reports:
        row = report[0]
        assert row["eta_seconds"] is None or row["eta_seconds"] >= 0
        assert row["stalled_seconds"] >= 0
        assert row["progress"] is None or 0 <= row["progress"] <= 1
