"""The one admin fake: a cluster made of plain data that answers the ClusterReader protocol
(streaming.cluster.admin), and whose `writer(grant)` is a ClusterWriter over the same data, given only for the
write grant as the real door's is (streaming.cluster.grant): the code's writes go through its applier here too.
Tests build it from rows and pass it where the code takes an admin (`Controller(admin, ...)`,
`cli.main(argv, connect=lambda args: fake)`); nothing is patched.

Writes follow Kafka's semantics: IncrementalAlterConfigs SUBTRACT leaves an empty list and APPEND merges,
a cancel ends a reassignment back on its original replicas, produce appends to an in-memory topic log.
"""

import contextlib
from collections import Counter
from dataclasses import dataclass, field

import kafka.errors

from streaming.cluster.grant import WRITE_GRANT
from streaming.vocabulary import throttle_entries as te
from streaming.control.throttles.read import read_cluster
from streaming.vocabulary.errors import TOPIC_DELETED, NotAuthorized

NO_REASSIGNMENT = "NoReassignmentInProgressError"


@dataclass
class FakeCluster:
    brokers: dict = field(default_factory=lambda: {1: True, 2: True, 3: True})  # id -> alive
    partitions: dict = field(default_factory=dict)  # (topic, partition) -> {"replicas", "isr", "leader"}
    reassigning: dict = field(default_factory=dict)  # (topic, partition) -> (replicas, adding[, removing])
    sizes: dict = field(default_factory=dict)  # (topic, partition, broker) -> bytes of its current log
    topics: dict = field(default_factory=dict)  # (topic, kind) -> throttled-replicas value
    rates: dict = field(default_factory=dict)  # (broker, kind) -> throttle rate
    future: set = field(default_factory=set)  # brokers holding a future log (an intra-broker move)
    dirs: dict = field(default_factory=dict)  # (topic, partition, broker) -> the log dir of its current log ("/d")
    futures: dict = field(default_factory=dict)  # (topic, partition, broker) -> the log dir its future log copies into
    dir_moves: list = field(default_factory=list)  # each AlterReplicaLogDirs asked: {(topic, partition, broker): dir}
    offline_dirs: dict = field(default_factory=dict)  # broker -> its log dirs Kafka took offline
    refuse: set = field(default_factory=set)  # (scope, name) whose alters are refused
    hidden: set = field(default_factory=set)  # topics the principal may not describe: absent from Metadata
    refuse_moves: dict = field(default_factory=dict)  # (topic, partition) -> the error its reassignment is refused with
    ignore: set = field(default_factory=set)  # (scope, name) whose alters are acknowledged but never applied
    deleted: set = field(default_factory=set)  # topics deleted after the last read: alters refused, configs gone
    fail: dict = field(default_factory=dict)  # method name -> the exception it raises ("*": every read), writes too
    logs: dict = field(default_factory=dict)  # topic -> [(key, value)]: the project's own topics
    gone: set = field(default_factory=set)  # brokers the door holds as gone (their connection closed)
    unanswered: dict = field(default_factory=dict)  # brokers held as unresponsive -> Unix ms since (also held)
    requests: int = 0
    retried: Counter = field(default_factory=Counter)
    alters: list = field(default_factory=list)
    cancels: list = field(default_factory=list)
    starts: list = field(default_factory=list)
    closed: bool = False

    def _call(self, name):
        failure = self.fail.get(name) or self.fail.get("*")
        if failure is not None:
            raise failure
        self.requests += 1

    # -- reads --

    def describe_cluster(self):
        self._call("describe_cluster")
        return "fake", [{"broker": b, "alive": alive} for b, alive in sorted(self.brokers.items())]

    def unanswering(self):
        return frozenset(self.gone) | frozenset(self.unanswered)

    def unanswered_since(self):
        return dict(self.unanswered)

    def hold_unanswered(self, since_ms):
        self.unanswered = {**since_ms, **self.unanswered}

    def listed_or_last(self):
        return self.list_reassignments(), False

    def impatient(self):
        return contextlib.nullcontext()

    def list_reassignments(self):
        self._call("list_reassignments")
        return [{"topic": t, "partition": p, "replicas": list(moving[0]), "adding": list(moving[1]),
                 "removing": list(moving[2]) if len(moving) > 2 else []}
                for (t, p), moving in sorted(self.reassigning.items())]

    def describe_partitions(self, topics):
        """The partitions given, and partition 0 on broker 1 of every throttled topic not given."""
        self._call("describe_partitions")
        known = dict(self.partitions)
        for topic, _ in self.topics:
            if not any(t == topic for t, _ in known):
                known[(topic, 0)] = {"replicas": [1], "isr": [1], "leader": 1}
        return [{"topic": t, "partition": p, "leader": row.get("leader", row["replicas"][0]),
                 "replicas": list(row["replicas"]), "isr": list(row["isr"])}
                for (t, p), row in sorted(known.items()) if (topics is None or t in topics) and t not in self.hidden]

    def unknown_topics(self, topics):
        self._call("unknown_topics")
        hidden = sorted(set(topics) & self.hidden)
        if hidden:
            raise NotAuthorized(f"not authorized: this client principal lacks Describe on Topic {hidden[0]}")
        return frozenset(topics) - {t for t, _ in self.partitions}

    def describe_log_dirs(self, broker):
        self._call("describe_log_dirs")
        rows = [{"broker": broker, "log_dir": self.dirs.get((t, p, b), "/d"), "topic": t, "partition": p, "size": size,
                 "offset_lag": 0, "is_future": False} for (t, p, b), size in sorted(self.sizes.items()) if b == broker]
        rows += [{"broker": broker, "log_dir": d, "topic": t, "partition": p, "size": 0, "offset_lag": 0,
                  "is_future": True} for (t, p, b), d in sorted(self.futures.items()) if b == broker]
        if broker in self.future:
            rows.append({"broker": broker, "log_dir": "/d", "topic": "x", "partition": 0, "size": 1,
                         "offset_lag": 0, "is_future": True})
        return rows

    def log_dirs_answer(self, broker):
        offline = [{"broker": broker, "log_dir": d} for d in self.offline_dirs.get(broker, ())]
        return self.describe_log_dirs(broker), offline

    def log_dir_paths(self, broker):
        self._call("log_dir_paths")
        return {"/d"}

    def list_offsets(self, leaders):
        self._call("list_offsets")
        return [{"topic": t, "partition": p, "log_start": 0, "log_end": 100} for t, p in leaders]

    def describe_throttles(self, topics, brokers):
        self._call("describe_throttles")
        fenced = [b for b in brokers if not self.brokers.get(b, False)]
        if fenced:  # what Kafka answers for a fenced broker's configs
            raise kafka.errors.UnknownBrokerIdError(str(sorted(fenced)))
        topic_rows = [{"topic": t, "kind": k, "value": v} for (t, k), v in sorted(self.topics.items()) if t in topics and v]
        broker_rows = [{"broker": b, "kind": k, "rate": r} for (b, k), r in sorted(self.rates.items()) if b in brokers]
        return topic_rows, broker_rows

    def topic_exists(self, name):
        self._call("topic_exists")
        return name in self.logs

    def read_log(self, topic, partition, start):
        self._call("read_log")
        return [(offset, key.encode(), value) for offset, (key, value) in enumerate(self.logs.get(topic, []))
                if offset >= start]

    def writer(self, grant):
        if grant is not WRITE_GRANT:
            raise PermissionError("the fake cluster's writer is the applier's")
        return FakeWriter(self)

    def close(self):
        self.closed = True

    # -- for tests --

    def finish_dir_moves(self):
        """Every future log replaces its current one (the copy ended)."""
        self.dirs.update(self.futures)
        self.futures.clear()

    def snapshot(self, now_ms=None):
        """What a poll of every topic would show now (the streaming job's view: its future logs too)."""
        return read_cluster(self, {t for t, _ in self.topics}, log_dir_brokers=set(self.brokers), now_ms=now_ms)


