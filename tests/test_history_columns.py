"""The history step in columns (streaming.spark.history_columns.step_columns) against the one step it is derived
from (streaming.core.history.step), and each rule's column form against its predicate (streaming.core.classify):
on generated rows, the same states, and the same report and memory on every field, every float's bits alike,
as the driver and the next batch read them (through Arrow)."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streaming.core.classify import RULES, classify, classify_in_columns
from streaming.core.history import MEMORY_SCHEMA, Settings, step
from streaming.spark import codec
from streaming.spark.history_columns import step_columns
from streaming.vocabulary.replica_row import FIELDS
from streaming.vocabulary.states import STATE_NAMES
from tests.test_rollup import same

_maybe = lambda values: st.none() | values  # noqa: E731
_bytes = st.integers(min_value=0, max_value=10**12)  # Kafka's logs: far below 2**53
_ms = st.integers(min_value=0, max_value=10**7)
_float = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)
_key = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.integers(1, 3), st.booleans())
_flag = _maybe(st.booleans())

CURRENT = st.fixed_dictionaries({
    "numerator": _maybe(_bytes), "denominator": _maybe(_bytes), "progress": _maybe(st.floats(0.0, 1.0)),
    "in_isr": st.booleans(), "leader": st.integers(-1, 3), "offset_lag": _maybe(_bytes),
    "messages_behind_estimate": _maybe(st.floats(0.0, 1e12)), "destination_alive": _flag, "leader_alive": _flag,
    "finished": _flag, "in_replica_set": _flag, "still_reassigning": _flag, "being_removed": _flag})
MEMORY = st.fixed_dictionaries({
    "first_seen_ms": _ms, "last_ts_ms": _ms, "last_numerator": _maybe(_float), "last_denominator": _maybe(_float),
    "copy_rate": _maybe(_float), "leader_rate": _maybe(_float), "last_growth_ms": _ms,
    "state": st.sampled_from(STATE_NAMES), "state_since_ms": _ms})
SETTINGS = st.builds(Settings, stall_after_s=st.sampled_from([0.0, 30.0, 600.0]),
                     rate_window_s=st.sampled_from([1.0, 20.0, 60.0]))


def keyed(facts):
    """Lists of rows, each with its own key (topic, partition, broker, intra_broker) and `facts`."""
    pairs = st.lists(st.tuples(_key, facts), unique_by=lambda pair: pair[0], max_size=12)
    return pairs.map(lambda rows: [{"topic": t, "partition": p, "broker": b, "intra_broker": i, **f}
                                   for (t, p, b, i), f in rows])


# A remembered move seen again 10 s on, its rate blended past a window (exp weighs), and one first seen now.
SEEN_AGAIN = ([{"topic": "a", "partition": 0, "broker": 1, "intra_broker": False, "first_seen_ms": 0,
                "last_ts_ms": 30_000, "last_numerator": 300.0, "last_denominator": 1000.0, "copy_rate": 10.0,
                "leader_rate": 0.0, "last_growth_ms": 30_000, "state": "COPYING", "state_since_ms": 0}],
              [{"topic": "a", "partition": 0, "broker": 1, "intra_broker": False, "numerator": 700, "denominator": 1100,
                "progress": 0.63, "in_isr": False, "leader": 2, "offset_lag": None, "messages_behind_estimate": None,
                "destination_alive": True, "leader_alive": True, "finished": False, "in_replica_set": True,
                "still_reassigning": True, "being_removed": False},
               {"topic": "b", "partition": 1, "broker": 3, "intra_broker": False, "numerator": 0, "denominator": 5,
                "progress": 0.0, "in_isr": False, "leader": 1, "offset_lag": 4, "messages_behind_estimate": 2.5,
                "destination_alive": True, "leader_alive": True, "finished": False, "in_replica_set": True,
                "still_reassigning": True, "being_removed": False}])


def as_read(columns, schema):
    """Rows of columns, as a blob of them reads back."""
    return codec.decode(codec.encode_columns(columns, schema))


@settings(max_examples=400, deadline=None)
@given(keyed(MEMORY), keyed(CURRENT), st.integers(0, 4 * 10**7), SETTINGS)
@example([], [], 0, Settings())
@example(*SEEN_AGAIN, 40_000, Settings(stall_after_s=30.0, rate_window_s=20.0))
def test_the_column_step_is_the_history_step(previous, current, now_ms, step_settings):
    memory, report = step(previous, current, now_ms, step_settings)
    memory_columns, report_columns = step_columns(previous, current, now_ms, step_settings)
    report_schema = codec.fields_schema(FIELDS)
    assert same(as_read(report_columns, report_schema), pa.Table.from_pylist(report, schema=report_schema).to_pylist())
    assert same(as_read(memory_columns, codec.arrow_schema(MEMORY_SCHEMA)), codec.decode(codec.encode(memory, MEMORY_SCHEMA)))


# The facts classify reads, with the default of a null flag (classify._flag).
FLAGS = {"finished": False, "in_replica_set": False, "still_reassigning": False, "being_removed": False,
         "in_isr": False, "was_in_sync": False, "destination_alive": True, "leader_alive": True}
NUMBERS = {"stalled_seconds": _float, "copy_rate": _float, "leader_rate": _float, "observed_seconds": _float,
           "numerator": _bytes | st.integers(-5, 0)}
FACTS = st.fixed_dictionaries({**{name: _flag for name in FLAGS},
                               **{name: _maybe(values) for name, values in NUMBERS.items()}})


def in_columns(rows):
    """The facts of row dicts as the column forms read them."""
    flags = {name: np.array([default if row[name] is None else row[name] for row in rows], dtype=bool)
             for name, default in FLAGS.items()}
    numbers = {name: (np.array([0 if row[name] is None else row[name] for row in rows], dtype=float),
                      np.array([row[name] is not None for row in rows], dtype=bool)) for name in NUMBERS}
    return {**flags, **numbers}


@pytest.mark.parametrize("stall_after_s, rate_window_s", [(0.0, 1.0), (600.0, 60.0)], ids=["zero", "defaults"])
@settings(max_examples=300, deadline=None)
@given(rows=st.lists(FACTS, max_size=30))
def test_each_rule_in_columns_is_its_predicate_and_classify_too(rows, stall_after_s, rate_window_s):
    facts = in_columns(rows)
    for holds, holds_in_columns, state in RULES:
        assert holds_in_columns(facts, stall_after_s, rate_window_s).tolist() == [
            holds(row, stall_after_s, rate_window_s) for row in rows], state.name
    assert classify_in_columns(facts, stall_after_s, rate_window_s) == [
        classify(row, stall_after_s, rate_window_s) for row in rows]
