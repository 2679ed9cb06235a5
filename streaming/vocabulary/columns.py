"""Rows as columns: the one shape replica rows, rollups and snapshot tables take in the core, the job, the sinks
and the CLI's report. Value type and helpers; pure.

A `Columns` holds one numpy array per column, all of one length. How each kind of value is held
(streaming.vocabulary.replica_row): text as object arrays (None for null), whole numbers as int64, counts and
measures as float64 with NaN for null (never a NaN for anything else), yes/no facts as bool, a state as its
ReplicaState value in int8 (NO_STATE: none). Rules read whole columns at once (a comparison with NaN is false, so
a rule on an unknown number does not fire); rows as dicts of plain Python values are made only where few are
needed (a report's table, the rows /metrics shows, tests).

Keys: a (topic, partition) pair becomes one integer per step (`partition_ids`, dense over the tables keyed
together), a replica move (topic, partition, broker, intra_broker) one int64 built from it (`replica_keys`), and
joins are sorted lookups (`lookup`). Groups of equal keys are runs of a stable sort (`Groups`), reduced with
numpy's reduceat.
"""

import numpy as np

from streaming.vocabulary.replica_row import BOOL, CORE_FACTS, COUNT, DIAGNOSIS, FIELDS, FLOAT, INT, STATE, STRING, TEXT
from streaming.vocabulary.states import FINISHED_STATES, STATE_NAMES, ReplicaState

NO_STATE = -1
DTYPES = {STRING: object, TEXT: object, INT: np.int64, COUNT: np.float64, FLOAT: np.float64, BOOL: bool,
          STATE: np.int8}
# The kinds of the columns a replica row or a rollup may carry, for rows made into columns and back.
KINDS = {**FIELDS, **CORE_FACTS, **DIAGNOSIS, "poll_id": INT, "ts_ms": INT, "was_in_sync": BOOL,
         "observed_seconds": FLOAT, "replicas": INT, "bytes_done": FLOAT, "bytes_total": FLOAT}
STATE_NAME_OF_CODE = np.array([*STATE_NAMES, None], dtype=object)  # a code's name; NO_STATE (-1) is the last: None
FINISHED_CODES = np.array(sorted(state.value for state in FINISHED_STATES), dtype=np.int8)


def finished(states):
    """Which of some state codes are finished moves: COMPLETED or CANCELLED."""
    return np.isin(states, FINISHED_CODES)


def worst_code(states):
    """The worst of some state codes: the greatest, ReplicaState being ordered by severity (NO_STATE for none).
    Groups.worst is the same rule per group."""
    return int(states.max()) if len(states) else NO_STATE


def bytes_left(total, done):
    """Bytes still to copy: total - done, at least 0; NaN where either is unknown (an unknown count is not 0)."""
    return np.maximum(total - done, 0.0)


class Columns:
    """Equal-length numpy columns by name, in the order given."""

    __slots__ = ("_columns", "_length")

    def __init__(self, columns=None, length=None):
        self._columns = dict(columns or {})
        lengths = {len(values) for values in self._columns.values()}
        if length is not None:
            lengths.add(length)
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")
        self._length = lengths.pop() if lengths else 0

    def __len__(self):
        return self._length

    def __getitem__(self, name):
        return self._columns[name]

    def __contains__(self, name):
        return name in self._columns

    @property
    def names(self):
        return list(self._columns)

    def get(self, name, default=None):
        return self._columns.get(name, default)

    def items(self):
        return self._columns.items()

    def take(self, index):
        """The rows at `index` (positions, or a boolean mask), in that order."""
        taken = {name: values[index] for name, values in self._columns.items()}
        return Columns(taken, len(np.arange(self._length)[index]) if not taken else None)

    def with_columns(self, **columns):
        """These columns added or replaced."""
        return Columns({**self._columns, **columns}, self._length)

    def select(self, names):
        return Columns({name: self._columns[name] for name in names}, self._length)

    def rows(self, names=None):
        """The rows as dicts of plain Python values (null: None; a count as an int, a state by name)."""
        names = self.names if names is None else names
        values = [python_values(self._columns[name], KINDS.get(name)) for name in names]
        return [dict(zip(names, row)) for row in zip(*values)] if names else [{} for _ in range(self._length)]

    def __repr__(self):
        return f"Columns({self._length} rows: {', '.join(self.names)})"


