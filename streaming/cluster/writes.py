"""The door's writes: throttle configs, reassignments (start and cancel) and log-dir moves. Each is
idempotent, so a retry after a lost answer is harmless; each answers, per item, None or Kafka's refusal."""

from streaming.cluster.door import config_acl_resource
from streaming.vocabulary.config_keys import (APPEND, DELETE, OPS, SET, TOPIC, appends_lead_with_a_comma,
                                              throttle_config_key)
from streaming.vocabulary.echo import first_line
from streaming.vocabulary.errors import (AUTHORIZATION, TOPIC_DELETED, UNKNOWN_TOPIC_OR_PARTITION, answer_code,
                                         kind_of_answer)
from streaming.vocabulary.kafka_apis import ALTER_CONFIGS, ALTER_LOG_DIRS, ALTER_REASSIGNMENTS
from streaming.vocabulary.throttle_entries import appended

REFUSAL_LIMIT = 200  # characters of a refusal's text kept in its one line
# AlterPartitionReassignments of 5,000 partitions took 0.8-1.7 s on the loaded 2-core machine (load 11-15), so
# 10,000 in one request would not be answered within the door's request deadline (2.5 s): 1,000 take 0.2-0.4 s.
REASSIGNMENTS_PER_REQUEST = 1_000


def _error_name(error):
    """A per-resource answer of kafka-python (None, an error class or an instance) as None or its name."""
    if error is None:
        return None
    name = getattr(error, "__name__", None) or type(error).__name__
    return None if name == "NoError" else name


