"""The Kafka progress topic: created if absent, written with an idempotent producer.

Keys and values come from sinks.records; this module only talks to Kafka. A batch's records are
flushed before foreachBatch returns, so Spark commits a batch only after its records are durable; a
replayed batch rewrites its records with the same batch id (the later ones supersede).
"""

from confluent_kafka import Producer

from streaming import client_config
from streaming.errors import from_kafka_error

RETENTION_MS = 7 * 24 * 3600 * 1000
PARTITIONS = 3
CONFIG = {"cleanup.policy": "compact,delete", "retention.ms": str(RETENTION_MS)}


def ensure_progress_topic(admin, name):
    """Create the progress topic (compacted plus time retention, RF min(3, brokers)) unless it exists,
    through the admin door (streaming.admin), which retries and waits for its leaders."""
    return admin.ensure_topic(name, PARTITIONS, CONFIG)


class ProgressTopicWriter:
    def __init__(self, bootstrap, command_config, topic):
        settings = client_config.confluent_settings(command_config, bootstrap)
        settings.update({"enable.idempotence": True, "linger.ms": 20, "compression.type": "lz4"})
        self._producer = Producer(settings)
        self.topic = topic

    def write(self, keyed_values, timeout_s=30.0):
        """Write (key, encoded value) pairs and wait until all are acknowledged; raise if any failed."""
        failures = []

        def delivered(error, _message):
            if error is not None:
                failures.append(error)

        for key, value in keyed_values:
            while True:
                try:
                    self._producer.produce(self.topic, key=key.encode(), value=value, on_delivery=delivered)
                    break
                except BufferError:  # local queue full: let deliveries drain, then retry this record
                    self._producer.poll(0.1)
            self._producer.poll(0)
        if self._producer.flush(timeout_s) != 0:
            raise from_kafka_error(TimeoutError("not acknowledged in time"), f"writing to {self.topic}")
        if failures:
            raise from_kafka_error(failures[0], f"writing to {self.topic}")

    def close(self):
        self._producer.flush(10)
