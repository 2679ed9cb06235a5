"""The replica row, defined once: the columns a tracked replica move carries from the progress core through
history and the stateful operator to the sinks, each with its Spark SQL type and whether it may be null.

A row is a dict of plain Python values; null is None (never NaN). The core adds the facts it classifies
on (CORE_FACTS); they stay inside the core and its state step.
"""

KEY = ["topic", "partition", "broker", "intra_broker"]
PARTITION_KEY = ["topic", "partition"]

# name -> (Spark SQL type, nullable), in the order the stateful operator emits them.
FIELDS = {
    "topic": ("string", False),
    "partition": ("int", False),
    "broker": ("int", False),
    "intra_broker": ("boolean", False),
    "numerator": ("long", True),  # null: the destination did not answer DescribeLogDirs
    "denominator": ("long", True),  # null: the leader's size is not known
    "progress": ("double", True),
    "in_isr": ("boolean", False),
    "leader": ("int", False),
    "offset_lag": ("long", True),
    "messages_behind_estimate": ("double", True),
    "copy_rate": ("double", True),
    "leader_rate": ("double", True),
    "eta_seconds": ("double", True),
    "stalled_seconds": ("double", True),
    "state": ("string", True),
    "previous_state": ("string", True),
    "state_since_ms": ("long", False),
    "transition": ("boolean", False),
}
CORE_FACTS = ["destination_alive", "leader_alive", "finished", "in_replica_set", "still_reassigning",
              "being_removed"]


def key_of(row):
    """A row's (topic, partition, broker, intra_broker)."""
    return row["topic"], row["partition"], row["broker"], row["intra_broker"]


def partition_of(row):
    return row["topic"], row["partition"]
