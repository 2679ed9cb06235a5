"""The cluster edge: the admin calls this project makes, behind one small protocol.

`ClusterAdmin` names only the calls we use and returns plain rows, so the poller and the CLI are tested
on fakes built from data and, for real, against the local cluster. `KafkaClusterAdmin` implements it
with kafka-python (the only Python client with DescribeLogDirs and the KIP-455 reassignment APIs),
except Metadata, which confluent-kafka decodes in C: at 10,000 partitions 38 ms against kafka-python's
177 ms, on the poll's critical path.
Every call counts as one admin request in `requests`; DescribeLogDirs counts one per broker.
"""

import threading
from collections import defaultdict
from typing import Protocol

from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec
from kafka.protocol.consumer import ListOffsetsRequest

from streaming import client_config
from streaming.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from streaming.errors import from_kafka_error


class ClusterAdmin(Protocol):
    requests: int

    def describe_cluster(self) -> tuple[str, list[dict]]: ...
    def list_reassignments(self) -> list[dict]: ...
    def describe_partitions(self, topics: list[str] | None) -> list[dict]: ...
    def describe_log_dirs(self, broker: int) -> list[dict]: ...
    def list_offsets(self, leaders: dict[tuple[str, int], int]) -> list[dict]: ...
    def describe_throttles(self, topics: list[str], brokers: list[int]) -> tuple[list[dict], list[dict]]: ...
    def close(self) -> None: ...


class KafkaClusterAdmin:
    """ClusterAdmin over kafka-python. Construction bootstraps (bounded by `timeout_s`)."""

    def __init__(self, bootstrap_servers, command_config=None, timeout_s=10.0):
        settings = client_config.kafka_python_settings(command_config)
        self._timeout_s = timeout_s
        try:
            self._admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="reassign-monitor",
                                           bootstrap_timeout_ms=int(timeout_s * 1000),
                                           request_timeout_ms=int(timeout_s * 1000), **settings)
        except Exception as error:  # kafka-python raises several types on bootstrap; map them once
            raise from_kafka_error(error, f"connecting to {bootstrap_servers}") from error
        self.requests = 0
        self._count_lock = threading.Lock()
        self.raw = self._admin  # for the write side (execute, cancel, janitor): same connection
        # log_level 0: librdkafka would print connection failures (a stopped broker) to stderr on its own;
        # a failed call surfaces here as an exception, reported once with the poll.
        self._metadata = AdminClient({**client_config.confluent_settings(command_config, bootstrap_servers),
                                      "log_level": 0})

    def _call(self, count=1):
        with self._count_lock:  # the poller issues calls from several threads
            self.requests += count

    def describe_cluster(self):
        self._call()
        cluster = self._admin.describe_cluster()
        brokers = [{"broker": b["broker_id"], "alive": not b.get("is_fenced", False)} for b in cluster["brokers"]]
        return cluster["cluster_id"], brokers

    def list_reassignments(self):
        self._call()
        ongoing = self._admin.list_partition_reassignments()
        return [{"topic": tp.topic, "partition": tp.partition, "replicas": r["replicas"],
                 "adding": r["adding_replicas"], "removing": r["removing_replicas"]} for tp, r in ongoing.items()]

    def describe_partitions(self, topics):
        """Leader, replicas and ISR of every partition of `topics` (None: of all topics). Always asks
        for all topics: naming one makes Metadata auto-create it on brokers that allow that."""
        self._call()
        metadata = self._metadata.list_topics(timeout=self._timeout_s)
        wanted = None if topics is None else set(topics)
        return [{"topic": topic.topic, "partition": p.id, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": list(p.isrs)}
                for topic in metadata.topics.values() if topic.error is None and (wanted is None or topic.topic in wanted)
                for p in topic.partitions.values()]

    def describe_log_dirs(self, broker):
        self._call()
        rows = []
        for response in self._admin.describe_log_dirs(brokers=[broker]):
            for log_dir in response["log_dirs"]:
                if log_dir["error_code"] != 0:
                    continue  # an offline log dir holds no readable replicas
                for topic in log_dir["topics"]:
                    for p in topic["partitions"]:
                        rows.append({"broker": response["broker"], "log_dir": log_dir["log_dir"],
                                     "topic": topic["name"], "partition": p["partition_index"],
                                     "size": p["partition_size"], "offset_lag": p["offset_lag"],
                                     "is_future": p["is_future_key"]})
        return rows

    def list_offsets(self, leaders):
        """Log start and end offsets of the partitions in `leaders` ((topic, partition) -> leader id, from
        the poll's Metadata). kafka-python's list_partition_offsets looks the leaders up with a Metadata
        request of its own on every call: at 10,000 partitions its two calls took 564 ms, these requests
        192 ms. It offers no public way to send a built request, so this uses its network manager.
        A partition whose leader answered with an error (it moved since the Metadata) is left out:
        unknown in this poll, not fatal to the rest."""
        by_leader = defaultdict(list)
        for (topic, partition), leader in leaders.items():
            by_leader[leader].append((topic, partition))
        self._call(2 * len(by_leader))
        manager = self._admin._manager

        async def ask_every_leader():
            pending = [(spec, manager.send(_list_offsets_request(tps, spec), node_id=leader))
                       for leader, tps in by_leader.items() for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST)]
            found = {OffsetSpec.EARLIEST: {}, OffsetSpec.LATEST: {}}
            for spec, response in pending:
                found[spec].update(_offsets_in(await response))
            return found

        found = manager.run(ask_every_leader)
        start, end = found[OffsetSpec.EARLIEST], found[OffsetSpec.LATEST]
        return [{"topic": t, "partition": p, "log_start": start[t, p], "log_end": end[t, p]}
                for t, p in leaders if (t, p) in start and (t, p) in end]

    def describe_throttles(self, topics, brokers):
        resources = [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        resources += [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in brokers]
        if not resources:
            return [], []
        self._call(1 + len(brokers))  # kafka-python sends each broker resource to its broker
        described = self._admin.describe_configs(resources)
        topic_rows = [{"topic": topic, "kind": kind, "value": configs[key]["value"]}
                      for topic, configs in described.get("topic", {}).items()
                      for kind, key in TOPIC_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        broker_rows = [{"broker": int(broker), "kind": kind, "rate": int(configs[key]["value"])}
                       for broker, configs in described.get("broker", {}).items()
                       for kind, key in BROKER_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        return topic_rows, broker_rows

    def close(self):
        self._admin.close()


def _list_offsets_request(partitions, spec):
    by_topic = defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=partition, timestamp=spec))
    return ListOffsetsRequest(isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=parts)
                                                          for topic, parts in by_topic.items()])


def _offsets_in(response):
    return {(topic.name, p.partition_index): p.offset
            for topic in response.topics for p in topic.partitions if p.error_code == 0}
