"""Kafka configuration keys this project reads or writes: the throttle configs (KIP-73, KIP-179)."""

TOPIC_LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
TOPIC_FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"

BROKER_LEADER_THROTTLE_RATE = "leader.replication.throttled.rate"
BROKER_FOLLOWER_THROTTLE_RATE = "follower.replication.throttled.rate"
BROKER_ALTER_LOG_DIRS_THROTTLE_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"

# Throttle kinds as they appear in metric labels and throttle records, mapped to their config keys.
TOPIC_THROTTLE_KEYS = {
    "leader": TOPIC_LEADER_THROTTLED_REPLICAS,
    "follower": TOPIC_FOLLOWER_THROTTLED_REPLICAS,
}
BROKER_THROTTLE_KEYS = {
    "leader": BROKER_LEADER_THROTTLE_RATE,
    "follower": BROKER_FOLLOWER_THROTTLE_RATE,
    "alter_log_dirs": BROKER_ALTER_LOG_DIRS_THROTTLE_RATE,
}

ALL_REPLICAS = "*"  # a throttled-replicas value that throttles every replica of the topic

# Where a throttle config lives, and how IncrementalAlterConfigs changes it.
TOPIC, BROKER = THROTTLE_SCOPES = ("topic", "broker")
SUBTRACT, APPEND, DELETE, SET = OPS = ("subtract", "append", "delete", "set")


# Kafka before 3.3.2 and 3.4.0 APPENDs to a list config that has no value as ",p:b" (apache/kafka#12503), a list
# its own brokers then fail to parse: the topic's throttle does nothing. Measured on 2.8.2: ",0:1" after one
# APPEND, and a 5 MB move under a 500 KB/s throttle finished in under 2 s; 3.6.2 and 3.9.1 append "0:1".
# Against brokers the client library sees as older than this (it infers the version from ApiVersions, which do
# not tell 3.3.2 from 3.3.1), the door SETs the list it read with the entries appended instead.
APPEND_WITHOUT_A_LEADING_COMMA_FROM = (3, 4)


def appends_lead_with_a_comma(broker_version):
    """Whether a broker of `broker_version` ((2, 8), as the client library infers it) may APPEND ",p:b"."""
    return tuple(broker_version) < APPEND_WITHOUT_A_LEADING_COMMA_FROM


def throttle_config_key(scope, kind):
    """The config key of a throttle kind (`leader`, `follower`, `alter_log_dirs`) at a scope."""
    return (TOPIC_THROTTLE_KEYS if scope == TOPIC else BROKER_THROTTLE_KEYS)[kind]
