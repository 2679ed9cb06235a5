"""A Metadata answer as plain values, under the attribute names the door's callers read (those of
confluent-kafka's ClusterMetadata, which served Metadata before): `topics` {name: TopicMetadata}, `brokers`
{id: "host:port"}. Built from kafka-python's MetadataResponse, which the door sends like every other request
(streaming.cluster.door: a node that does not answer is held and the request goes to another). librdkafka picks
the broker of a Metadata request itself, the least idle one: a broker SIGSTOPped just after a request to it was
picked again for every poll (measured), and its timeout names no node the door could avoid."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    id: int
    leader: int  # -1: none
    replicas: tuple
    isrs: tuple


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic: str
    error: int | None  # Kafka's error code for the topic, None when it has none
    partitions: dict  # partition id -> PartitionMetadata


@dataclass(frozen=True)
class ClusterMetadata:
    topics: dict  # name -> TopicMetadata
    brokers: dict  # node id -> "host:port"


def from_response(response):
    """ClusterMetadata of a kafka-python MetadataResponse."""
    return ClusterMetadata(
        topics={t.name: TopicMetadata(t.name, t.error_code or None,
                                      {p.partition_index: PartitionMetadata(p.partition_index, p.leader_id,
                                                                            tuple(p.replica_nodes), tuple(p.isr_nodes))
                                       for p in t.partitions})
                for t in response.topics},
        brokers={b.node_id: f"{b.host}:{b.port}" for b in response.brokers})
