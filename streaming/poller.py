"""One poll of the cluster: every fact the progress core needs, in O(brokers) admin requests.

DescribeCluster, ListPartitionReassignments, Metadata, then concurrently DescribeLogDirs once per alive
broker, ListOffsets (earliest and latest, one request per leader each) and DescribeConfigs for throttles.
A failing call is recorded as a PollError and its rows are missing (a broker that did not answer
DescribeLogDirs is marked `answered=False`, so its replicas read as unknown, not as empty).
Only DescribeCluster failing fails the poll: without it nothing is known, not even who is alive.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from streaming.errors import from_kafka_error
from streaming.snapshot import PollError, Snapshot, table


def poll(admin, now_ms=None, all_partitions=False, topics=()):
    """A Snapshot of the cluster. `all_partitions` adds metadata and throttle configs of every topic
    (the streaming job needs them to tell COMPLETED from CANCELLED and to see leaked throttles);
    `topics` adds the named topics (the CLI's --reassignment-json-file)."""
    started = time.monotonic()
    requests_before = admin.requests
    errors = []

    def attempt(api, call, default):
        try:
            return call()
        except Exception as error:  # one failed API must not lose the rest of the poll
            errors.append(PollError(api, f"{type(error).__name__}: {error}"))
            return default

    try:
        cluster_id, brokers = admin.describe_cluster()
    except Exception as error:
        raise from_kafka_error(error, "describing the cluster") from error
    reassignments = attempt("ListPartitionReassignments", admin.list_reassignments, [])
    moving = {(r["topic"], r["partition"]) for r in reassignments}
    wanted_topics = sorted({t for t, _ in moving} | set(topics))
    partitions = []
    if all_partitions or wanted_topics:
        partitions = attempt("Metadata", lambda: admin.describe_partitions(None if all_partitions else wanted_topics), [])

    # The calls below need only what is known by now and wait mostly on brokers: run them concurrently
    # (kafka-python's admin client serves calls from several threads over its IO thread).
    alive = sorted(b["broker"] for b in brokers if b["alive"])
    offsets_wanted = {(p["topic"], p["partition"]): p["leader"] for p in partitions
                      if p["leader"] >= 0 and ((p["topic"], p["partition"]) in moving or p["topic"] in topics)}
    throttle_topics = sorted({p["topic"] for p in partitions}) if all_partitions else wanted_topics
    with ThreadPoolExecutor(max_workers=len(alive) + 2) as pool:
        log_dir_calls = {broker: pool.submit(attempt, "DescribeLogDirs", partial(admin.describe_log_dirs, broker), None)
                         for broker in alive}
        offsets_call = pool.submit(attempt, "ListOffsets", partial(admin.list_offsets, offsets_wanted), [])
        # Only alive brokers: a fenced broker fails the whole DescribeConfigs (UnknownBrokerIdError), topics too.
        throttles_call = pool.submit(attempt, "DescribeConfigs",
                                     partial(admin.describe_throttles, throttle_topics, alive), ([], []))
    log_dirs, answered = [], set()
    for broker, call in log_dir_calls.items():
        rows = call.result()
        if rows is not None:
            answered.add(broker)
            # Keep what the progress needs: moving partitions (their leaders' logs too), future logs
            # (intra-broker moves), and the topics asked about.
            log_dirs += [r for r in rows if r["is_future"] or (r["topic"], r["partition"]) in moving
                         or r["topic"] in topics]
    offsets = offsets_call.result()
    topic_throttles, broker_throttles = throttles_call.result()

    broker_rows = [{"broker": b["broker"], "alive": b["alive"], "answered": b["broker"] in answered} for b in brokers]
    return Snapshot(
        ts_ms=int(time.time() * 1000) if now_ms is None else now_ms,
        cluster_id=cluster_id,
        tables={
            "reassignments": table("reassignments", reassignments),
            "partitions": table("partitions", partitions),
            "log_dirs": table("log_dirs", log_dirs),
            "offsets": table("offsets", offsets),
            "brokers": table("brokers", broker_rows),
            "topic_throttles": table("topic_throttles", topic_throttles),
            "broker_throttles": table("broker_throttles", broker_throttles),
        },
        requests=admin.requests - requests_before,
        errors=tuple(errors),
        duration_s=time.monotonic() - started,
    )
