"""From one batch's tracked replica rows and cluster tables to everything the sinks write. Pure.

`assemble` returns the progress-topic records (replica, partition and reassignment rows, every batch:
the topic is compacted by key and every transition is among them), the Prometheus picture and the
poll facts. The driver's batch handler (streaming.spark.job) only performs the I/O.
"""

import json
from collections import Counter
from dataclasses import dataclass

from sinks import records
from sinks.prometheus import Picture
from streaming.cluster.poller import usable
from streaming.core.budget_view import last_eta, partition_etas
from streaming.core.progress import known_sum, partition_rollup, reassignment_rollup, topic_rollup
from streaming.core.reasons import diagnosed, offline_brokers, unanswered_brokers
from streaming.vocabulary import defaults
from streaming.vocabulary.replica_row import partition_of
from streaming.vocabulary.snapshot import PollError, Snapshot
from streaming.vocabulary.states import FINISHED_STATES, worst

FINISHED_NAMES = [s.name for s in FINISHED_STATES]


@dataclass(frozen=True)
class PollFacts:
    cluster_id: str
    ts_ms: int
    requests: int
    duration_s: float
    errors: tuple
    retries: dict  # api -> transient errors the poll retried past (they count as poll errors too)

    @property
    def ok(self):
        """Whether the batch can update progress."""
        return usable(self.cluster_id, self.errors)


def poll_facts(rows):
    """The facts of a poll from its rows (streaming.spark.source.POLL_COLUMNS): the job's source writes one;
    bench/stream.py's split arm one per part of the poll. Parts run in parallel, so the poll took as long
    as the slowest; requests add up; errors in order; the cluster id from the part that described the
    cluster. A row without retries (written before they were counted) retried nothing."""
    errors = tuple(PollError(e["api"], e["message"]) for row in rows for e in json.loads(row["errors"]))
    retries = sum((Counter(json.loads(row.get("retries") or "{}")) for row in rows), Counter())
    cluster_ids = [row["cluster_id"] for row in rows if row["cluster_id"]]
    return PollFacts(cluster_ids[0] if cluster_ids else "", min(row["ts_ms"] for row in rows),
                     sum(row["requests"] for row in rows), float(max(row["duration_s"] for row in rows)), errors,
                     dict(retries))


@dataclass(frozen=True)
class BatchOutput:
    records: list  # (key, encoded JSON value)
    picture: Picture
    snapshot: Snapshot  # the cluster-wide tables, for the throttle janitor
    replicas: list  # the batch's replica rows (streaming.core.history report rows plus poll_id and ts_ms)
    partitions: list  # their partition rollups (streaming.core.progress.partition_rollup)
    summary: dict
    throttles_binding: frozenset = frozenset()  # brokers whose throttle sets a move's share (the budget model)


def _moving(rows):
    """Rows whose move is not finished."""
    return [row for row in rows if row["state"] not in FINISHED_NAMES]


def _summarize(moving_partitions):
    """(reassignment_rollup with summed rates and the budget model's ETA - the last partition's finish -,
    worst state name or None) over moving partition rows."""
    if not moving_partitions:
        return reassignment_rollup(moving_partitions, copy_rate=0.0, leader_rate=0.0), None
    summary = reassignment_rollup(moving_partitions,
                                  copy_rate=known_sum(row["copy_rate"] for row in moving_partitions),
                                  leader_rate=known_sum(row["leader_rate"] for row in moving_partitions))
    summary["eta_seconds"] = last_eta(row["eta_seconds"] for row in moving_partitions)
    return summary, worst(row["state"] for row in moving_partitions)


def request_rollups(partitions, requests):
    """Per request id ({id: [(topic, partition), ...]} of moves started by `execute`): partitions total /
    completed and bytes over the request's partitions seen this batch. A partition of the request that
    is no longer in the batch finished earlier: it counts as completed with its bytes done."""
    rollups = {}
    for request_id, keys in requests.items():
        wanted = set(keys)
        moving = _moving([row for row in partitions if partition_of(row) in wanted])
        summary, state = _summarize(moving)
        summary["partitions_completed"] += len(wanted) - len(moving)
        summary["partitions_total"] = len(wanted)
        rollups[request_id] = (summary, state)
    return rollups


