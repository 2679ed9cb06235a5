"""Kafka's own limits on what an operator may name or ask for, as the brokers enforce them.

Checked locally (streaming.vocabulary.reassignment_file, streaming.cli, the commands) so that a value Kafka would
refuse - or one our client would fail to encode - is bad input (exit 2) before any request is sent.
"""

import re

INT32_MAX = 2**31 - 1  # partition ids and broker ids are int32 on the wire
LONG_MAX = 2**63 - 1  # throttle rates are Java longs (ConfigDef.Type.LONG)
PORT_MAX = 65535

# org.apache.kafka.common.internals.Topic: legal characters, at most 249 of them, not "." or "..".
TOPIC_NAME_MAX_LENGTH = 249
TOPIC_NAME_PATTERN = re.compile(r"[a-zA-Z0-9._-]+")
TOPIC_NAME_RESERVED = frozenset({".", ".."})


def topic_name_problem(name):
    """Why `name` is not a legal Kafka topic name, or None when it is."""
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > TOPIC_NAME_MAX_LENGTH:
        return f"is {len(name)} characters long (Kafka allows at most {TOPIC_NAME_MAX_LENGTH})"
    if name in TOPIC_NAME_RESERVED:
        return "cannot be '.' or '..'"
    if not TOPIC_NAME_PATTERN.fullmatch(name):
        return "may contain only ASCII letters, digits, '.', '_' and '-'"
    return None


# Broker defaults the throttle budget model (streaming.core.budget) reads; the poll does not read them.
REPLICA_FETCH_MAX_BYTES = 1_048_576  # replica.fetch.max.bytes: one fetch of a partition carries up to this
REPLICATION_QUOTA_WINDOW_NUM = 11  # replication.quota.window.num: samples the throttle averages over
REPLICATION_QUOTA_WINDOW_SIZE_S = 1  # replication.quota.window.size.seconds
REPLICA_LAG_TIME_MAX_MS = 30_000  # replica.lag.time.max.ms: a follower this far behind is not in the ISR
# The rate a throttle lets through however low it is set (docs/progress.md "Kafka's replication throttle": a 1 B/s
# follower throttle copied ~1 MB per quota window): a fetch passes while the windowed average is under the rate,
# and carries a whole fetch. About 95 KB/s with the defaults.
THROTTLE_FLOOR_BYTES_PER_S = REPLICA_FETCH_MAX_BYTES / (REPLICATION_QUOTA_WINDOW_NUM * REPLICATION_QUOTA_WINDOW_SIZE_S)
