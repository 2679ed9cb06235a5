"""Snapshot tables and columns to and from bytes (Arrow IPC streams), and their split into state buckets.

The streaming source ships each snapshot table slice as one binary cell, so Spark moves a few dozen
rows per poll whatever the cluster's size. Tables are lists of row dicts (streaming.vocabulary.snapshot) where
the poll makes them; the state buckets and the driver read them as columns (streaming.vocabulary.columns), and
this module is the one place a declared column type or kind becomes an Arrow type and back.
"""

from operator import itemgetter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from streaming.core.measure import READ
from streaming.core.snapshot_columns import LISTED, NO_LEADER, TABLES, SnapshotColumns, list_columns, scalar_kinds
from streaming.vocabulary.columns import NO_STATE, STATE_NAME_OF_CODE, Columns
from streaming.vocabulary.replica_row import BOOL, COUNT, FLOAT, INT, STATE, STRING, TEXT
from streaming.vocabulary.snapshot import BOOL as BOOL_TYPE, FLOAT64, INT32, INT64, INT_LIST, PARTITION_KEYED, SCHEMAS
from streaming.vocabulary.snapshot import STRING as STRING_TYPE
from streaming.vocabulary.states import STATE_NAMES

ARROW_TYPES = {STRING_TYPE: pa.string(), INT32: pa.int32(), INT64: pa.int64(), FLOAT64: pa.float64(),
               BOOL_TYPE: pa.bool_(), INT_LIST: pa.list_(pa.int32())}
# How a column of each kind travels between the job's processes (never stored: the memory blob keeps its schema).
KIND_TYPES = {STRING: pa.string(), TEXT: pa.string(), INT: pa.int64(), COUNT: pa.float64(), FLOAT: pa.float64(),
              BOOL: pa.bool_(), STATE: pa.int8()}
_STATES = pa.array(STATE_NAMES)
# IPC buffers compressed: a state bucket's tables and report shrink several times (topic names repeat), and Spark
# hands fewer bytes between the JVM and the Python workers. Readers need no option.
IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


def arrow_schema(columns):
    """The Arrow schema of ((column, type constant), ...)."""
    return pa.schema([(name, ARROW_TYPES[kind]) for name, kind in columns])


def kinds_schema(kinds):
    """The Arrow schema of {name: kind}."""
    return pa.schema([(name, KIND_TYPES[kind]) for name, kind in kinds.items()])


def _column_values(rows, name):
    try:
        return list(map(itemgetter(name), rows))
    except KeyError:  # a row without the column (rows made by hand): null there
        return [row.get(name) for row in rows]


def _arrow_table(rows, columns):
    """Column by column: pyarrow's from_pylist converts row by row (3 times slower at 100k rows). A missing
    key is null in both."""
    return pa.Table.from_pydict({name: _column_values(rows, name) for name, _ in columns}, schema=arrow_schema(columns))


def _ipc(table):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def encode(rows, columns):
    """Row dicts with the declared `columns` ((column, type constant), ...) as one Arrow IPC stream."""
    return _ipc(_arrow_table(rows, columns))


def read(payload):
    """The Arrow table of an IPC stream (any writer's, compressed or not)."""
    return pa.ipc.open_stream(payload).read_all()


def decode(payload):
    """The row dicts of an Arrow IPC stream (any writer's: a blob written from a pandas frame decodes the same)."""
    return read(payload).to_pylist()


def encode_table(name, rows):
    return encode(rows, SCHEMAS[name])


def decode_tables(names, payloads):
    """{table name: rows}, concatenating every payload of the same table."""
    tables = {}
    for name, payload in zip(names, payloads):
        tables.setdefault(name, []).extend(decode(payload))
    return tables


# -- columns --

def numpy_column(values, kind):
    """An Arrow (chunked) array as a column of `kind` (streaming.vocabulary.columns)."""
    if kind in (STRING, TEXT):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
    if kind in (COUNT, FLOAT):
        return np.asarray(pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    if kind == BOOL:
        return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)
    if kind == STATE:
        if pa.types.is_string(values.type):  # by name: the memory blob's
            values = pc.index_in(values, value_set=_STATES)
        return np.asarray(pc.fill_null(values, NO_STATE).to_numpy(zero_copy_only=False), dtype=np.int8)
    return np.asarray(pc.fill_null(values, NO_LEADER).to_numpy(zero_copy_only=False), dtype=np.int64)


def arrow_column(values, kind, arrow_type=None):
    """A column of `kind` as an Arrow array of `arrow_type` (else the kind's); NaN is null."""
    arrow_type = KIND_TYPES[kind] if arrow_type is None else arrow_type
    if kind == STATE and pa.types.is_string(arrow_type):  # by name: the memory blob's
        return pa.array(STATE_NAME_OF_CODE[values.astype(np.int64)], type=arrow_type)
    if kind in (COUNT, FLOAT):
        return pa.array(values, type=arrow_type, mask=np.isnan(values))
    return pa.array(values, type=arrow_type)


