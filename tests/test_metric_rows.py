"""Which rows get their own series on /metrics (sinks.metric_rows) and what samples() makes of the rest."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sinks import metric_names as m
from sinks import metric_rows
from sinks.metric_rows import UNHEALTHY_STATES
from sinks.prometheus import DETAIL_KEYS, Picture, samples
from streaming.vocabulary.columns import from_rows
from streaming.vocabulary.reasons import REASON_CODES
from streaming.vocabulary.states import MOVING_STATE_NAMES, STATE_NAMES

REPLICA_KEYS = DETAIL_KEYS["replica"]
PARTITION_KEYS = DETAIL_KEYS["partition"]


def replica(partition, state="COPYING", copied=0, target=1000, reason=None, topic="t", broker=2):
    return {"topic": topic, "partition": partition, "broker": broker, "state": state, "numerator": copied,
            "denominator": target, "reason_code": reason, "progress": 0.5, "in_isr": False, "copy_rate": 1.0,
            "eta_seconds": 60.0, "stalled_seconds": 0.0}


def rollup(partition, state="COPYING", done=0.0, total=1000.0, topic="t"):
    return {"topic": topic, "partition": partition, "state": state, "bytes_done": done, "bytes_total": total}


def shown_rows(rows, keys, budget):
    """metric_rows.shown_rows of row dicts: (the rows shown, first first; the rows left out per state)."""
    shown, omitted = metric_rows.shown_rows(from_rows(rows), keys, budget)
    return [rows[i] for i in shown.tolist()], omitted


def unhealthy(row):
    return bool(metric_rows.unhealthy(from_rows([row]))[0])


def remaining_bytes(row):
    return float(metric_rows.remaining_bytes(from_rows([row]))[0])


# id, keys, rows, the partitions of the rows in the order shown. Every row of a case has its own partition.
ORDER_CASES = [
    ("unhealthy-before-more-bytes", REPLICA_KEYS,
     [replica(0, "COPYING", target=10**12), replica(1, "FALLING_BEHIND", target=10)], [1, 0]),
    ("severity-order-of-the-unhealthy", REPLICA_KEYS,
     [replica(0, "FALLING_BEHIND"), replica(1, "BROKER_OFFLINE"), replica(2, "STALLED")], [1, 2, 0]),
    ("a-reason-makes-a-copying-move-unhealthy", REPLICA_KEYS,
     [replica(0, "PENDING", target=10**12), replica(1, "COPYING", reason="COPY_BELOW_GROWTH")], [1, 0]),
    ("worse-state-before-a-reason", REPLICA_KEYS,
     [replica(0, "COPYING", reason="COPY_BELOW_GROWTH"), replica(1, "STALLED")], [1, 0]),
    ("same-state-the-one-with-a-reason-first", REPLICA_KEYS,
     [replica(0, "STALLED", target=10**12), replica(1, "STALLED", target=10, reason="LEADER_NOT_SENDING")], [1, 0]),
    ("healthy-by-severity-then-bytes", REPLICA_KEYS,
     [replica(0, "IN_SYNC", copied=0, target=10**12), replica(1, "COPYING", copied=0, target=10),
      replica(2, "PENDING", target=5), replica(3, "COPYING", copied=0, target=500)], [2, 3, 1, 0]),
    ("most-bytes-remaining-not-largest-target", REPLICA_KEYS,
     [replica(0, copied=990, target=1000), replica(1, copied=0, target=500)], [1, 0]),
    ("unknown-target-counts-as-nothing-left", REPLICA_KEYS,
     [replica(0, target=None), replica(1, copied=999, target=1000)], [1, 0]),
    ("unknown-copied-bytes-count-as-nothing-left", REPLICA_KEYS,
     [replica(0, copied=None, target=10**9), replica(1, copied=999, target=1000)], [1, 0]),
    ("ties-by-partition-as-a-number", REPLICA_KEYS, [replica(10), replica(9), replica(2)], [2, 9, 10]),
    ("finished-rows-last", REPLICA_KEYS,
     [replica(0, "COMPLETED", copied=0, target=10**9), replica(1, "IN_SYNC", copied=1000)], [1, 0]),
    ("rollups-by-bytes-left", PARTITION_KEYS,
     [rollup(0, done=900.0), rollup(1, done=100.0), rollup(2, "STALLED", done=999.0)], [2, 1, 0]),
]


@pytest.mark.parametrize("keys, rows, expected", [pytest.param(k, r, e, id=i) for i, k, r, e in ORDER_CASES])
def test_rows_are_shown_unhealthy_first_then_by_state_reason_and_bytes_left(keys, rows, expected):
    shown, omitted = shown_rows(rows, keys, len(rows))
    assert [row["partition"] for row in shown] == expected
    assert sum(omitted.values()) == 0


def test_ties_on_every_column_but_the_labels_are_broken_by_topic_then_partition_then_broker():
    rows = [replica(1, topic="b", broker=1), replica(0, topic="b", broker=3), replica(0, topic="b", broker=2),
            replica(5, topic="a", broker=9)]
    assert [(r["topic"], r["partition"], r["broker"]) for r in shown_rows(rows, REPLICA_KEYS, len(rows))[0]] == [
        ("a", 5, 9), ("b", 0, 2), ("b", 0, 3), ("b", 1, 1)]


# id, rows, budget, partitions shown, omitted per state
BUDGET_CASES = [
    ("within-budget", [replica(0), replica(1)], 2, [0, 1], {}),
    ("healthy-with-fewest-bytes-left-out", [replica(0, target=10), replica(1, target=30), replica(2, target=20)], 2,
     [1, 2], {"COPYING": 1}),
    ("unhealthy-kept-over-bigger-healthy", [replica(0, target=10**12), replica(1, "STALLED", target=1)], 1, [1],
     {"COPYING": 1}),
    ("more-unhealthy-than-the-budget", [replica(0, "STALLED"), replica(1, "BROKER_OFFLINE"), replica(2, "STALLED"),
                                        replica(3)], 2, [1, 0], {"STALLED": 1, "COPYING": 1}),
    ("zero-budget", [replica(0, "STALLED"), replica(1)], 0, [], {"STALLED": 1, "COPYING": 1}),
]


@pytest.mark.parametrize("rows, budget, expected, omitted", [pytest.param(r, b, e, o, id=i)
                                                              for i, r, b, e, o in BUDGET_CASES])
def test_past_the_budget_the_rest_are_counted_per_state(rows, budget, expected, omitted):
    shown, left_out = shown_rows(rows, REPLICA_KEYS, budget)
    assert [row["partition"] for row in shown] == expected
    assert +left_out == omitted


@pytest.mark.parametrize("row, expected", [
    (replica(0, "STALLED"), True), (replica(0, "BROKER_OFFLINE"), True), (replica(0, "FALLING_BEHIND"), True),
    (replica(0, "PENDING"), False), (replica(0, "PENDING", reason="WAITING_FOR_BUDGET"), True),
    (rollup(0, "COPYING"), False), (rollup(0, "STALLED"), True),
], ids=["stalled", "offline", "falling-behind", "pending", "pending-with-reason", "rollup-copying", "rollup-stalled"])
def test_unhealthy(row, expected):
    assert unhealthy(row) is expected


@pytest.mark.parametrize("row, expected", [
    (replica(0, copied=200, target=1000), 800), (replica(0, copied=1200, target=1000), 0),
    (replica(0, target=None), None), (rollup(0, done=250.0, total=1000.0), 750.0), (rollup(0, total=float("nan")), None),
], ids=["replica", "leader-shrank", "unknown-target", "rollup", "rollup-nan"])
def test_remaining_bytes(row, expected):
    """None: unknown (NaN), never 0 bytes left."""
    left = remaining_bytes(row)
    assert left == expected if expected is not None else left != left


ROWS = st.lists(
    st.builds(lambda partition, state, copied, target, reason: replica(partition, state, copied, target, reason),
              st.integers(0, 10**6), st.sampled_from(STATE_NAMES), st.one_of(st.none(), st.integers(0, 10**4)),
              st.one_of(st.none(), st.integers(0, 10**4)), st.one_of(st.none(), st.sampled_from(REASON_CODES))),
    max_size=40, unique_by=lambda row: row["partition"])


@settings(max_examples=100, deadline=None)
@given(ROWS, st.integers(0, 45), st.randoms(use_true_random=False))
def test_the_budget_keeps_the_unhealthy_first_and_counts_the_rest(rows, budget, shuffler):
    shown, omitted = shown_rows(rows, REPLICA_KEYS, budget)
    assert len(shown) == min(budget, len(rows))
    assert sum(omitted.values()) == len(rows) - len(shown)
    assert Counter(r["state"] for r in shown) + +omitted == Counter(r["state"] for r in rows)
    flags = [unhealthy(row) for row in shown]
    assert flags == sorted(flags, reverse=True), "a healthy row shown before an unhealthy one"
    if sum(map(unhealthy, rows)) <= budget:
        assert all(row in shown for row in rows if unhealthy(row))
    else:
        assert all(flags)
    again = list(rows)
    shuffler.shuffle(again)
    assert shown_rows(again, REPLICA_KEYS, budget)[0] == shown, "the rows shown depend on the input's order"


def picture(rows):
    states = Counter(row["state"] for row in rows)
    return Picture(replicas=from_rows(rows), partition_states=dict(states),
                   summary={"bytes_remaining": 123, "rate_bytes_per_sec": 4.0, "eta_seconds": 5.0})


def test_samples_show_the_budget_s_rows_and_count_the_rest_in_the_omitted_gauge():
    rows = [replica(n, "STALLED" if n % 10 == 0 else "COPYING", target=1000 + n) for n in range(30)]
    got = samples(picture(rows), "replica", budget=7)
    shown = {labels[:3] for metric, _, labels, _ in got if metric is m.REPLICA_STATE}
    stalled = {("t", str(n), "2") for n in (0, 10, 20)}
    biggest = {("t", str(n), "2") for n in (29, 28, 27, 26)}
    assert shown == stalled | biggest
    omitted = {labels: value for metric, names, labels, value in got if metric is m.METRICS_ROWS_OMITTED}
    assert omitted == {("replica", name): float({"COPYING": 23}.get(name, 0)) for name in MOVING_STATE_NAMES}


def test_the_cluster_wide_gauges_count_every_row_whatever_the_budget():
    rows = [replica(n, target=1000 + n) for n in range(30)]
    cluster = {m.PARTITIONS, m.REMAINING_BYTES, m.COPY_RATE, m.ETA}

    def cluster_samples(budget):
        return [sample for sample in samples(picture(rows), "replica", budget=budget) if sample[0] in cluster]
    assert cluster_samples(0) == cluster_samples(30) and cluster_samples(0)


@pytest.mark.parametrize("detail", DETAIL_KEYS)
def test_the_omitted_gauge_is_there_at_every_level_even_with_nothing_left_out(detail):
    omitted = [(labels, value) for metric, names, labels, value in samples(Picture(), detail)
               if metric is m.METRICS_ROWS_OMITTED]
    assert omitted == [((detail, name), 0.0) for name in MOVING_STATE_NAMES]


def test_unhealthy_states_are_the_ones_the_replica_alerts_fire_on():
    assert UNHEALTHY_STATES == {"FALLING_BEHIND", "STALLED", "BROKER_OFFLINE"}
