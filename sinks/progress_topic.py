"""The Kafka progress topic: created if absent, written with an idempotent producer.

Keys and values come from sinks.records; this module only talks to Kafka. A batch's records are
flushed before foreachBatch returns, so Spark commits a batch only after its records are durable; a
replayed batch rewrites its records with the same batch id (the later ones supersede).
"""

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streaming import client_config
from streaming.errors import ClusterError

RETENTION_MS = 7 * 24 * 3600 * 1000
PARTITIONS = 3


def ensure_topic(bootstrap, command_config, name, timeout_s=10.0):
    """Create the progress topic (compacted plus time retention, RF min(3, brokers)) unless it exists."""
    admin = AdminClient(client_config.confluent_settings(command_config, bootstrap))
    metadata = admin.list_topics(timeout=timeout_s)
    if name in metadata.topics:
        return False
    replication = min(3, len(metadata.brokers))
    topic = NewTopic(name, num_partitions=PARTITIONS, replication_factor=replication,
                     config={"cleanup.policy": "compact,delete", "retention.ms": str(RETENTION_MS)})
    try:
        admin.create_topics([topic], request_timeout=timeout_s)[name].result(timeout_s)
    except KafkaException as error:
        if error.args[0].name() != "TOPIC_ALREADY_EXISTS":  # another job instance won the race
            raise ClusterError(f"creating progress topic {name}: {error}") from error
    return True


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
        if self._producer.flush(timeout_s) != 0 or failures:
            raise ClusterError(f"writing to {self.topic}: {failures[0] if failures else 'flush timed out'}")

    def close(self):
        self._producer.flush(10)
