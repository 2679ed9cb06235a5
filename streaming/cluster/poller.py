"""One poll of the cluster: every fact the progress core needs, in O(brokers) admin requests.

A poll has parts that need nothing from each other, so they run concurrently (threads in `poll`;
bench/stream.py also measured them as separate Spark input partitions):
- the cluster part: DescribeCluster, ListPartitionReassignments, Metadata, then concurrently ListOffsets
  (earliest and latest, one request per leader each) and DescribeConfigs for throttles;
- one log-dirs part per alive broker: DescribeLogDirs.
A failing call is recorded as a PollError and its rows are missing (a broker whose DescribeLogDirs
failed is absent from `log_dirs_answered`, so its replicas read as unknown, not as empty). Only
DescribeCluster failing fails the poll: without it nothing is known, not even who is alive. A broker
the door holds at the poll's end (its connection closed or refused, or a request to it lapsed: the door
asked it nothing more, streaming.cluster.door) is reported not alive, with since when an unresponsive one
has not answered, so every part of the snapshot agrees on who answered.
"""

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial

from streaming.vocabulary.errors import ClusterError, InternalError, from_kafka_error
from streaming.vocabulary.kafka_apis import (DECISION_APIS, DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS, LIST_OFFSETS,
                                             LIST_REASSIGNMENTS, METADATA, REQUIRED_APIS)
from streaming.vocabulary.snapshot import PollError, Snapshot, alive_brokers, combine, table, without_gone


def describe_cluster(admin):
    """(cluster id, [{"broker", "alive"}]); raises a ClusterError when the cluster does not answer."""
    try:
        return admin.describe_cluster()
    except Exception as error:
        raise from_kafka_error(error, "describing the cluster") from error


def usable(cluster_id, errors):
    """Whether a poll can update progress: the cluster was described and no required API failed."""
    return bool(cluster_id) and not {e.api for e in errors} & set(REQUIRED_APIS)


class _Attempts:
    """Runs calls, turning a failure into a PollError: one failed API must not lose the rest of the poll."""

    def __init__(self):
        self.errors = []

    def __call__(self, api, call, default):
        try:
            return call()
        except Exception as error:
            self.errors.append(PollError.of(api, error))
            return default


def poll_cluster(admin, ts_ms, all_partitions=False, topics=(), described=None, throttles=True, listed=None):
    """The cluster part. `described`: DescribeCluster's answer when the caller has it already (`poll`
    asks first, to know whose log dirs to read). `all_partitions` adds metadata and throttle configs
    of every topic (the streaming job needs them to tell COMPLETED from CANCELLED and to see leaked
    throttles); `topics` adds the named topics (the CLI's --reassignment-json-file). `throttles=False`
    skips DescribeConfigs (the progress report shows none, and then needs no DescribeConfigs ACL).
    `listed`: ListPartitionReassignments rows to take instead of asking (the job controller's last list while the
    controller answers nobody: streaming.spark.source), counted as a retry of that API."""
    started = time.monotonic()
    requests_before = admin.requests
    attempt = _Attempts()
    cluster_id, brokers = described or describe_cluster(admin)
    if listed is None:
        reassignments = attempt(LIST_REASSIGNMENTS, admin.list_reassignments, [])
    else:
        reassignments = [dict(row) for row in listed]
    moving = {(r["topic"], r["partition"]) for r in reassignments}
    wanted_topics = sorted({t for t, _ in moving} | set(topics))
    partitions = []
    if all_partitions or wanted_topics:
        partitions = attempt(METADATA, lambda: admin.describe_partitions(None if all_partitions else wanted_topics), [])

    alive = alive_brokers(brokers)
    leaders = {(p["topic"], p["partition"]): p["leader"] for p in partitions
               if p["leader"] >= 0 and ((p["topic"], p["partition"]) in moving or p["topic"] in topics)}
    throttle_topics = sorted({p["topic"] for p in partitions}) if all_partitions else wanted_topics
    # Both wait mostly on brokers; kafka-python's admin client serves calls from several threads.
    with ThreadPoolExecutor(max_workers=2) as pool:
        offsets_call = pool.submit(attempt, LIST_OFFSETS, partial(admin.list_offsets, leaders), [])
        # Only alive brokers: a fenced broker fails the whole DescribeConfigs (UnknownBrokerIdError), topics too.
        throttles_call = pool.submit(attempt, DESCRIBE_CONFIGS,
                                     partial(admin.describe_throttles, throttle_topics if throttles else [],
                                             alive if throttles else []), ([], []))
    topic_throttles, broker_throttles = throttles_call.result()
    return Snapshot(
        ts_ms=ts_ms, cluster_id=cluster_id,
        tables={
            "brokers": table("brokers", brokers),
            "reassignments": table("reassignments", reassignments),
            "partitions": table("partitions", partitions),
            "offsets": table("offsets", offsets_call.result()),
            "topic_throttles": table("topic_throttles", topic_throttles),
            "broker_throttles": table("broker_throttles", broker_throttles),
        },
        requests=admin.requests - requests_before, errors=tuple(attempt.errors),
        duration_s=time.monotonic() - started, retries={LIST_REASSIGNMENTS: 1} if listed is not None else {})


