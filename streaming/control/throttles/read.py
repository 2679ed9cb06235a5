"""The janitor's reads: the cluster as a Snapshot taken now, through the admin door it is given
(streaming.cluster.admin.ClusterReader). Raises on any failed request; the caller decides what a failure means."""

import time

from streaming.vocabulary.throttle_actions import ALL, ALTER_LOG_DIRS
from streaming.vocabulary.config_keys import TOPIC
from streaming.vocabulary.snapshot import Snapshot, alive_brokers, table, without_gone
from streaming.vocabulary.states import OwnershipState


def read_cluster(admin, topics, log_dir_brokers=(), now_ms=None):
    """A Snapshot read now: brokers, reassignments, throttle configs of `topics` and of every alive broker,
    and the log dirs of `log_dir_brokers` (future logs only). Raises on any failed request."""
    cluster_id, brokers = admin.describe_cluster()
    reassignments = admin.list_reassignments()
    alive = alive_brokers(brokers)
    topic_rows, broker_rows = admin.describe_throttles(sorted(set(topics)), alive)
    log_dirs, answered = [], set()
    for broker in sorted(set(log_dir_brokers) & set(alive)):
        log_dirs += [r for r in admin.describe_log_dirs(broker) if r["is_future"]]
        answered.add(broker)
    # A broker that closed its connection during this read was asked nothing more: not alive, like in a poll.
    brokers = without_gone(brokers, admin.unanswering())
    return Snapshot(
        ts_ms=int(time.time() * 1000) if now_ms is None else now_ms, cluster_id=cluster_id,
        tables={"brokers": table("brokers", brokers),
                "log_dirs_answered": table("log_dirs_answered", [{"broker": b} for b in sorted(answered)]),
                "reassignments": table("reassignments", reassignments),
                "topic_throttles": table("topic_throttles", topic_rows),
                "broker_throttles": table("broker_throttles", broker_rows),
                "log_dirs": table("log_dirs", log_dirs)})


def read_for_plan(admin, records, policy, hint):
    """What a plan needs, read now: the topics active `records` claim and the brokers whose alter-log-dirs
    rate they claim; under `all` also the topics and brokers of the `hint` (the batch's plan), or of the
    whole cluster when there is none (a sweep)."""
    topics = {c.topic for r in records if r.state != OwnershipState.DONE for c in r.entries}
    if policy.cleanup == ALL:
        if hint is None:
            topics |= {row["topic"] for row in admin.describe_partitions(None)}
        else:
            topics |= {a.name for a in hint if a.scope == TOPIC}
    log_dir_brokers = {c.broker for r in records if r.state != OwnershipState.DONE for c in r.rates if c.kind == ALTER_LOG_DIRS}
    if policy.cleanup == ALL:
        log_dir_brokers |= {int(a.name) for a in (hint or ()) if a.kind == ALTER_LOG_DIRS}
        if hint is None:
            log_dir_brokers |= {b["broker"] for b in admin.describe_cluster()[1]}
    return read_cluster(admin, topics, log_dir_brokers)
