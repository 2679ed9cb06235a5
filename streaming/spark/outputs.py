"""From one batch's tracked replica rows and cluster tables to everything the sinks write. Pure.

`assemble` returns the progress-topic records (replica and partition rows - every transition every batch, the
steady ones as sinks.records.rewritten says -, the reassignment rows every batch), the Prometheus picture and
the poll facts. The rows are columns (streaming.vocabulary.columns) from the state buckets' blobs to the
records; the driver's batch handler (streaming.spark.job) only performs the I/O.

`first_look` is the picture of a poll the driver took itself before Spark's first batch (the controller's first
look, docs/architecture.md "The controller"): the same measure, history step (first sight: no rates yet),
model, reasons and rollups as a batch's, so /metrics shows the moves in flight seconds after `run` starts.
"""

import json
from collections import Counter
from dataclasses import dataclass

from sinks import records
from sinks.metric_rows import shown_rows
from sinks.prometheus import DETAIL_KEYS, Picture
from streaming.cluster.poller import usable
from streaming.core.diagnosis import (diagnosed, offline_brokers, offline_log_dirs, out_of_isr_targets,
                                       unanswered_brokers)
from streaming.core.history import empty_memory, step
from streaming.core.measure import replica_progress
from streaming.core.rollups import finished, moving_summary, partition_rollup, request_rollups, topic_rollup
from streaming.core.snapshot_columns import from_snapshot
from streaming.vocabulary import defaults
from streaming.vocabulary.columns import Columns, member, partition_ids, state_counts
from streaming.vocabulary.snapshot import PollError, Snapshot
from streaming.vocabulary.states import ReplicaState


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


def _partitions_of(rows, where=None):
    """{(topic, partition)} of the rows (those of the mask `where`)."""
    topics, partitions = rows["topic"], rows["partition"]
    if where is not None:
        topics, partitions = topics[where], partitions[where]
    return set(zip(topics.tolist(), partitions.tolist()))


@dataclass(frozen=True)
class BatchOutput:
    """What a batch computed; the controller and the throttle steerer read it through the methods below."""
    records: list  # (key, encoded JSON value)
    picture: Picture
    snapshot: Snapshot  # the cluster-wide tables, for the throttle janitor
    replicas: Columns  # the batch's replica rows: history report columns, the model's ETA, reasons
    partitions: Columns  # their partition rollups (streaming.core.rollups.partition_rollup)
    summary: dict
    throttles_binding: frozenset = frozenset()  # brokers whose throttle sets a move's share (the budget model)

    def tracked_partitions(self):
        """{(topic, partition)} with a move the state still tracks after this batch (not finished)."""
        return _partitions_of(self.replicas, ~finished(self.replicas))

    def reported_partitions(self):
        """{(topic, partition)} of every replica row this batch reported, finished ones included."""
        return _partitions_of(self.replicas)

    def falling_behind_brokers(self):
        """Brokers a FALLING_BEHIND inter-broker move goes into or out of (what `--throttle auto` raises)."""
        behind = self.replicas.take((self.replicas["state"] == ReplicaState.FALLING_BEHIND.value)
                                    & ~self.replicas["intra_broker"])
        return set(behind["broker"].tolist()) | set(behind["leader"].tolist())


def assemble(replicas, tables, facts, batch_id, requests=None, pending_after_s=2 * defaults.TRIGGER_INTERVAL_S, *,
             cluster, record_budget=defaults.RECORD_ROW_BUDGET):
    """The batch's output from its replica rows (history report columns). `requests`: {request id: [(topic,
    partition)]} of ongoing `execute` requests, for per-request rows. Every ETA (replica, partition, request,
    cluster) is the budget model's; `pending_after_s`: how long a PENDING move waits before it gets a reason;
    `cluster`: the cluster's name in the records (streaming.vocabulary.cluster_name); `record_budget`: the steady
    rows rewritten at most (sinks.records.rewritten)."""
    replicas, model, partitions, moving_partitions, summary, state = _analysed(replicas, tables, facts.ts_ms,
                                                                              pending_after_s)
    cluster_id, ts_ms = facts.cluster_id, facts.ts_ms
    written = records.rewritten(replicas, batch_id, record_budget)
    # A partition's record is written with its replicas' (a partition's state changes only with one of theirs).
    of_replica, of_partition = partition_ids((replicas["topic"], replicas["partition"]),
                                             (partitions["topic"], partitions["partition"]))
    out = records.replica_records(replicas.take(written), ts_ms, batch_id, cluster_id, cluster=cluster)
    out += records.partition_records(partitions.take(member(of_replica[written], of_partition)), ts_ms, batch_id,
                                     cluster_id, cluster=cluster)
    out.append((records.reassignment_key(), records.encode(
        records.reassignment_record(summary, state, ts_ms, batch_id, cluster_id, cluster=cluster))))
    for request_id, (request_summary, request_worst) in request_rollups(partitions, requests or {}).items():
        out.append((records.reassignment_key(request_id), records.encode(records.reassignment_record(
            request_summary, request_worst, ts_ms, batch_id, cluster_id, request_id, cluster=cluster))))

    picture = _picture(replicas, moving_partitions, summary, tables, ts_ms)
    snapshot = Snapshot(ts_ms=ts_ms, cluster_id=cluster_id, tables=dict(tables), requests=facts.requests,
                        errors=facts.errors, duration_s=facts.duration_s)
    return BatchOutput(out, picture, snapshot, replicas, partitions, summary, model.throttles_binding())


