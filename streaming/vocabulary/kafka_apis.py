"""The Kafka APIs this project calls, by the names poll errors, retry counts, metrics and messages use,
and the sets of them that a poll or a decision cannot do without."""

DESCRIBE_CLUSTER = "DescribeCluster"
LIST_REASSIGNMENTS = "ListPartitionReassignments"
METADATA = "Metadata"
DESCRIBE_LOG_DIRS = "DescribeLogDirs"
LIST_OFFSETS = "ListOffsets"
DESCRIBE_CONFIGS = "DescribeConfigs"
ALTER_CONFIGS = "IncrementalAlterConfigs"
ALTER_REASSIGNMENTS = "AlterPartitionReassignments"
ALTER_LOG_DIRS = "AlterReplicaLogDirs"
CREATE_TOPICS = "CreateTopics"
PRODUCE = "Produce"
READ = "Fetch"

# Without these two answers a move cannot be told from a finished or cancelled one: a poll missing
# either must not update progress or history (nor decide a cancel).
REQUIRED_APIS = (LIST_REASSIGNMENTS, METADATA)
# A decision about throttles (execute, verify, the janitor) also needs who is alive and what is set: a
# poll missing any of these decides nothing.
DECISION_APIS = (DESCRIBE_CLUSTER, *REQUIRED_APIS, DESCRIBE_CONFIGS)
# Every call a poll makes, in the order the metrics list them.
POLL_APIS = (DESCRIBE_CLUSTER, LIST_REASSIGNMENTS, METADATA, DESCRIBE_LOG_DIRS, LIST_OFFSETS, DESCRIBE_CONFIGS)