def columns_of(table, kinds):
    """A Columns of an Arrow table's columns, each of its kind in `kinds`."""
    return Columns({name: numpy_column(table[name], kind) for name, kind in kinds.items()}, table.num_rows)


def encode_columns(columns, kinds, schema=None):
    """Columns as one Arrow IPC stream: each by its kind, as `schema` says where given (a stored format)."""
    schema = kinds_schema(kinds) if schema is None else schema
    arrays = [arrow_column(columns[field.name], kinds[field.name], field.type) for field in schema]
    return _ipc(pa.Table.from_arrays(arrays, schema=schema))


def decode_columns(payloads, kinds):
    """One Columns of IPC streams of columns of `kinds`, in order (no rows when there are none)."""
    tables = [read(payload) for payload in payloads]
    if not tables:
        return columns_of(kinds_schema(kinds).empty_table(), kinds)
    return columns_of(pa.concat_tables(tables), kinds)


def _listed(lists):
    """The `<table>.<column>` table of a list column: the row of each listed broker, null ones left out."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    rows, brokers = pc.list_parent_indices(lists), pc.list_flatten(lists)
    valid = pc.is_valid(brokers)
    return Columns({"row": pc.filter(rows, valid).to_numpy().astype(np.int64),
                    "broker": pc.filter(brokers, valid).to_numpy().astype(np.int64)})


def snapshot_columns(names, payloads, ts_ms):
    """The SnapshotColumns of a state bucket's table slices (IPC streams, several of one table concatenated)."""
    found = {}
    for name, payload in zip(names, payloads):
        if name in TABLES:
            found.setdefault(name, []).append(read(payload))
    tables = {}
    for name, parts in found.items():
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        tables[name] = columns_of(table, {column: kind for column, kind in scalar_kinds(name).items()
                                          if column in table.schema.names})
        for listed in (column for column in list_columns(name) if column in table.schema.names):
            tables[f"{name}.{listed}"] = _listed(table[listed]) if table.num_rows else columns_of(
                kinds_schema(LISTED).empty_table(), LISTED)
    return SnapshotColumns(ts_ms, tables)


# -- buckets --

def _buckets(table, buckets):
    """The bucket of each row of an Arrow table with topic and (int32) partition columns: pandas' object
    hash of the pair, which state checkpoints are keyed by, so it must never change."""
    frame = pd.DataFrame({"topic": table["topic"].to_pandas(), "partition": table["partition"].to_pandas()})
    return (pd.util.hash_pandas_object(frame, index=False) % buckets).to_numpy()


def _partition_keys(table):
    """`topic:partition` of each row of an Arrow table, as one string array."""
    keys = pc.binary_join_element_wise(table["topic"], pc.cast(table["partition"], pa.string()), ":")
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def _logs_read(logs, moving):
    """The log_dirs rows the progress core reads (streaming.core.measure): those of a partition being reassigned
    (`moving`: the reassignment tables; its leader's log, the adding brokers') or with a future log (an
    intra-broker move), future logs included. The rest - every other replica of the cluster - stays out of the
    state buckets."""
    future = pc.fill_null(logs["is_future"], False)
    keys = pa.concat_arrays([_partition_keys(table) for table in moving] + [_partition_keys(logs.filter(future))])
    return logs.filter(pc.or_(pc.is_in(_partition_keys(logs), value_set=keys), future))


def _read(name):
    """The declared columns of a table that the state buckets read (streaming.core.measure.READ)."""
    return tuple((column, kind) for column, kind in SCHEMAS[name] if column in READ.get(name, (column,)))


def encode_by_bucket(tables, buckets):
    """{bucket: {table name: payload}} for the partition-keyed ones of `tables` ({name: rows}); every bucket
    appears, even empty. Each table is converted to Arrow once and sliced by bucket there (rows keep
    their order): slicing the row dicts in Python first cost several times more at 100k moves. Only the columns
    the buckets read go (`_read`), and of log_dirs the rows the progress core reads when the poll listed the
    reassignments (`_logs_read`; a part of a poll without that list, bench/stream.py's per-broker parts, keeps its
    rows)."""
    arrow = {name: _arrow_table(tables[name], _read(name)) for name in PARTITION_KEYED if tables.get(name)}
    if "log_dirs" in arrow and "reassignments" in tables:
        moving = [arrow[name] for name in ("reassignments", "unreported_reassignments") if name in arrow]
        arrow["log_dirs"] = _logs_read(arrow["log_dirs"], moving)
    split = {b: {} for b in range(buckets)}
    for name, table in arrow.items():
        of_row = _buckets(table, buckets)
        for bucket in range(buckets):
            mask = of_row == bucket
            if mask.any():
                split[bucket][name] = _ipc(table.filter(pa.array(mask)))
    return split
