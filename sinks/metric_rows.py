"""Which rows of the picture get their own series on /metrics: at most a fixed budget of them, the ones an
operator needs to see first. Pure.

Every row of the chosen --metrics-detail level gives 13 samples, so at 100,000 moving replicas /metrics would
be over 100 MB and take longer to write than Prometheus waits for a scrape (10 s by default): no data at all,
the cluster-wide gauges and the liveness gauge included. Past the budget, the rows shown are the unhealthy
ones first and then those with the most bytes left; the rest are counted per state instead
(kafka_reassignment_metrics_rows_omitted), and the cluster-wide gauges count every row as before. The rows are
columns (streaming.vocabulary.columns): they are ranked at once, and only the rows shown become dicts.
"""

from collections import Counter

import numpy as np

from streaming.vocabulary.columns import bytes_left, partition_ids, state_counts
from streaming.vocabulary.states import ReplicaState

# States in which a move cannot finish as things stand: each has its alert (deploy/prometheus/alerts.yml).
UNHEALTHY_STATES = frozenset(state.name for state in (ReplicaState.FALLING_BEHIND, ReplicaState.STALLED,
                                                      ReplicaState.BROKER_OFFLINE))
_UNHEALTHY = np.array(sorted(ReplicaState[name].value for name in UNHEALTHY_STATES), dtype=np.int8)
# The columns of a row's known and copied bytes: replica rows (streaming.core.history), rollups (rollups).
BYTES_COLUMNS = (("denominator", "numerator"), ("bytes_total", "bytes_done"))


def _reasoned(rows):
    reasons = rows.get("reason_code")  # only replica rows carry one
    return np.zeros(len(rows), bool) if reasons is None else reasons != None  # noqa: E711 (elementwise)


def unhealthy(rows):
    """Moves in an unhealthy state, or ones the rules gave a reason."""
    return np.isin(rows["state"], _UNHEALTHY) | _reasoned(rows)


def remaining_bytes(rows):
    """Bytes each row still has to copy (streaming.vocabulary.columns.bytes_left); NaN where its target or its
    copied bytes are unknown, as a row with more bytes left: an unknown count is not 0."""
    for total_column, done_column in BYTES_COLUMNS:
        if total_column in rows:
            return bytes_left(rows[total_column], rows[done_column])
    return np.full(len(rows), np.nan)


def ranked(rows, keys):
    """The rows' positions, first shown first: unhealthy rows before healthy ones; within each, the worse state
    (the severity order of streaming.vocabulary.states), a row with a reason, more bytes remaining, then the
    row's labels (`keys`: topic, partition, broker), so that ties are broken the same way every scrape."""
    labels = []
    for key in reversed(keys):
        labels.append(partition_ids((rows["topic"], np.zeros(len(rows), np.int64)))[0] if key == "topic" else rows[key])
    # Ranked only, never shown as a value: a row whose bytes are unknown ranks with those that have none left.
    left = np.nan_to_num(remaining_bytes(rows), nan=0.0, posinf=0.0)
    return np.lexsort((*labels, -left, ~_reasoned(rows), -rows["state"].astype(np.int64),
                       ~unhealthy(rows)))


def shown_rows(rows, keys, budget):
    """(the positions of the rows shown, first first; Counter of the rows left out per state name)."""
    if not len(rows):
        return np.zeros(0, np.int64), Counter()
    shown = ranked(rows, keys)[:max(budget, 0)]
    omitted = Counter(state_counts(rows))
    omitted.subtract(state_counts(rows.take(shown)))
    return shown, omitted
