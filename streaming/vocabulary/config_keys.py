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


def throttle_config_key(scope, kind):
    """The config key of a throttle kind (`leader`, `follower`, `alter_log_dirs`) at a scope."""
    return (TOPIC_THROTTLE_KEYS if scope == TOPIC else BROKER_THROTTLE_KEYS)[kind]
