"""Which rows of the picture get their own series on /metrics: at most a fixed budget of them, the ones an
operator needs to see first. Pure.

Every row of the chosen --metrics-detail level gives 13 samples, so at 100,000 moving replicas /metrics would
be over 100 MB and take longer to write than Prometheus waits for a scrape (10 s by default): no data at all,
the cluster-wide gauges and the liveness gauge included. Past the budget, the rows shown are the unhealthy
ones first and then those with the most bytes left; the rest are counted per state instead
(kafka_reassignment_metrics_rows_omitted), and the cluster-wide gauges count every row as before.
"""

import heapq
from collections import Counter

from streaming.vocabulary.json_values import json_value
from streaming.vocabulary.states import SEVERITY, ReplicaState

# States in which a move cannot finish as things stand: each has its alert (deploy/prometheus/alerts.yml).
UNHEALTHY_STATES = frozenset(state.name for state in (ReplicaState.FALLING_BEHIND, ReplicaState.STALLED,
                                                      ReplicaState.BROKER_OFFLINE))
# The columns of a row's known and copied bytes: replica rows (streaming.core.history), rollups (progress).
BYTES_COLUMNS = (("denominator", "numerator"), ("bytes_total", "bytes_done"))


def unhealthy(row):
    """A move in an unhealthy state, or one the rules gave a reason (only replica rows carry one)."""
    return row["state"] in UNHEALTHY_STATES or row.get("reason_code") is not None


def remaining_bytes(row):
    """Bytes the row still has to copy; 0 when its target or its copied bytes are unknown."""
    for total_column, done_column in BYTES_COLUMNS:
        if total_column in row:
            total, done = json_value(row[total_column]), json_value(row[done_column])
            return max(total - done, 0) if total is not None and done is not None else 0
    return 0


def rank(row, keys):
    """Sort key, first shown first: unhealthy rows before healthy ones; within each, the worse state (the
    severity order of streaming.vocabulary.states), a row with a reason, more bytes remaining, then the
    row's labels (`keys`), so that ties are broken the same way every scrape."""
    return (not unhealthy(row), -SEVERITY[row["state"]], row.get("reason_code") is None, -remaining_bytes(row),
            *(row[key] for key in keys))


def shown_rows(rows, keys, budget):
    """(the rows shown, first first; Counter of the rows left out per state name)."""
    shown = heapq.nsmallest(budget, rows, key=lambda row: rank(row, keys))
    omitted = Counter(row["state"] for row in rows)
    omitted.subtract(row["state"] for row in shown)
    return shown, omitted
