"""The Kafka progress topic: created if absent, written with an idempotent producer.

Keys and values come from sinks.records; this module only talks to Kafka. A batch's records are
flushed before foreachBatch returns, so Spark commits a batch only after its records are durable; a
replayed batch rewrites its records with the same batch id (the later ones supersede).
"""

RETENTION_MS = 7 * 24 * 3600 * 1000
PARTITIONS = 3
CONFIG = {"cleanup.policy": "compact,delete", "retention.ms": str(RETENTION_MS)}


def ensure_progress_topic(admin, name):
    """Create the progress topic (compacted plus time retention, RF min(3, brokers)) unless it exists,
    through the admin door (streaming.cluster.admin), which retries and waits for its leaders."""
    return admin.ensure_topic(name, PARTITIONS, CONFIG)


class ProgressTopicWriter:
    """The progress topic's writer: records through the admin door's producer (streaming.cluster.admin)."""

    def __init__(self, admin, topic):
        self.admin, self.topic = admin, topic

    def write(self, keyed_values, timeout_s=30.0):
        """Write (key, encoded value) pairs and wait until all are acknowledged; raise if any failed."""
        self.admin.produce(self.topic, keyed_values, timeout_s)
