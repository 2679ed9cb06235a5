"""A bucket's replica rows travel to the driver as one Arrow IPC blob (streaming.spark.stateful.replica_frame,
streaming.spark.job.replica_table). Before, they went as one frame row each, typed by the replica row's Spark
SQL types, through Spark's own rows and back to Arrow for the driver (the path rebuilt here). The driver must
read the same rows either way, value for value, every float's bits and the order of keys alike, so the
progress records and the Prometheus picture made from them cannot change."""

import pandas as pd
import pyarrow as pa
from hypothesis import example, given, settings

from streaming.spark.job import batch_rows, replica_table
from streaming.spark.stateful import REPLICA_FIELDS, replica_frame
from tests.test_rollup import REPLICA_ROWS, TEN_OF_ONE, same
from tests.test_stream_units import as_report

# The frame the stateful step gave Spark before: one row per replica, each column in the pandas dtype Spark's
# Arrow conversion takes for its Spark SQL type (a masked one where the column may be null).
_PANDAS = {"string": "object", "int": "int32", "long": "int64", "double": "float64", "boolean": "bool"}
_MASKED = {"int32": "Int32", "int64": "Int64", "bool": "boolean"}


def rows_before(report, poll_id, ts_ms):
    """The replica rows the driver read from the frame of one row per replica."""
    constants = {"poll_id": poll_id, "ts_ms": ts_ms}
    frame = pd.DataFrame({
        name: pd.Series([constants[name]] * len(report) if name in constants else [row[name] for row in report],
                        dtype=_MASKED.get(_PANDAS[kind], _PANDAS[kind]) if nullable else _PANDAS[kind])
        for name, (kind, nullable) in REPLICA_FIELDS.items()})
    return pa.Table.from_pandas(frame, preserve_index=False).to_pylist()


def rows_now(report, poll_id, ts_ms):
    """The replica rows the driver reads from a bucket's blob, as the batch handler reads them."""
    batch = pa.Table.from_pandas(replica_frame(as_report(report), poll_id, ts_ms), preserve_index=False)
    _, replicas = batch_rows(batch)
    return replicas


@settings(max_examples=300, deadline=None)
@given(REPLICA_ROWS)
@example(TEN_OF_ONE)
@example([])
def test_the_driver_reads_the_same_replica_rows_from_a_blob(report):
    now = rows_now(report, 7, 1_795_000_000_123)
    assert same(now, rows_before(report, 7, 1_795_000_000_123))
    assert [list(row) for row in now] == [list(REPLICA_FIELDS)] * len(report)


def test_a_batch_of_several_buckets_reads_their_rows_in_bucket_order():
    first, second = TEN_OF_ONE[:4], TEN_OF_ONE[4:]
    batch = pa.concat_tables([pa.Table.from_pandas(replica_frame(as_report(rows), 3, 9), preserve_index=False)
                              for rows in (first, second)])
    assert same(replica_table(batch).to_pylist(), rows_before(first + second, 3, 9))
