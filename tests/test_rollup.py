"""The job's partition rollup in columns (streaming.spark.rollup) against the one rollup it is derived from
(streaming.core.progress.partition_rollup): the same rows, value for value, on generated replica rows; and a
batch's records and picture byte for byte the same whichever of the two made its partitions."""

import json

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streaming.core.progress import partition_rollup
from streaming.spark.job import batch_rows, replica_table
from streaming.spark.outputs import assemble, poll_facts
from streaming.spark.rollup import partition_rollups
from streaming.spark.source import CLUSTER_BUCKET, POLL_TABLE
from streaming.spark import codec
from streaming.spark.stateful import replica_frame
from streaming.vocabulary.states import STATE_NAMES
from tests.test_stream_units import as_report, cluster_snapshot, source_frame, track_all

_maybe = lambda values: st.none() | values  # noqa: E731
_count = st.integers(min_value=0, max_value=10**12)
# Rates as the history step makes them: any sign (a leader that deleted segments shrinks), zeros of both signs.
_rate = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)
REPLICA_ROWS = st.lists(st.fixed_dictionaries({
    "topic": st.sampled_from(["a", "b", "\u00e9t\u00e9", "z-1", "Z"]), "partition": st.integers(0, 3),
    "broker": st.integers(1, 4), "intra_broker": st.booleans(), "numerator": _maybe(_count),
    "denominator": _maybe(_count.map(lambda n: max(n, 1))), "progress": _maybe(st.floats(0.0, 1.0)),
    "in_isr": st.booleans(), "leader": st.integers(-1, 4), "offset_lag": _maybe(_count),
    "messages_behind_estimate": _maybe(st.floats(0.0, 1e12)), "copy_rate": _maybe(_rate),
    "leader_rate": _maybe(_rate), "eta_seconds": _maybe(st.floats(0.0, 1e9)),
    "stalled_seconds": _maybe(st.floats(0.0, 1e6)), "state": _maybe(st.sampled_from(STATE_NAMES)),
    "previous_state": _maybe(st.sampled_from(STATE_NAMES)), "state_since_ms": _count, "transition": st.booleans()}),
    max_size=40)

# Ten replicas of one partition whose copy rates numpy's sum (np.add.reduce or reduceat) adds up to another
# float than Python's left-to-right sum does; leader rates 0.0 then -0.0, which max must not swap.
TEN_RATES = [1000000.0, 500000.1, 333333.5, 250000.3, 200000.4, 166667.2, 142857.7, 125000.7, 111111.9, 100000.9]
TEN_OF_ONE = [{"topic": "a", "partition": 0, "broker": b, "intra_broker": False, "numerator": 1, "denominator": 3,
               "progress": None, "in_isr": False, "leader": 1, "offset_lag": None, "messages_behind_estimate": None,
               "copy_rate": TEN_RATES[b], "leader_rate": -0.0 if b else 0.0, "eta_seconds": None,
               "stalled_seconds": 0.0, "state": "COPYING", "previous_state": None, "state_since_ms": 0,
               "transition": True} for b in range(10)]


def as_batch_table(rows):
    """The replica rows as the driver gets them: through the output frame and Arrow, as Spark hands them over."""
    return replica_table(pa.Table.from_pandas(replica_frame(as_report(rows), 1, 0), preserve_index=False))


def same(a, b):
    """Equal rows, and every float the same bits (-0.0 is not 0.0 in a record: repr differs)."""
    return a == b and [[repr(v) for v in row.values()] for row in a] == [[repr(v) for v in row.values()] for row in b]


@settings(max_examples=300, deadline=None)
@given(REPLICA_ROWS)
@example(TEN_OF_ONE)
@example([])
def test_the_column_rollup_is_partition_rollup(rows):
    table = as_batch_table(rows)
    assert same(partition_rollups(table), partition_rollup(table.to_pylist()))


def assembled_both_ways(snapshots, requests):
    """The last poll's BatchOutput as the job's handler makes it (the rollup in columns) and with the rollup
    made row by row in assemble (the path before it)."""
    frames = [source_frame(i, s) for i, s in enumerate(snapshots, start=1)]
    _, out = track_all(frames)
    batch = pa.Table.from_pandas(out.loc[out["poll_id"] == len(frames)], preserve_index=False)
    _, replicas = batch_rows(batch)
    cluster = frames[-1].loc[frames[-1]["bucket"] == CLUSTER_BUCKET]
    tables = codec.decode_tables(cluster["table"], cluster["payload"])
    facts = poll_facts(tables.pop(POLL_TABLE))
    return [assemble([dict(row) for row in replicas], dict(tables), facts, 7, requests, 0.0, partitions=partitions)
            for partitions in (partition_rollups(replica_table(batch)), None)]


BATCHES = [
    ("first-poll", [cluster_snapshot(0, 0)], {}),
    ("copying-with-a-request", [cluster_snapshot(0, 0), cluster_snapshot(10_000, 500)], {"r1": [("t0", 0), ("t3", 0)]}),
    ("completed", [cluster_snapshot(0, 0), cluster_snapshot(10_000, 500), cluster_snapshot(20_000, 1000, moving=False)],
     {"r1": [("t0", 0)]}),
]


@pytest.mark.parametrize("snapshots, requests", [pytest.param(s, r, id=i) for i, s, r in BATCHES])
def test_a_batch_s_records_and_picture_are_the_same_whichever_rollup_made_its_partitions(snapshots, requests):
    in_columns, row_by_row = assembled_both_ways(snapshots, requests)
    assert in_columns.records == row_by_row.records  # keys and encoded bytes
    assert any(json.loads(value)["kind"] == "partition" for _, value in in_columns.records)
    assert in_columns.picture == row_by_row.picture
    assert same(in_columns.partitions, row_by_row.partitions)
