"""The door's reads: who is alive, what moves, partitions, log dirs, offsets and throttle configs, as
plain rows. kafka-python serves all but Metadata: it is the only Python client with DescribeLogDirs and
the KIP-455 reassignment APIs; confluent-kafka's Metadata decodes in C (several times faster than kafka-python's at
10,000 partitions, bench/poll.py)."""

from collections import defaultdict

from streaming.cluster.door import config_acl_resource
from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from streaming.vocabulary.errors import (AUTHORIZATION, PROTOCOL_CODES, UNKNOWN_TOPIC_OR_PARTITION, NotAuthorized,
                                         Refused, Unsupported, kind_of)
from streaming.vocabulary.kafka_apis import (API_KEYS, DESCRIBE_CLUSTER, DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS,
                                             EARLIEST_LOCAL_SINCE, LIST_OFFSETS, LIST_REASSIGNMENTS, METADATA,
                                             below_the_floor)
from streaming.vocabulary.snapshot import without_gone

BROKER_RESOURCE = 4  # DescribeConfigs resource type of a broker


class Reads:
    """Mixed into the door (streaming.cluster.door.Door): uses its `_call`, `_metadata`, `_lacks`, and for
    requests pinned to brokers `unanswering` and `_needed` (a gone broker is asked nothing)."""

    def require_reassignment_apis(self):
        """Unsupported (exit 3) when the cluster's ApiVersions answer, which came with the first connection,
        lacks KIP-455's calls (Kafka before 2.4): decided before any request of a command, so nothing is changed."""
        versions = self._connect()._manager.broker_version_data
        refusal = below_the_floor(versions.api_versions or {}, versions.broker_version)
        if refusal is not None:
            raise Unsupported(refusal)

    def describe_cluster(self):
        """(cluster id, [{"broker", "alive"}]): alive = registered, unfenced and not held as gone. Sent by the
        door, not kafka-python's describe_cluster, which reads a field of DescribeCluster v1 (KeyError
        'endpoint_type' against every broker before Kafka 3.7, measured on 2.8.2 and 3.6.2): see `cluster_rows`."""
        cluster_id, brokers = self._call(DESCRIBE_CLUSTER, lambda kafka: cluster_rows(_ask_cluster(kafka)),
                                         needs=("Describe", "Cluster"))
        return cluster_id, without_gone(brokers, self.unanswering())

    def list_reassignments(self):
        def work(kafka):
            ongoing = kafka.list_partition_reassignments()
            return [{"topic": tp.topic, "partition": tp.partition, "replicas": r["replicas"],
                     "adding": r["adding_replicas"], "removing": r["removing_replicas"]} for tp, r in ongoing.items()]
        return self._call(LIST_REASSIGNMENTS, work, needs=("Describe", "Cluster"))

    def describe_partitions(self, topics):
        """Leader, replicas and ISR of every partition of `topics` (None: of all topics). Always asks
        for all topics: naming one makes Metadata auto-create it on brokers that allow that."""
        metadata = self._metadata()
        wanted = None if topics is None else set(topics)
        return [{"topic": topic.topic, "partition": p.id, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": list(p.isrs)}
                for topic in metadata.topics.values() if topic.error is None and (wanted is None or topic.topic in wanted)
                for p in topic.partitions.values()]

    def unknown_topics(self, topics):
        """Of `topics`, those the cluster does not have, asked by name (Metadata without auto-creation). A
        Metadata of every topic hides the topics the principal may not describe, so a topic missing there is
        deleted only when this says so; NotAuthorized names the first topic it may not describe."""
        answer = self._call(METADATA, lambda kafka: kafka.describe_topics(sorted(topics)))
        unknown = []
        for topic in answer:
            name, code = topic.get("name", topic.get("topic")), topic["error_code"]
            if code == UNKNOWN_TOPIC_OR_PARTITION:
                unknown.append(name)
            elif PROTOCOL_CODES.get(code) == AUTHORIZATION:
                raise NotAuthorized(f"not authorized: {self._lacks('Describe', f'Topic {name}')}")
            elif code:
                raise Refused(f"{METADATA} of topic {name} refused: error code {code}")
        return frozenset(unknown)

    def _log_dirs(self, broker):
        return self._call(DESCRIBE_LOG_DIRS,
                          lambda kafka: kafka.describe_log_dirs(brokers=[self._needed(broker, DESCRIBE_LOG_DIRS)]),
                          needs=("Describe", "Cluster"))

    def describe_log_dirs(self, broker):
        return self.log_dirs_answer(broker)[0]

    def log_dirs_answer(self, broker):
        """(one row per log of `broker`'s online log dirs, its offline log dirs: [{"broker", "log_dir"}]) from one
        DescribeLogDirs. Kafka answers a log dir it took offline (full, failed) with an error and no logs."""
        rows, offline = [], []
        for response in self._log_dirs(broker):
            for log_dir in response["log_dirs"]:
                if log_dir["error_code"] != 0:  # an offline log dir holds no readable replicas
                    offline.append({"broker": response["broker"], "log_dir": log_dir["log_dir"]})
                    continue
                for topic in log_dir["topics"]:
                    for p in topic["partitions"]:
                        rows.append({"broker": response["broker"], "log_dir": log_dir["log_dir"],
                                     "topic": topic["name"], "partition": p["partition_index"],
                                     "size": p["partition_size"], "offset_lag": p["offset_lag"],
                                     "is_future": p["is_future_key"]})
        return rows, offline

    def log_dir_paths(self, broker):
        """The online log dirs of `broker` (for validating a reassignment file's log_dirs)."""
        return {d["log_dir"] for r in self._log_dirs(broker) for d in r["log_dirs"] if d["error_code"] == 0}

    def list_offsets(self, leaders):
        """Log start and end offsets of the partitions in `leaders` ((topic, partition) -> leader id, from
        the poll's Metadata), and the leader's local log start where the cluster tells it (ListOffsets v8, Kafka
        3.6: with tiered storage the log start counts remote segments; docs/progress.md "Tiered storage"), else
        None. kafka-python's list_partition_offsets looks the leaders up with a Metadata request of its own on
        every call: at 10,000 partitions its two calls took 564 ms, these requests 192 ms. It offers no public
        way to send a built request, so this uses its network manager.
        A partition whose leader answered with an error (it moved since the Metadata) is left out:
        unknown in this poll, not fatal to the rest; so is one whose leader is gone (asked nothing)."""
        from kafka.admin import OffsetSpec

        by_leader = defaultdict(list)
        for (topic, partition), leader in leaders.items():
            by_leader[leader].append((topic, partition))

        def work(kafka):
            manager = kafka._manager
            gone = self.unanswering()
            specs = [OffsetSpec.EARLIEST, OffsetSpec.LATEST]
            if _knows_local_log_start(manager.broker_version_data.api_versions or {}):
                specs.append(OffsetSpec.EARLIEST_LOCAL)
                self._count(len(by_leader))  # a third request per leader: the call counts two

            async def ask_every_leader():
                pending = [(spec, manager.send(_list_offsets_request(tps, spec), node_id=leader))
                           for leader, tps in by_leader.items() if leader not in gone for spec in specs]
                found = {spec: {} for spec in specs}
                for spec, response in pending:
                    found[spec].update(_offsets_in(await response))
                return found

            return manager.run(ask_every_leader)

        found = self._call(LIST_OFFSETS, work, requests=2 * len(by_leader), needs=("Describe", "the moving topics"))
        start, end = found[OffsetSpec.EARLIEST], found[OffsetSpec.LATEST]
        local_start = found.get(OffsetSpec.EARLIEST_LOCAL, {})
        return [{"topic": t, "partition": p, "log_start": start[t, p], "log_end": end[t, p],
                 "local_log_start": local_start.get((t, p))}
                for t, p in leaders if (t, p) in start and (t, p) in end]

    def describe_throttles(self, topics, brokers):
        from kafka.admin import ConfigResource, ConfigResourceType

        # Only the throttle keys: a resource without named keys is answered with every config it has (about 300 per
        # broker), whose decoding in kafka-python cost the idle job's controller half its CPU (bench/RESULTS.md "Fleet
        # idle cost (bench/fleet.py idle)").
        resources = [ConfigResource(ConfigResourceType.TOPIC, t, list(TOPIC_THROTTLE_KEYS.values())) for t in topics]
        resources += [ConfigResource(ConfigResourceType.BROKER, str(b), list(BROKER_THROTTLE_KEYS.values()))
                      for b in brokers]
        if not resources:
            return [], []
        described = self._call(DESCRIBE_CONFIGS, lambda kafka: self._describe_configs(kafka, resources),
                               requests=1 + len(brokers))
        topic_rows = [{"topic": topic, "kind": kind, "value": configs[key]["value"]}
                      for topic, configs in described.get("topic", {}).items()
                      for kind, key in TOPIC_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        broker_rows = [{"broker": int(broker), "kind": kind, "rate": int(configs[key]["value"])}
                       for broker, configs in described.get("broker", {}).items()
                       for kind, key in BROKER_THROTTLE_KEYS.items() if configs.get(key, {}).get("value")]
        return topic_rows, broker_rows

    def _describe_configs(self, kafka, resources):
        """DescribeConfigs that fails on a refused resource. kafka-python's describe_configs drops each
        resource's error code: a broker resource the principal may not describe comes back empty, which
        would read as "no throttle" (verify would then leave throttles behind, and execute record no prior
        rate). Sent like kafka-python does, each broker resource to its broker, through its network manager.
        A topic deleted since the Metadata (UNKNOWN_TOPIC_OR_PARTITION) simply has no throttles. A broker held
        as gone fails the call at once (NodeGone), for the same reason: its rows left out would read as "no
        throttle". A poll asks only alive brokers, and DescribeCluster reports a gone one not alive."""
        import kafka.errors as kerrors

        brokers, others = kafka._group_config_resources(resources)
        for broker in brokers:
            self._needed(broker, DESCRIBE_CONFIGS)
        manager = kafka._manager

        async def ask():
            sent = [manager.send(kafka._describe_configs_request(rs), node_id=b) for b, rs in brokers.items()]
            if others:
                sent.append(manager.send(kafka._describe_configs_request(others)))
            return [await response for response in sent]

        responses = manager.run(ask)
        for response in responses:
            for result in response.results:
                if result.error_code in (0, UNKNOWN_TOPIC_OR_PARTITION):
                    continue
                error = kerrors.for_code(result.error_code)(result.error_message or "")
                if kind_of(error) == AUTHORIZATION:
                    resource = config_acl_resource(result.resource_type == BROKER_RESOURCE, result.resource_name)
                    raise NotAuthorized(f"{DESCRIBE_CONFIGS}: not authorized: {self._lacks('DescribeConfigs', resource)}")
                raise error
        return kafka._describe_configs_process_responses(responses)


def _ask_cluster(kafka):
    """The fields of DescribeCluster's answer at the highest version both sides speak, or of Metadata's (no
    topics) where the broker has no DescribeCluster (before Kafka 2.8), as a dict."""
    import kafka.errors as kerrors
    from kafka.protocol.admin import DescribeClusterRequest
    from kafka.protocol.metadata import MetadataRequest

    manager = kafka._manager
    if API_KEYS[DESCRIBE_CLUSTER] in (manager.broker_version_data.api_versions or {}):
        request = DescribeClusterRequest(include_cluster_authorized_operations=False, include_fenced_brokers=True)
    else:
        request = MetadataRequest(topics=[], allow_auto_topic_creation=False)

    async def ask():
        return await manager.send(request)

    answer = manager.run(ask).to_dict()
    code = answer.get("error_code", 0)
    if code:
        raise kerrors.for_code(code)(answer.get("error_message") or "")
    return answer


def cluster_rows(answer):
    """(cluster id, [{"broker", "alive"}]) from the dict of a DescribeCluster answer of any version, or of a
    Metadata answer. What each version says about liveness, measured (docs/compatibility.md "Versions and what
    degrades"):
    - DescribeCluster v2 (Kafka 4.0+, asked with IncludeFencedBrokers) lists fenced brokers too, `is_fenced`
      true: registered, not alive;
    - v0 and v1 (Kafka 2.8-3.9) have no `is_fenced`, nor does Metadata: under KRaft they leave a fenced broker
      out, so it is not alive by absence; under ZooKeeper there is no fencing, and a broker is listed while its
      ZooKeeper registration lasts (a SIGKILLed one until its session expires, as under KRaft until fencing).
    Either way the door then holds a broker that closed or refused its connection as not alive
    (`without_gone`). DescribeCluster is asked where it exists rather than Metadata, because only its v2 tells
    a fenced broker (still a valid reassignment target, shown offline) from one that is not registered."""
    return answer["cluster_id"], [{"broker": b["broker_id"] if "broker_id" in b else b["node_id"],
                                   "alive": not b.get("is_fenced", False)} for b in answer["brokers"]]


def _knows_local_log_start(api_versions):
    """Whether ListOffsets answers EARLIEST_LOCAL_TIMESTAMP (-4) on this cluster: an older broker would read -4
    as a timestamp to search for."""
    versions = api_versions.get(API_KEYS[LIST_OFFSETS])
    return versions is not None and versions[1] >= EARLIEST_LOCAL_SINCE


def _list_offsets_request(partitions, spec):
    from kafka.protocol.consumer import ListOffsetsRequest

    by_topic = defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=partition, timestamp=spec))
    return ListOffsetsRequest(isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=parts)
                                                          for topic, parts in by_topic.items()])


def _offsets_in(response):
    return {(topic.name, p.partition_index): p.offset
            for topic in response.topics for p in topic.partitions if p.error_code == 0}