def python_values(values, kind=None):
    """A column as a list of plain Python values: NaN is None, a count a whole number, a state its name."""
    if kind == STATE:
        return STATE_NAME_OF_CODE[values.astype(np.int64)].tolist()
    if values.dtype.kind == "f":
        # A count beyond any whole number (infinite, or past int64: rows never hold one) is unknown too.
        known = (np.abs(values) < 2.0**63) if kind == COUNT else ~np.isnan(values)
        as_list = (np.where(known, values, 0).astype(np.int64) if kind == COUNT else values).tolist()
        return as_list if known.all() else [v if k else None for v, k in zip(as_list, known.tolist())]
    return values.tolist()


def column(values, kind):
    """A column of `kind` from a list of Python values (None for null; a state by name)."""
    if kind == STATE:
        return state_codes(values)
    if kind in (COUNT, FLOAT):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    if kind == BOOL:
        return np.array([bool(v) for v in values], dtype=bool)
    if kind == INT:
        return np.array(values, dtype=np.int64).reshape(len(values))
    return np.array(values, dtype=object).reshape(len(values))


def state_codes(names):
    """ReplicaState values of state names (None: NO_STATE)."""
    return np.array([NO_STATE if name is None else ReplicaState[name].value for name in names], dtype=np.int8)


def from_rows(rows, kinds=None):
    """Columns of row dicts: each column by its kind (`kinds`, else KINDS, else object); the first row's keys (no
    rows: the columns of `kinds`)."""
    if not rows:
        return empty(kinds or {})
    known = {**KINDS, **(kinds or {})}
    return Columns({name: column([row.get(name) for row in rows], known.get(name)) for name in rows[0]}, len(rows))


def empty(kinds):
    """No rows, with the columns of `kinds` ({name: kind})."""
    return Columns({name: np.empty(0, dtype=DTYPES[kind]) for name, kind in kinds.items()}, 0)


NO_ID = -1  # a whole number that is not there (no leader, no such row)


def nulls(length, kind):
    """A column of `length` nulls (a yes/no fact: false; a whole number: NO_ID)."""
    if kind == STATE:
        return np.full(length, NO_STATE, dtype=np.int8)
    if kind in (STRING, TEXT):
        return np.full(length, None, dtype=object)
    return np.full(length, np.nan if kind in (COUNT, FLOAT) else NO_ID if kind == INT else False, dtype=DTYPES[kind])


def concat(parts, kinds):
    """One Columns of several with the columns of `kinds`, in order."""
    parts = [part for part in parts if len(part)]
    if not parts:
        return empty(kinds)
    return Columns({name: np.concatenate([part[name] for part in parts]) for name in kinds})


# -- keys --
# Joins sort with numpy's default sort (its vectorized quicksort) and look sorted keys up in sorted order: on 2
# cores at 100k keys that was 5-20 times faster than np.unique, np.isin and lookups in random order (numpy 2.4).

def unique(values):
    """The distinct values, sorted."""
    ordered = np.sort(values)
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = ordered[1:] != ordered[:-1]
    return ordered[new]


def _positions(sorted_keys, wanted):
    """searchsorted of `wanted` in `sorted_keys`, the needles taken in sorted order (each search starts where the
    one before ended), clipped to a valid index."""
    order = np.argsort(wanted)
    at = np.empty(len(wanted), dtype=np.int64)
    at[order] = np.searchsorted(sorted_keys, wanted[order])
    return np.minimum(at, max(len(sorted_keys) - 1, 0))


