"""The replica row, defined once: the columns a tracked replica move carries from the progress core through
history and the stateful operator to the sinks, each with its kind.

Rows travel as columns (streaming.vocabulary.columns: one numpy array per column). A column's kind says how it is
held there, and how the job ships it as Arrow (streaming.spark.codec):
- STRING: text (object array); TEXT: text that may be null (None);
- INT: a whole number that is never null (ids, epoch milliseconds);
- COUNT: bytes or offsets that may be unknown, held as floats with NaN for null (exact below 2**53 bytes) and
  written as whole numbers;
- FLOAT: a measure that may be unknown (NaN for null);
- BOOL: a yes/no fact, never null;
- STATE: a streaming.vocabulary.states.ReplicaState held as its value (NO_STATE for none), written by name.
The core adds the facts it classifies on (CORE_FACTS); they stay inside the core and its state step.
"""

STRING, TEXT, INT, COUNT, FLOAT, BOOL, STATE = "string", "text", "int", "count", "float", "bool", "state"

KEY = ["topic", "partition", "broker", "intra_broker"]
PARTITION_KEY = ["topic", "partition"]

# name -> kind, in the order the stateful operator emits them.
FIELDS = {
    "topic": STRING,
    "partition": INT,
    "broker": INT,
    "intra_broker": BOOL,
    "numerator": COUNT,  # null: the destination did not answer DescribeLogDirs
    "denominator": COUNT,  # null: the leader's size is not known
    "progress": FLOAT,
    "in_isr": BOOL,
    "leader": INT,  # -1: no leader
    "offset_lag": COUNT,
    "messages_behind_estimate": FLOAT,
    "remote_bytes": COUNT,  # the partition's bytes in tiered storage, never copied; null: not known
    "copy_rate": FLOAT,
    "leader_rate": FLOAT,
    "eta_seconds": FLOAT,
    "stalled_seconds": FLOAT,
    "state": STATE,
    "previous_state": STATE,
    "state_since_ms": INT,
    "transition": BOOL,
}
# *_alive: the broker answered this poll and Kafka lists it alive; *_unobserved: it did not answer the job (held as
# unresponsive: streaming.cluster.held) while Kafka lists it alive.
CORE_FACTS = {"destination_alive": BOOL, "leader_alive": BOOL, "destination_unobserved": BOOL,
              "leader_unobserved": BOOL, "finished": BOOL, "in_replica_set": BOOL, "still_reassigning": BOOL,
              "being_removed": BOOL}
# What the budget model and the reasons add to a batch's replica rows (streaming.core.diagnosis).
DIAGNOSIS = {"reason_code": TEXT, "reason": TEXT}


def key_of(row):
    """A row's (topic, partition, broker, intra_broker)."""
    return row["topic"], row["partition"], row["broker"], row["intra_broker"]


def partition_of(row):
    return row["topic"], row["partition"]