class Writes:
    """Mixed into the door (streaming.cluster.door.Door): uses its `_call` and `_lacks`."""

    def alter_throttles(self, changes):
        """IncrementalAlterConfigs for `changes` [(scope, name, kind, op, value)] in one call (kafka-python
        sends one request per broker for broker resources, one for topics). Returns, per change, None or
        Kafka's refusal. `op`: one of streaming.vocabulary.config_keys.OPS. Changes of one resource travel together,
        so a refusal applies to all of them. raise_on_unknown=False: kafka-python otherwise rejects
        throttle keys as unknown."""
        from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

        library_op = {op: getattr(AlterConfigOp, op.upper()) for op in OPS}
        resources = {}
        for scope, name, kind, op, value in changes:
            configs = resources.setdefault((scope, str(name)), {})
            configs[throttle_config_key(scope, kind)] = (library_op[op], None if op == DELETE else str(value))
        if not resources:
            return []
        brokers = sum(1 for scope, _ in resources if scope != TOPIC)

        def work(kafka):
            merged = self._appends_merged(kafka, resources, library_op)
            return self._alter_configs(kafka, [ConfigResource(
                ConfigResourceType.TOPIC if scope == TOPIC else ConfigResourceType.BROKER, name, configs=configs)
                for (scope, name), configs in merged.items()])

        outcome = self._call(ALTER_CONFIGS, work, requests=brokers + (len(resources) > brokers))
        answers = {key: outcome.get(key[0], {}).get(key[1], "no answer") for key in resources}
        return [None if answers[(scope, str(name))] == "OK" else self._refusal(answers[(scope, str(name))], scope, name)
                for scope, name, _, _, _ in changes]

    def _appends_merged(self, kafka, resources, library_op):
        """`resources` ((scope, name) -> {key: (op, value)}) as they can be sent to this cluster: as they are, or,
        against brokers that would write an APPEND to an unset list as ",p:b"
        (streaming.vocabulary.config_keys.appends_lead_with_a_comma), with each APPEND turned into a
        SET of the list read just before with the entries appended. Another tool's entry written between that
        read and the SET would be lost: a window of one round trip, only on those brokers."""
        from kafka.admin import ConfigResource, ConfigResourceType

        if not appends_lead_with_a_comma(kafka._manager.broker_version_data.broker_version):
            return resources
        appending = sorted(name for (scope, name), configs in resources.items()
                           if scope == TOPIC and library_op[APPEND] in {op for op, _ in configs.values()})
        if not appending:
            return resources
        self._count()
        current = self._describe_configs(kafka, [ConfigResource(ConfigResourceType.TOPIC, t) for t in appending])
        current = current.get("topic", {})
        return {(scope, name): {key: (library_op[SET], appended(current.get(name, {}).get(key, {}).get("value"), value))
                                if scope == TOPIC and op == library_op[APPEND] else (op, value)
                                for key, (op, value) in configs.items()}
                for (scope, name), configs in resources.items()}

    def _alter_configs(self, kafka, resources):
        """IncrementalAlterConfigs as kafka-python's alter_configs sends it (each broker resource to its broker,
        the topics to any), but with every request in flight at once: kafka-python awaits each broker's answer
        before sending the next, which made a removal at completion wait for one round trip per broker (each
        forwarded to the controller). Answers as alter_configs gives them."""
        brokers, others = kafka._group_config_resources(resources)
        manager = kafka._manager

        async def send_all():
            sent = [manager.send(kafka._alter_configs_request(rs, False, True), node_id=b) for b, rs in brokers.items()]
            if others:
                sent.append(manager.send(kafka._alter_configs_request(others, False, True)))
            return [answer for future in sent for answer in (await future).responses]

        return kafka._alter_configs_process_responses(manager.run(send_all))

    def _refusal(self, answer, scope, name):
        """kafka-python's per-resource answer of alter_configs ("[Error 31] Name: detail") as one short line;
        a refusal by the authorizer names who lacks AlterConfigs on what (broker configs live on the Cluster)."""
        if kind_of_answer(answer) == AUTHORIZATION:
            return f"not authorized: {self._lacks('AlterConfigs', config_acl_resource(scope != TOPIC, name))}"
        if scope == TOPIC and answer_code(answer) == UNKNOWN_TOPIC_OR_PARTITION:
            return TOPIC_DELETED
        return first_line(answer, REFUSAL_LIMIT)

    def _alter_reassignments(self, targets, doing):
        """AlterPartitionReassignments in requests of at most REASSIGNMENTS_PER_REQUEST partitions, each answered
        well within the door's request deadline (a lapse would hold the controller-bound broker as unresponsive).
        A retry sends them all again: the same targets again are accepted again."""
        from kafka import TopicPartition

        request = {TopicPartition(t, p): (None if target is None else list(target)) for (t, p), target in targets.items()}
        items = list(request.items())
        chunks = [dict(items[i:i + REASSIGNMENTS_PER_REQUEST]) for i in range(0, len(items), REASSIGNMENTS_PER_REQUEST)]

        def work(kafka):
            return {tp: error for chunk in chunks for tp, error in kafka.alter_partition_reassignments(chunk).items()}
        answer = self._call(ALTER_REASSIGNMENTS, work, requests=len(chunks), doing=doing, needs=("Alter", "Cluster"))
        return {key: (_error_name(answer[TopicPartition(*key)]) if TopicPartition(*key) in answer else "no answer")
                for key in targets}

    def start_reassignments(self, targets):
        """(topic, partition) -> None when accepted, else the error's name."""
        return self._alter_reassignments(targets, ALTER_REASSIGNMENTS)

    def cancel_reassignments(self, partitions):
        """(topic, partition) -> None when cancelled, else the error's name (NoReassignmentInProgressError
        when it finished meanwhile)."""
        return self._alter_reassignments({key: None for key in partitions}, f"{ALTER_REASSIGNMENTS} (cancel)")

    def alter_replica_log_dirs(self, wanted):
        """(topic, partition, broker) -> None when the broker accepted the log dir, else the error's name."""
        from kafka import TopicPartitionReplica

        request = {TopicPartitionReplica(t, p, b): d for (t, p, b), d in wanted.items()}
        answer = self._call(ALTER_LOG_DIRS, lambda kafka: kafka.alter_replica_log_dirs(request), needs=("Alter", "Cluster"))
        return {key: _error_name(answer.get(TopicPartitionReplica(*key), "no answer")) for key in wanted}