def partition_ids(*pairs):
    """One array per (topics, partitions) pair: each row's (topic, partition) as a small integer, the same pair
    the same integer across all of them, ordered as (topic, partition) sort (so sorting by it sorts by topic
    then partition)."""
    names = sorted(set().union(*(set(topics.tolist()) for topics, _ in pairs)))
    code = {name: i for i, name in enumerate(names)}
    keys = [(np.fromiter(map(code.__getitem__, topics.tolist()), np.int64, len(topics)) << 32)
            | np.asarray(partitions, dtype=np.int64) for topics, partitions in pairs]
    universe = unique(np.concatenate(keys)) if keys else np.empty(0, np.int64)
    return [_positions(universe, k) for k in keys]


def replica_keys(partition_id, broker, intra_broker=False):
    """A replica move's key, one int64: its partition id, broker (a non-negative int32) and intra_broker."""
    return (np.asarray(partition_id, np.int64) << 33) | (np.asarray(broker, np.int64) << 1) | np.asarray(
        intra_broker, np.int64)


def lookup(keys, wanted):
    """(index into `keys` of each of `wanted`, found): `keys` unique; index 0 where not found."""
    if len(keys) == 0:
        return np.zeros(len(wanted), np.int64), np.zeros(len(wanted), bool)
    order = np.argsort(keys)
    at = _positions(keys[order], wanted)
    index = order[at]
    return index, keys[index] == wanted


def member(keys, wanted):
    """Whether each of `wanted` is among `keys`."""
    if len(keys) == 0:
        return np.zeros(len(wanted), bool)
    ordered = np.sort(keys)
    return ordered[_positions(ordered, wanted)] == wanted


def unique_inverse(values):
    """(the distinct values sorted, the index of each value among them)."""
    distinct = unique(values)
    return distinct, _positions(distinct, values)


class Groups:
    """Rows grouped by equal keys: `order` sorts them by key, `starts` are where each group begins in that order,
    `group` the group of each row in input order."""

    def __init__(self, keys):
        keys = np.asarray(keys)
        self.order = np.argsort(keys)
        ordered = keys[self.order]
        new = np.ones(len(keys), dtype=bool)
        new[1:] = ordered[1:] != ordered[:-1]
        self.starts = np.flatnonzero(new)
        self.sizes = np.diff(np.append(self.starts, len(keys)))
        self.group = np.empty(len(keys), np.int64)
        self.group[self.order] = np.cumsum(new) - 1

    def __len__(self):
        return len(self.starts)

    def first(self, values):
        """Each group's value of its first row."""
        return values[self.order[self.starts]]

    def _reduce(self, ufunc, values):
        if len(self.starts) == 0:
            return np.empty(0, dtype=values.dtype)
        return ufunc.reduceat(values[self.order], self.starts)

    def known_sum(self, values):
        """The sum of each group's known values (0.0 when none is known)."""
        return self._reduce(np.add, np.where(np.isnan(values), 0.0, values))

    def known_max(self, values):
        """The largest known value of each group; NaN when none is known."""
        return self._reduce(np.fmax, values)

    def last(self, values):
        """The largest value of each group, unknown (NaN) when one of them is: when the last of some moves ends."""
        return self._reduce(np.maximum, values)

    def all(self, flags):
        return self._reduce(np.logical_and, flags)

    def any(self, flags):
        return self._reduce(np.logical_or, flags)

    def worst(self, states):
        """The most severe state of each group (the highest ReplicaState value, as `worst_code`); NO_STATE when none
        is known."""
        return self._reduce(np.maximum, states)

    def count(self, flags):
        return self._reduce(np.add, flags.astype(np.int64))


def state_counts(rows):
    """{state name: rows in it} of the states present (a `state` column of ReplicaState values)."""
    codes, counts = np.unique(rows["state"], return_counts=True)
    return {name: count for name, count in zip(python_values(codes, STATE), counts.tolist()) if name is not None}
