"""The Kafka progress topic: its shape, and its creation.

Keys and values come from sinks.records; the records are written through the one writer's publisher of this topic
(streaming.control.applier.Publisher: an idempotent producer), through the progress spool (sinks.spool) when the
checkpoint location is local. A batch's records are durable (fsynced in the spool, or acknowledged by Kafka) before
foreachBatch returns, so Spark commits a batch only after its records are durable; a replayed batch rewrites its
records with the same batch id (the later ones supersede).
"""

RETENTION_MS = 7 * 24 * 3600 * 1000
PARTITIONS = 3
CONFIG = {"cleanup.policy": "compact,delete", "retention.ms": str(RETENTION_MS)}


def ensure_progress_topic(applier, name):
    """Create the progress topic (compacted plus time retention, RF min(3, brokers)) unless it exists,
    through the one writer (`applier`: streaming.control.applier.Applier), which waits for its leaders."""
    return applier.create_topic(name, PARTITIONS, CONFIG)