class FakeWriter:
    """The fake cluster's ClusterWriter: Kafka's semantics on the cluster's data."""

    def __init__(self, cluster):
        self.cluster = cluster

    def __getattribute__(self, name):
        failure = object.__getattribute__(self, "cluster").fail.get(name)
        if failure is not None:
            raise failure
        return object.__getattribute__(self, name)

    def alter_throttles(self, changes):
        return [self._alter(*change) for change in changes]

    def _alter(self, scope, name, kind, op, value):
        self.cluster.alters.append((scope, str(name), kind, op, value))
        if (scope, str(name)) in self.cluster.refuse:
            return "not authorized: User:fake lacks AlterConfigs on Cluster"
        if (scope, str(name)) in self.cluster.ignore:
            return None
        if scope == "topic" and name in self.cluster.deleted:
            self.cluster.topics = {key: value for key, value in self.cluster.topics.items() if key[0] != name}
            return TOPIC_DELETED
        if scope == "topic":
            key = (name, kind)
            if op == "delete":
                self.cluster.topics.pop(key, None)
            elif op in ("subtract", "append") and not te.is_all(self.cluster.topics.get(key)):
                current, change = te.parse(self.cluster.topics.get(key)), te.parse(value)
                self.cluster.topics[key] = te.format_entries(current - change if op == "subtract" else current | change)
        else:
            key = (int(name), kind)
            if op == "delete":
                self.cluster.rates.pop(key, None)
            else:
                self.cluster.rates[key] = int(value)
        return None

    def start_reassignments(self, targets):
        self.cluster.starts.append(dict(targets))
        return {key: self.cluster.refuse_moves.get(key) for key in targets}

    def cancel_reassignments(self, partitions):
        self.cluster.cancels.append(list(partitions))
        answers = {}
        for key in partitions:
            moving = self.cluster.reassigning.pop(key, None)
            answers[key] = None if moving is not None else NO_REASSIGNMENT
        return answers

    def alter_replica_log_dirs(self, wanted):
        """As Kafka: a replica the broker does not host yet gets its dir noted (REPLICA_NOT_AVAILABLE); one in
        another dir gets a future log there; one already there, nothing."""
        self.cluster.dir_moves.append(dict(wanted))
        answers = {}
        for key, log_dir in wanted.items():
            if key not in self.cluster.sizes:
                answers[key] = "ReplicaNotAvailableError"
                continue
            if self.cluster.dirs.get(key, "/d") != log_dir:
                self.cluster.futures[key] = log_dir
            answers[key] = None
        return answers

    def ensure_topic(self, name, partitions, config, min_insync_replicas=None):
        created = name not in self.cluster.logs
        self.cluster.logs.setdefault(name, [])
        return created

    def produce(self, topic, keyed_values, timeout_s=None):
        self.cluster.logs.setdefault(topic, []).extend(keyed_values)
