"""The cluster edge: the admin calls this project makes, behind one small protocol.

`ClusterAdmin` names only the calls we use and returns plain rows, so the poller and the CLI are tested
on fakes built from data and, for real, against the local cluster. `KafkaClusterAdmin` implements it
with kafka-python (the only Python client with DescribeLogDirs and the KIP-455 reassignment APIs).
Every call counts as one admin request in `requests`; DescribeLogDirs counts one per broker.
"""

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec

from streaming import client_config
from streaming.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from streaming.errors import from_kafka_error


class ClusterAdmin(Protocol):
    requests: int

    def describe_cluster(self) -> tuple[str, list[dict]]: ...
    def list_reassignments(self) -> list[dict]: ...
    def describe_partitions(self, topics: list[str] | None) -> list[dict]: ...
    def describe_log_dirs(self, broker: int) -> list[dict]: ...
    def list_offsets(self, partitions: list[tuple[str, int]]) -> list[dict]: ...
    def describe_throttles(self, topics: list[str], brokers: list[int]) -> tuple[list[dict], list[dict]]: ...
    def close(self) -> None: ...


class KafkaClusterAdmin:
    """ClusterAdmin over kafka-python. Construction bootstraps (bounded by `timeout_s`)."""

    def __init__(self, bootstrap_servers, command_config=None, timeout_s=10.0):
        settings = client_config.kafka_python_settings(command_config)
        try:
            self._admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="reassign-monitor",
                                           bootstrap_timeout_ms=int(timeout_s * 1000),
                                           request_timeout_ms=int(timeout_s * 1000), **settings)
        except Exception as error:  # kafka-python raises several types on bootstrap; map them once
            raise from_kafka_error(error, f"connecting to {bootstrap_servers}") from error
        self.requests = 0
        self._count_lock = threading.Lock()
        self.raw = self._admin  # for the write side (execute, cancel, janitor): same connection

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
        self._call()
        rows = []
        for topic in self._admin.describe_topics(topics):
            if topic["error_code"] != 0:
                continue  # an unknown topic has no partitions; callers report it as such
            for p in topic["partitions"]:
                rows.append({"topic": topic["name"], "partition": p["partition_index"], "leader": p["leader_id"],
                             "replicas": p["replica_nodes"], "isr": p["isr_nodes"]})
        return rows

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

    def list_offsets(self, partitions):
        if not partitions:
            return []
        tps = [TopicPartition(t, p) for t, p in partitions]
        self._call(2)
        with ThreadPoolExecutor(max_workers=2) as pool:  # the two lookups are independent: overlap them
            start, end = pool.map(lambda spec: self._admin.list_partition_offsets({tp: spec for tp in tps}),
                                  (OffsetSpec.EARLIEST, OffsetSpec.LATEST))
        return [{"topic": tp.topic, "partition": tp.partition, "log_start": start[tp].offset,
                 "log_end": end[tp].offset} for tp in tps if tp in start and tp in end]

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
