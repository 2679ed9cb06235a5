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

# Kafka's API keys (org.apache.kafka.common.protocol.ApiKeys) of the calls whose presence in a broker's
# ApiVersions answer decides what this tool can do with it.
API_KEYS = {ALTER_REASSIGNMENTS: 45, LIST_REASSIGNMENTS: 46, DESCRIBE_CLUSTER: 60, LIST_OFFSETS: 2}
# ListOffsets answers the leader's local log start (EARLIEST_LOCAL_TIMESTAMP, -4) from this version on (KIP-405,
# Kafka 3.6): with tiered storage the earliest offset (-2) counts the segments in remote storage too.
EARLIEST_LOCAL_SINCE = 8
# Without these a reassignment can be neither started, cancelled nor seen (KIP-455, Kafka 2.4): nothing works.
REASSIGNMENT_APIS = (LIST_REASSIGNMENTS, ALTER_REASSIGNMENTS)
REASSIGNMENT_FLOOR = "2.4"


def below_the_floor(api_versions, seen_as=None):
    """The one line refusing a cluster whose ApiVersions answer (`api_versions`: API key -> (min, max)) lacks
    KIP-455's calls, or None when it has them. `seen_as`: the version the client library infers, (2, 3)."""
    missing = [api for api in REASSIGNMENT_APIS if API_KEYS[api] not in api_versions]
    if not missing:
        return None
    version = f" (it answers as Kafka {'.'.join(map(str, seen_as))})" if seen_as else ""
    return (f"Kafka {REASSIGNMENT_FLOOR} or newer is needed: the cluster lacks {' and '.join(missing)} "
            f"(KIP-455){version}; nothing was changed")
