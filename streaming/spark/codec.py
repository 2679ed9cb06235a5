"""Snapshot tables to and from bytes (Arrow IPC streams), and their split into state buckets.

The streaming source ships each snapshot table slice as one binary cell, so Spark moves a few dozen
rows per poll whatever the cluster's size. Tables are lists of row dicts (streaming.vocabulary.snapshot);
this module is the one place their declared column types become Arrow types.
"""

import pandas as pd
import pyarrow as pa

from streaming.vocabulary.snapshot import BOOL, FLOAT64, INT32, INT64, INT_LIST, PARTITION_KEYED, SCHEMAS, STRING

ARROW_TYPES = {STRING: pa.string(), INT32: pa.int32(), INT64: pa.int64(), FLOAT64: pa.float64(), BOOL: pa.bool_(),
               INT_LIST: pa.list_(pa.int32())}
# The Spark SQL type names the replica row is declared with (streaming.vocabulary.replica_row.FIELDS).
SPARK_ARROW_TYPES = {"string": pa.string(), "int": pa.int32(), "long": pa.int64(), "double": pa.float64(),
                     "boolean": pa.bool_()}


def arrow_schema(columns):
    """The Arrow schema of ((column, type constant), ...)."""
    return pa.schema([(name, ARROW_TYPES[kind]) for name, kind in columns])


def _arrow_table(rows, columns):
    """Column by column: pyarrow's from_pylist converts row by row (3 times slower at 100k rows). A missing
    key is null in both."""
    return pa.Table.from_pydict({name: [row.get(name) for row in rows] for name, _ in columns},
                                schema=arrow_schema(columns))


def _ipc(table):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def encode(rows, columns):
    """Row dicts with the declared `columns` ((column, type constant), ...) as one Arrow IPC stream."""
    return _ipc(_arrow_table(rows, columns))


def decode(payload):
    """The row dicts of an Arrow IPC stream (any writer's: a blob written from a pandas frame decodes the same)."""
    return pa.ipc.open_stream(payload).read_all().to_pylist()


def fields_schema(fields):
    """The Arrow schema of {name: (Spark SQL type, nullable)}."""
    return pa.schema([pa.field(name, SPARK_ARROW_TYPES[kind], nullable) for name, (kind, nullable) in fields.items()])


def encode_columns(columns, schema):
    """Columns ({name: Arrow array}) as one Arrow IPC stream with `schema` (its names and order)."""
    return _ipc(pa.Table.from_arrays([columns[name] for name in schema.names], schema=schema))


def decode_concatenated(payloads, fields):
    """One Arrow table of IPC streams of the declared `fields`, in order (empty when there are none)."""
    tables = [pa.ipc.open_stream(payload).read_all() for payload in payloads]
    return pa.concat_tables(tables) if tables else fields_schema(fields).empty_table()


def encode_table(name, rows):
    return encode(rows, SCHEMAS[name])


def decode_tables(names, payloads):
    """{table name: rows}, concatenating every payload of the same table."""
    tables = {}
    for name, payload in zip(names, payloads):
        tables.setdefault(name, []).extend(decode(payload))
    return tables


def _buckets(table, buckets):
    """The bucket of each row of an Arrow table with topic and (int32) partition columns: pandas' object
    hash of the pair, which state checkpoints are keyed by, so it must never change."""
    frame = pd.DataFrame({"topic": table["topic"].to_pandas(), "partition": table["partition"].to_pandas()})
    return (pd.util.hash_pandas_object(frame, index=False) % buckets).to_numpy()


def encode_by_bucket(tables, buckets):
    """{bucket: {table name: payload}} for the partition-keyed ones of `tables` ({name: rows}); every bucket
    appears, even empty. Each table is converted to Arrow once and sliced by bucket there (rows keep
    their order): slicing the row dicts in Python first cost several times more at 100k moves."""
    split = {b: {} for b in range(buckets)}
    for name in PARTITION_KEYED:
        if not tables.get(name):
            continue
        table = _arrow_table(tables[name], SCHEMAS[name])
        of_row = _buckets(table, buckets)
        for bucket in range(buckets):
            mask = of_row == bucket
            if mask.any():
                split[bucket][name] = _ipc(table.filter(pa.array(mask)))
    return split