def _analysed(replicas, tables, ts_ms, pending_after_s):
    """(replicas with the budget model's ETA and their reasons, the model, partition rollups, the moving ones, the
    cluster summary, its worst state) of replica rows (history report columns) and the poll's cluster tables."""
    replicas, model = diagnosed(replicas, tables.get("topic_throttles", ()), tables.get("broker_throttles", ()),
                                offline_brokers(tables.get("brokers", ()), tables.get("log_dirs_answered", ())),
                                ts_ms, pending_after_s, unanswered_brokers(tables.get("brokers", ())),
                                offline_log_dirs(tables.get("offline_log_dirs", ())),
                                out_of_isr_targets(tables.get("reassignments", ()), tables.get("partitions", ())))
    partitions = partition_rollup(replicas)
    moving_partitions = partitions.take(~finished(partitions))
    summary, state = moving_summary(moving_partitions)
    return replicas, model, partitions, moving_partitions, summary, state


def _picture(replicas, moving_partitions, summary, tables, ts_ms):
    return Picture(
        replicas=replicas.take(~finished(replicas)), partitions=moving_partitions,
        topics=topic_rollup(moving_partitions), partition_states=state_counts(moving_partitions), summary=summary,
        broker_throttles=tuple(tables.get("broker_throttles", ())),
        topic_throttles=tuple(tables.get("topic_throttles", ())), last_poll_s=ts_ms / 1000.0)


def first_look(snapshot, pending_after_s=2 * defaults.TRIGGER_INTERVAL_S):
    """The Prometheus picture of one whole poll (streaming.cluster.poller.poll, every topic), or None when the poll
    cannot tell moving from finished moves (module docstring)."""
    if not usable(snapshot.cluster_id, snapshot.errors):
        return None
    _, report = step(empty_memory(), replica_progress(from_snapshot(snapshot)), snapshot.ts_ms)
    replicas, _, _, moving_partitions, summary, _ = _analysed(report, snapshot.tables, snapshot.ts_ms,
                                                              pending_after_s)
    return _picture(replicas, moving_partitions, summary, snapshot.tables, snapshot.ts_ms)


# Replica lines a batch prints (without --quiet), the worst first: a terminal is for looking at, /metrics and the
# progress topic carry every move.
DESCRIBED_ROWS = 20


def describe(output):
    """A few terminal lines for the operator watching the job: the summary, then the DESCRIBED_ROWS moves
    /metrics would show first (sinks.metric_rows.shown_rows), and how many more there are."""
    s = output.summary
    eta = "-" if s["eta_seconds"] is None else f"{s['eta_seconds']:.0f}s"
    lines = [f"{len(output.picture.replicas)} replica moves, {s['partitions_total']} partitions, "
             f"{s['bytes_remaining'] / 1e6:.1f} MB remaining, {(s['rate_bytes_per_sec'] or 0) / 1e6:.2f} MB/s, "
             f"ETA {eta}"]
    moving = output.picture.replicas
    shown, _ = shown_rows(moving, DETAIL_KEYS["replica"], DESCRIBED_ROWS)
    for r in moving.take(shown).select(["topic", "partition", "broker", "state", "progress", "copy_rate",
                                        "eta_seconds", "reason"]).rows():
        progress = "-" if r["progress"] is None else f"{100 * r['progress']:5.1f}%"
        rate = "-" if r["copy_rate"] is None else f"{r['copy_rate'] / 1e6:.2f} MB/s"
        eta = "-" if r["eta_seconds"] is None else f"{r['eta_seconds']:.0f}s"
        reason = f" ({r['reason']})" if r["reason"] else ""
        lines.append(f"  {r['topic']}-{r['partition']} -> broker {r['broker']}: {r['state']:<14} {progress} "
                     f"{rate} ETA {eta}{reason}")
    if len(moving) > len(shown):
        lines.append(f"  ... and {len(moving) - len(shown)} more (every move: /metrics, the progress topic)")
    return "\n".join(lines)
