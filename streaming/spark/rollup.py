"""streaming.core.progress.partition_rollup in columns, for the driver's batch (an Arrow table of replica rows).

Why: at 100,000 moving replicas the row-by-row rollup was one of the largest costs on the driver's single core
per batch (bench/RESULTS.md "Where a batch's time goes at 100,000 moving replicas"). It is the same rollup, not a
second one: each step below is the column form of one named definition of streaming.core.progress, and says which -
- `replica_bytes` (a replica's done / total bytes) -> `_replica_bytes`;
- each ROLLUP_EXTRAS combine -> its column form in COMBINED, looked up by the combine function itself, so an
  extra whose combine has no column form fails at import, and a new extra is rolled up here as soon as its
  combine has one;
- `worst` (states.py: the most severe state) -> `_worst`, over the same SEVERITY table;
- the rollup's progress rule, and `eta_seconds` itself (called per partition: one rule for every ETA).
Sums and maxima run over each partition's replicas one position at a time, in the rows' order, so every
float is the one Python's left-to-right `sum` / `max` gives (numpy's own reductions add in another order,
and their last bits differ from 8 values up; a record's text would too). tests/test_rollup.py proves the two
agree on generated rows.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.core.progress import (PARTITION_COLUMNS, ROLLUP_EXTRAS, eta_seconds, known_max, known_sum,
                                     partition_rollup)
from streaming.vocabulary.states import NAME_OF, SEVERITY

_UNKNOWN = -1  # the severity of a null state


class _Groups:
    """The rows of a table sorted by (topic, partition), stably (rows keep their order within a partition, as
    partition_rollup's grouping keeps it), and where each partition's rows start and how many there are."""

    def __init__(self, table):
        self.order = pc.sort_indices(table, sort_keys=[("topic", "ascending"), ("partition", "ascending")])
        self.table = table.take(self.order)
        n = self.table.num_rows
        topics, partitions = self.table["topic"], self.table["partition"]
        new = np.ones(n, dtype=bool)
        if n > 1:
            new[1:] = (pc.not_equal(topics[1:], topics[:-1]).to_numpy(zero_copy_only=False)
                       | pc.not_equal(partitions[1:], partitions[:-1]).to_numpy(zero_copy_only=False))
        self.starts = np.flatnonzero(new)
        self.sizes = np.diff(np.append(self.starts, n))

    def positions(self):
        """(groups having a j-th row, the index of that row) for j = 0, 1, ...: the rows in their order."""
        for j in range(int(self.sizes.max()) if len(self.sizes) else 0):
            having = self.sizes > j
            yield having, self.starts[having] + j

    def column(self, name):
        """(values, known) of a column: numpy arrays, a null's value unspecified."""
        column = self.table[name]
        known = pc.is_valid(column).to_numpy(zero_copy_only=False)
        filler = False if pa.types.is_boolean(column.type) else 0
        return pc.fill_null(column, filler).to_numpy(zero_copy_only=False), known


def _known_sum(groups, values, known):
    """known_sum per partition: a null adds nothing, 0.0 when all are null; always known."""
    total = np.zeros(len(groups.starts))
    for having, rows in groups.positions():
        total[having] = np.where(known[rows], total[having] + values[rows], total[having])
    return total, np.ones(len(total), dtype=bool)


def _known_max(groups, values, known):
    """known_max per partition: the largest known value, the first of equal ones (as max keeps it); null
    when none is known."""
    best, has = np.zeros(len(groups.starts), dtype=values.dtype), np.zeros(len(groups.starts), dtype=bool)
    for having, rows in groups.positions():
        candidate, now = values[rows], best[having]
        take = known[rows] & (~has[having] | (candidate > now))
        best[having] = np.where(take, candidate, now)
        has[having] |= take
    return best, has


def _all(groups, values, known):
    """all per partition (over rows whose value is never null: in_isr)."""
    every = np.ones(len(groups.starts), dtype=bool)
    for having, rows in groups.positions():
        every[having] &= values[rows].astype(bool)
    return every, np.ones(len(every), dtype=bool)


COMBINED = {known_sum: _known_sum, known_max: _known_max, all: _all}
_EXTRAS = {column: COMBINED[combine] for column, combine in ROLLUP_EXTRAS.items()}


def _replica_bytes(groups):
    """progress.replica_bytes per row: ((done, known), (total, known)), done = total in the ISR, else the
    numerator capped at the denominator (taken as integers, then float, as there)."""
    numerator, numerator_known = groups.column("numerator")
    denominator, total_known = groups.column("denominator")
    in_isr, _ = groups.column("in_isr")
    total = denominator.astype(np.float64)
    done = np.where(in_isr, total, np.minimum(numerator, denominator).astype(np.float64))
    done_known = np.where(in_isr, total_known, total_known & numerator_known)
    return (done, done_known), (total, total_known)


def _worst(groups):
    """progress._worst per partition: the most severe known state's name; null when none is known."""
    severities = np.array([_UNKNOWN if state is None else SEVERITY[state]
                           for state in groups.table["state"].to_pylist()], dtype=np.int64)
    worst, known = _known_max(groups, severities, severities != _UNKNOWN)
    return [NAME_OF[s] if k else None for s, k in zip(worst.tolist(), known.tolist())]


def _values(column):
    """Python values of (values, known): None where not known."""
    values, known = column
    return [v if k else None for v, k in zip(values.tolist(), known.tolist())]


def partition_rollups(replicas):
    """partition_rollup's rows (PARTITION_COLUMNS, sorted by (topic, partition)) of an Arrow table of replica
    rows that carry the history columns, computed column by column."""
    if replicas.num_rows == 0:
        return partition_rollup([])
    groups = _Groups(replicas)
    (done, done_known), (total, total_known) = _replica_bytes(groups)
    bytes_done, _ = _known_sum(groups, done, done_known)
    bytes_total, _ = _known_sum(groups, total, total_known)
    positive = bytes_total > 0
    progress = np.divide(bytes_done, bytes_total, out=np.zeros_like(bytes_done), where=positive)
    columns = {
        "topic": groups.table["topic"].take(groups.starts).to_pylist(),
        "partition": groups.table["partition"].take(groups.starts).to_pylist(),
        "replicas": groups.sizes.tolist(), "bytes_done": bytes_done.tolist(), "bytes_total": bytes_total.tolist(),
        "progress": _values((progress, positive)), "state": _worst(groups),
        **{column: _values(combine(groups, *groups.column(column))) for column, combine in _EXTRAS.items()}}
    columns["eta_seconds"] = [eta_seconds(total_ - done_, copy, leader) for done_, total_, copy, leader in zip(
        columns["bytes_done"], columns["bytes_total"], columns["copy_rate"], columns["leader_rate"])]
    return [dict(zip(PARTITION_COLUMNS, row)) for row in zip(*(columns[name] for name in PARTITION_COLUMNS))]