def poll_log_dirs(admin, broker, ts_ms):
    """The log-dirs part of one broker: every log it holds, and whether it answered."""
    started = time.monotonic()
    requests_before = admin.requests
    attempt = _Attempts()
    answer = attempt(DESCRIBE_LOG_DIRS, partial(admin.log_dirs_answer, broker), None)
    rows, offline = answer if answer is not None else (None, [])
    return Snapshot(
        ts_ms=ts_ms, cluster_id="",
        tables={"log_dirs": table("log_dirs", rows or []), "offline_log_dirs": table("offline_log_dirs", offline),
                "log_dirs_answered": table("log_dirs_answered", [] if rows is None else [{"broker": broker}])},
        requests=admin.requests - requests_before, errors=tuple(attempt.errors),
        duration_s=time.monotonic() - started)


def relevant_log_dirs(snapshot, topics=()):
    """The snapshot with only the logs progress needs: moving partitions (their leaders' logs too), partitions
    with a future log (an intra-broker move: the future log and the current one it copies, its target) and the
    topics asked about."""
    logs = snapshot["log_dirs"]
    moving = {(row["topic"], row["partition"]) for row in snapshot["reassignments"]}
    moving |= {(row["topic"], row["partition"]) for row in logs if row["is_future"]}
    wanted = set(topics)
    logs = [row for row in logs if row["topic"] in wanted or (row["topic"], row["partition"]) in moving]
    return replace(snapshot, tables={**snapshot.tables, "log_dirs": logs})


def poll(admin, now_ms=None, all_partitions=False, topics=(), throttles=True, listed=None):
    """A whole Snapshot in this process (the CLI, the job's executor): the cluster part and every alive broker's
    log-dirs part concurrently. Arguments as `poll_cluster`."""
    started = time.monotonic()
    ts_ms = int(time.time() * 1000) if now_ms is None else now_ms
    requests_before = admin.requests
    retried_before = Counter(getattr(admin, "retried", {}))
    described = describe_cluster(admin)
    alive = alive_brokers(described[1])
    with ThreadPoolExecutor(max_workers=len(alive) + 1) as pool:
        log_dir_parts = [pool.submit(poll_log_dirs, admin, broker, ts_ms) for broker in alive]
        cluster = poll_cluster(admin, ts_ms, all_partitions, topics, described, throttles, listed)
        parts = [cluster] + [part.result() for part in log_dir_parts]
    # The parts share one admin here, so each part's request count overlaps the others': count them once.
    retries = Counter(getattr(admin, "retried", {}))
    retries.subtract(retried_before)
    retries.update(cluster.retries)
    whole = combine(parts, ts_ms, time.monotonic() - started)
    whole = replace(whole, requests=admin.requests - requests_before,
                    retries={api: n for api, n in retries.items() if n > 0},
                    tables={**whole.tables, "brokers": without_gone(whole["brokers"], admin.unanswering(),
                                                                     admin.unanswered_since())})
    return relevant_log_dirs(whole, topics)


def strict_poll(admin, topics, needs=DECISION_APIS, throttles=True):
    """A poll of the named topics that had every answer of `needs` (else ClusterError, exit 3: a decision
    or a report on a poll missing one would be wrong, not incomplete; InternalError, exit 4, when what failed was
    a bug). `throttles` as `poll`."""
    snapshot = poll(admin, topics=sorted(set(topics)), throttles=throttles)
    for error in snapshot.errors:
        if error.api in needs:
            message = error.message if error.message.startswith(error.api) else f"{error.api}: {error.message}"
            raise InternalError(message) if error.bug else ClusterError(message)
    return snapshot
