"""The ownership records' store in Kafka: a compacted topic, read fully on open and incrementally on
`refresh()`, written with acks=all (streaming.control.ownership.records has the records, their codec and the
OwnershipStore protocol this implements). Every request goes through the admin door it is given."""

import sys

from streaming.control.ownership.records import PLAN_KEY_PREFIX, decode, encode
from streaming.vocabulary.defaults import OWNERSHIP_TOPIC

OWNERSHIP_TOPIC_CONFIG = {"cleanup.policy": "compact"}
# With acks=all a record is on two brokers before execute alters any config (capped at the replication
# factor on smaller clusters, where Kafka would otherwise refuse every write).
OWNERSHIP_MIN_INSYNC_REPLICAS = 2


class KafkaOwnershipStore:
    """The compacted topic, read fully on open and incrementally on `refresh()`; `put()` waits for acks=all.

    Every read and write goes through the caller's admin door (streaming.cluster.admin.ClusterAdmin:
    ensure_topic, produce, read_log), which retries transient errors and names the principal, operation
    and topic of a refusal. The store holds nothing of its own to close."""

    PARTITION = 0

    def __init__(self, admin, topic=OWNERSHIP_TOPIC, create=False):
        self.admin, self.topic = admin, topic
        self._latest = {}
        self._next = 0
        if create:
            ensure_ownership_topic(admin, topic)
        self.refresh()

    def refresh(self):
        for offset, key, value in self.admin.read_log(self.topic, self.PARTITION, self._next):
            self._apply(key.decode("utf-8"), value)
            self._next = offset + 1

    def _apply(self, key, value):
        if key.startswith(PLAN_KEY_PREFIX):
            return  # a plan's record (streaming.control.ownership.plan_store), not an ownership record
        if value is None:
            self._latest.pop(key, None)  # tombstone
            return
        try:
            self._latest[key] = decode(value)
        except (ValueError, KeyError) as error:  # a record we cannot read claims nothing we may touch
            print(f"ownership topic {self.topic}: skipping unreadable record {key}: {error}", file=sys.stderr)

    def records(self):
        return sorted(self._latest.values(), key=lambda r: r.request_id)

    def put(self, record):
        self.admin.produce(self.topic, [(record.request_id, encode(record))])
        self._latest[record.request_id] = record


def ensure_ownership_topic(admin, topic):
    """Create the ownership topic (compacted, one partition so it is totally ordered, RF min(3, brokers),
    min.insync.replicas 2 where there are 3) unless it exists; wait until it has a leader."""
    return admin.ensure_topic(topic, 1, OWNERSHIP_TOPIC_CONFIG, min_insync_replicas=OWNERSHIP_MIN_INSYNC_REPLICAS)