def _topics(moving_partitions):
    """Topic rollups whose ETA is the model's: the last of their partitions' finishes."""
    etas = {}
    for row in moving_partitions:
        etas.setdefault(row["topic"], []).append(row["eta_seconds"])
    return [{**row, "eta_seconds": last_eta(etas[row["topic"]])} for row in topic_rollup(moving_partitions)]


def assemble(replicas, tables, facts, batch_id, requests=None, pending_after_s=2 * defaults.TRIGGER_INTERVAL_S,
             partitions=None):
    """`requests`: {request id: [(topic, partition)]} of ongoing `execute` requests, for per-request rows.
    Every ETA (replica, partition, request, cluster) is the budget model's; `pending_after_s`: how long a
    PENDING move waits before it gets a reason. `partitions`: the replicas' partition_rollup when the caller
    has it (the job's handler rolls up in columns: streaming.spark.rollup); None: rolled up here. The budget
    model changes no column the rollup reads (it adds ETAs and reasons), so either way they are the same
    rows, and the partition ETAs are set here."""
    replicas, model = diagnosed(replicas, tables.get("topic_throttles", ()), tables.get("broker_throttles", ()),
                            offline_brokers(tables.get("brokers", ()), tables.get("log_dirs_answered", ())),
                            facts.ts_ms, pending_after_s, unanswered_brokers(tables.get("brokers", ())))
    moving = _moving(replicas)
    etas = partition_etas(replicas)
    partitions = partition_rollup(replicas) if partitions is None else partitions
    for row in partitions:  # rows just made here: set in place (a copy of 100,000 dicts cost 0.1 s)
        row["eta_seconds"] = etas[partition_of(row)]
    moving_partitions = _moving(partitions)
    summary, state = _summarize(moving_partitions)

    cluster_id = facts.cluster_id
    out = records.replica_records(replicas, batch_id, cluster_id)
    out += records.partition_records(partitions, facts.ts_ms, batch_id, cluster_id)
    out.append((records.reassignment_key(), records.encode(
        records.reassignment_record(summary, state, facts.ts_ms, batch_id, cluster_id))))
    for request_id, (request_summary, request_worst) in request_rollups(partitions, requests or {}).items():
        out.append((records.reassignment_key(request_id), records.encode(records.reassignment_record(
            request_summary, request_worst, facts.ts_ms, batch_id, cluster_id, request_id))))

    picture = Picture(
        replicas=tuple(moving), partitions=tuple(moving_partitions), topics=tuple(_topics(moving_partitions)),
        partition_states=dict(Counter(row["state"] for row in moving_partitions)), summary=summary,
        broker_throttles=tuple(tables.get("broker_throttles", ())),
        topic_throttles=tuple(tables.get("topic_throttles", ())), last_poll_s=facts.ts_ms / 1000.0)
    snapshot = Snapshot(ts_ms=facts.ts_ms, cluster_id=cluster_id, tables=dict(tables), requests=facts.requests,
                        errors=facts.errors, duration_s=facts.duration_s)
    return BatchOutput(out, picture, snapshot, replicas, partitions, summary, model.throttles_binding())


def describe(output):
    """A few terminal lines for the operator watching the job."""
    s = output.summary
    eta = "-" if s["eta_seconds"] is None else f"{s['eta_seconds']:.0f}s"
    lines = [f"{len(output.picture.replicas)} replica moves, {s['partitions_total']} partitions, "
             f"{s['bytes_remaining'] / 1e6:.1f} MB remaining, {(s['rate_bytes_per_sec'] or 0) / 1e6:.2f} MB/s, "
             f"ETA {eta}"]
    for r in output.replicas:
        progress = "-" if r["progress"] is None else f"{100 * r['progress']:5.1f}%"
        rate = "-" if r["copy_rate"] is None else f"{r['copy_rate'] / 1e6:.2f} MB/s"
        eta = "-" if r["eta_seconds"] is None else f"{r['eta_seconds']:.0f}s"
        reason = f" ({r['reason']})" if r.get("reason") else ""
        lines.append(f"  {r['topic']}-{r['partition']} -> broker {r['broker']}: {r['state']:<14} {progress} "
                     f"{rate} ETA {eta}{reason}")
    return "\n".join(lines)
