"""A poll's tables as columns (streaming.vocabulary.columns), the shape the progress core reads. Value type; pure.

Each partition- or broker-keyed table of streaming.vocabulary.snapshot becomes a Columns of its scalar
columns, by the declared type: text as text, an int32 as a whole number (a null leader: -1), an int64 (sizes,
offsets: they may be unknown) as a count, a bool as a bool (null: false). A list column (a partition's replicas,
ISR, a reassignment's adding brokers...) becomes a table of its own, `<table>.<column>`, one row per listed
broker: `row` (the index of the row that lists it) and `broker`; a null list or a null broker lists nothing.

`from_snapshot` makes it from a Snapshot's row dicts (the CLI's poll); the job makes the same from the Arrow
slices of its state buckets (streaming.spark.codec).
"""

from dataclasses import dataclass, field

import numpy as np

from streaming.vocabulary.columns import NO_ID, Columns, column, empty
from streaming.vocabulary.replica_row import BOOL, COUNT, FLOAT, INT, STRING
from streaming.vocabulary.snapshot import (BOOL as BOOL_TYPE, BROKER_KEYED, FLOAT64, INT32, INT64, INT_LIST,
                                           PARTITION_KEYED, SCHEMAS, STRING as STRING_TYPE)

KIND_OF_TYPE = {STRING_TYPE: STRING, INT32: INT, INT64: COUNT, FLOAT64: FLOAT, BOOL_TYPE: BOOL}
TABLES = PARTITION_KEYED + BROKER_KEYED
LISTED = {"row": INT, "broker": INT}  # the columns of a list column's table
NO_LEADER = NO_ID  # a partition without a leader (Metadata's -1)


def scalar_kinds(name):
    """{column: kind} of a table's scalar columns."""
    return {column_name: KIND_OF_TYPE[kind] for column_name, kind in SCHEMAS[name] if kind != INT_LIST}


def list_columns(name):
    return [column_name for column_name, kind in SCHEMAS[name] if kind == INT_LIST]


@dataclass(frozen=True)
class SnapshotColumns:
    ts_ms: int
    tables: dict = field(default_factory=dict)  # name (or `<table>.<list column>`) -> Columns

    def __getitem__(self, name):
        """The table's columns; no rows for a table this snapshot does not hold."""
        found = self.tables.get(name)
        if found is not None:
            return found
        table, _, listed = name.partition(".")
        return empty(LISTED if listed else scalar_kinds(table))

    def alive_brokers(self):
        brokers = self["brokers"]
        return brokers["broker"][brokers["alive"]]

    def unobserved_brokers(self):
        """As streaming.vocabulary.snapshot.unobserved_brokers: held as unresponsive while Kafka lists them alive."""
        brokers = self["brokers"]
        return brokers["broker"][~np.isnan(brokers["unanswered_since_ms"]) & brokers["kafka_alive"]]

    def answered_brokers(self):
        return self["log_dirs_answered"]["broker"]


def _scalar(values, kind):
    if kind == INT:
        return column([NO_LEADER if v is None else v for v in values], INT)
    return column(values, kind)


def _listed(lists):
    """The `<table>.<column>` table of one list column (a list per row, None for null)."""
    rows = [(i, broker) for i, brokers in enumerate(lists) for broker in brokers or () if broker is not None]
    return Columns({"row": np.array([r for r, _ in rows], dtype=np.int64).reshape(len(rows)),
                    "broker": np.array([b for _, b in rows], dtype=np.int64).reshape(len(rows))})


def from_snapshot(snapshot):
    """The columns of a Snapshot's row tables (those the progress core reads)."""
    tables = {}
    for name in TABLES:
        rows = snapshot.tables.get(name)
        if rows is None:
            continue
        tables[name] = Columns({column_name: _scalar([row.get(column_name) for row in rows], kind)
                                for column_name, kind in scalar_kinds(name).items()}, len(rows))
        for listed in list_columns(name):
            tables[f"{name}.{listed}"] = _listed([row.get(listed) for row in rows])
    return SnapshotColumns(snapshot.ts_ms, tables)
