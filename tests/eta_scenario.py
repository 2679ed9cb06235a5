"""Three partitions of different sizes moving into one broker under one throttle, and how far the ETAs the
job reported were from the real remaining time. Shared by tests/test_job_cluster.py and bench/eta.py; its bound
and `copying_etas` judge the ETAs of the tests of moves between log dirs and of tiered storage too.

Each partition is a one-partition topic on broker SOURCE gaining a replica on DESTINATION; the leader rate
on SOURCE and the follower rate on DESTINATION are both RATE, every move listed in the topics' throttled
replicas. The actual finish of a move is the first moment (polled every FINISH_POLL_S) the destination is in
the partition's ISR. An ETA counts once the replica passed JUDGED_FROM of its bytes and while it was not in
the ISR; it is within the bound when |ETA - actual remaining| <= max(BOUND_SHARE x actual remaining,
BOUND_FLOOR_S). Today's per-replica ETA (remaining / own copy rate; these moves' leaders do not grow) is
recomputed from the same records, so both are judged on the same moves in the same run.
"""

import statistics
import threading
import time

from confluent_kafka.admin import AdminClient
from kafka import TopicPartition

SOURCE, DESTINATION = 1, 3
SIZES_MB = (10, 20, 30)
RATE = 2_000_000  # bytes/s shared by the three: the last finishes after ~30 s
JUDGED_FROM = 0.25
BOUND_SHARE, BOUND_FLOOR_S = 0.25, 5.0
FINISH_POLL_S = 0.25
LEADER_KEY, FOLLOWER_KEY = "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"
LEADER_RATE, FOLLOWER_RATE = "leader.replication.throttled.rate", "follower.replication.throttled.rate"


def create_topics(cluster, prefix, sizes_mb=SIZES_MB):
    topics = [cluster.unique_topic(f"{prefix}-{mb}mb") for mb in sizes_mb]
    for topic, mb in zip(topics, sizes_mb):
        cluster.create_topic(topic, {0: [SOURCE]}, megabytes=mb)
    return topics


def start_moves(cluster, topics, rate=RATE):
    """Throttles first (every move listed), then one reassignment for the three."""
    cluster.set_configs({t: {LEADER_KEY: f"0:{SOURCE}", FOLLOWER_KEY: f"0:{DESTINATION}"} for t in topics},
                        {SOURCE: {LEADER_RATE: rate}, DESTINATION: {FOLLOWER_RATE: rate}})
    admin = cluster.admin()
    try:
        admin.alter_partition_reassignments({TopicPartition(t, 0): [SOURCE, DESTINATION] for t in topics})
    finally:
        admin.close()


def clear_throttles(cluster, topics):
    cluster.set_configs({t: {LEADER_KEY: None, FOLLOWER_KEY: None} for t in topics},
                        {SOURCE: {LEADER_RATE: None}, DESTINATION: {FOLLOWER_RATE: None}})


class FinishWatch:
    """A thread noting when DESTINATION first shows in each topic's partition 0 ISR (time.time() seconds)."""

    def __init__(self, bootstrap, topics):
        self.topics, self.finished = list(topics), {}
        self._admin = AdminClient({"bootstrap.servers": bootstrap})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set() and len(self.finished) < len(self.topics):
            now = time.time()
            try:
                metadata = self._admin.list_topics(timeout=5)
            except Exception:  # a slow answer on the loaded machine: ask again
                continue
            for topic in self.topics:
                found = metadata.topics.get(topic)
                if topic not in self.finished and found and 0 in found.partitions \
                        and DESTINATION in found.partitions[0].isrs:
                    self.finished[topic] = now
            self._stop.wait(FINISH_POLL_S)

    def done(self):
        return len(self.finished) == len(self.topics)

    def stop(self):
        self._stop.set()
        self._thread.join(10)


def old_eta(record):
    """Today's per-replica ETA from a replica record: remaining bytes over its own copy rate."""
    rate = record["rate_bytes_per_sec"]
    if record["numerator"] is None or record["denominator"] is None or not rate or rate <= 0:
        return None
    return max(record["denominator"] - record["numerator"], 0) / rate


def judged(records, finished):
    """[(topic, actual remaining s, new ETA, old ETA)] of the replica records (key topic:0:DESTINATION) that
    count: past JUDGED_FROM, not in the ISR, before the actual finish. The latest record of a batch wins."""
    out = []
    for topic, finish in finished.items():
        key = f"{topic}:0:{DESTINATION}"
        by_batch = {r["batch_id"]: r for k, r in records if k == key}
        for record in sorted(by_batch.values(), key=lambda r: r["batch_id"]):
            actual = finish - record["ts_ms"] / 1000.0
            if record["in_isr"] or (record["progress"] or 0.0) < JUDGED_FROM or actual <= 0:
                continue
            out.append((topic, actual, record["eta_seconds"], old_eta(record)))
    return out


def copying_etas(records, finished):
    """[(actual remaining s, ETA)] of one move's records written while it copied, past JUDGED_FROM, before its end
    (`finished`, Unix seconds): the ETAs a move between log dirs is judged by."""
    return [(finished - r["ts_ms"] / 1000.0, r["eta_seconds"]) for r in records
            if r["state"] == "COPYING" and (r["progress"] or 0) >= JUDGED_FROM and r["ts_ms"] / 1000.0 < finished]


def within_bound(actual, eta):
    """Whether an ETA is within the bound of the actual remaining seconds (module docstring)."""
    return eta is not None and abs(eta - actual) <= max(BOUND_SHARE * actual, BOUND_FLOOR_S)


def errors(rows, column):
    """(relative errors, number within the bound, number judged, nulls) of one ETA column (2: new, 3: old)."""
    relative, within, nulls = [], 0, 0
    for row in rows:
        actual, eta = row[1], row[column]
        if eta is None:
            nulls += 1
            continue
        relative.append(abs(eta - actual) / actual)
        within += within_bound(actual, eta)
    return relative, within, len(rows), nulls


def summary(rows, column):
    relative, within, total, nulls = errors(rows, column)
    p50 = statistics.median(relative) if relative else None
    worst = max(relative) if relative else None
    return {"within": within, "judged": total, "nulls": nulls, "p50": p50, "max": worst}


def describe(name, s):
    def pct(v):
        return "-" if v is None else f"{100 * v:.0f}%"
    return (f"{name}: {s['within']} of {s['judged']} within bound, {s['nulls']} null, "
            f"relative error p50 {pct(s['p50'])} max {pct(s['max'])}")
