"""The replica row, defined once: the columns a tracked replica move carries from the progress core through
history and the stateful operator to the sinks, each with its pandas dtype and its Spark SQL type.

The core adds the facts it classifies on (CORE_FACTS); they stay inside the core and its state step.
"""

KEY = ["topic", "partition", "broker", "intra_broker"]
PARTITION_KEY = ["topic", "partition"]

# name -> (pandas dtype, Spark SQL type), in the order the stateful operator emits them.
FIELDS = {
    "topic": ("object", "string"),
    "partition": ("int32", "int"),
    "broker": ("int32", "int"),
    "intra_broker": ("bool", "boolean"),
    "numerator": ("Int64", "long"),  # null: the destination did not answer DescribeLogDirs
    "denominator": ("Int64", "long"),  # null: the leader's size is not known
    "progress": ("float64", "double"),
    "in_isr": ("bool", "boolean"),
    "leader": ("int32", "int"),
    "offset_lag": ("Int64", "long"),
    "messages_behind_estimate": ("float64", "double"),
    "copy_rate": ("float64", "double"),
    "leader_rate": ("float64", "double"),
    "eta_seconds": ("float64", "double"),
    "stalled_seconds": ("float64", "double"),
    "state": ("object", "string"),
    "previous_state": ("object", "string"),
    "state_since_ms": ("int64", "long"),
    "transition": ("bool", "boolean"),
}
CORE_FACTS = {"destination_alive": "bool", "leader_alive": "bool", "finished": "bool", "in_replica_set": "bool",
              "still_reassigning": "bool", "being_removed": "bool"}
# Columns whose dtype cannot hold a null: restored after a trip through a frame shared with other rows.
NOT_NULL = {name: dtype for name, (dtype, _) in FIELDS.items() if dtype in ("int32", "int64", "bool")}


def pandas_dtypes(columns):
    """{column: pandas dtype} for replica-row and core-fact columns."""
    known = {**{name: dtype for name, (dtype, _) in FIELDS.items()}, **CORE_FACTS}
    return {c: known[c] for c in columns}


def spark_fields():
    """'name type, ...' of the replica row, for a Spark DDL schema."""
    return ", ".join(f"{name} {spark}" for name, (_, spark) in FIELDS.items())
