"""An in-memory cluster for the janitor's I/O flow: the ClusterAdmin calls the janitor makes, plus an
`alter` with Kafka's IncrementalAlterConfigs semantics (SUBTRACT leaves an empty list; APPEND merges)."""

from dataclasses import dataclass, field

from sinks.throttles import entries as te
from sinks.throttles.read import read_cluster


@dataclass
class FakeThrottleCluster:
    brokers: dict = field(default_factory=lambda: {1: True, 2: True, 3: True})  # id -> alive
    reassigning: dict = field(default_factory=dict)  # (topic, partition) -> (replicas, adding)
    topics: dict = field(default_factory=dict)  # (topic, kind) -> value
    rates: dict = field(default_factory=dict)  # (broker, kind) -> rate
    future: set = field(default_factory=set)  # brokers holding a future log
    refuse: set = field(default_factory=set)  # (scope, name) whose alters are refused
    ignore: set = field(default_factory=set)  # (scope, name) whose alters are acknowledged but never applied
    fail_reads: bool = False
    requests: int = 0
    alters: list = field(default_factory=list)

    def _call(self):
        if self.fail_reads:
            raise ConnectionError("cluster unreachable")
        self.requests += 1

    # ClusterAdmin (the calls the janitor makes)
    def describe_cluster(self):
        self._call()
        return "fake", [{"broker": b, "alive": alive} for b, alive in sorted(self.brokers.items())]

    def list_reassignments(self):
        self._call()
        return [{"topic": t, "partition": p, "replicas": list(r), "adding": list(a), "removing": []}
                for (t, p), (r, a) in sorted(self.reassigning.items())]

    def describe_partitions(self, topics):
        self._call()
        return [{"topic": t, "partition": 0, "leader": 1, "replicas": [1], "isr": [1]} for t in sorted({t for t, _ in self.topics})]

    def describe_log_dirs(self, broker):
        self._call()
        return [{"broker": broker, "log_dir": "/d", "topic": "x", "partition": 0, "size": 1, "offset_lag": 0,
                 "is_future": True}] if broker in self.future else []

    def describe_throttles(self, topics, brokers):
        self._call()
        topic_rows = [{"topic": t, "kind": k, "value": v} for (t, k), v in sorted(self.topics.items()) if t in topics and v]
        broker_rows = [{"broker": b, "kind": k, "rate": r} for (b, k), r in sorted(self.rates.items()) if b in brokers]
        return topic_rows, broker_rows

    def close(self):
        pass

    # the write side
    def alter_throttles(self, changes):
        return [self._alter(*change) for change in changes]

    def _alter(self, scope, name, kind, op, value):
        self.alters.append((scope, str(name), kind, op, value))
        if (scope, str(name)) in self.refuse:
            return "[Error 29] ClusterAuthorizationFailedError"
        if (scope, str(name)) in self.ignore:
            return None
        if scope == "topic":
            key = (name, kind)
            if op == "delete":
                self.topics.pop(key, None)
            elif op in ("subtract", "append") and not te.is_all(self.topics.get(key)):
                current, change = te.parse(self.topics.get(key)), te.parse(value)
                self.topics[key] = te.format_entries(current - change if op == "subtract" else current | change)
        else:
            key = (int(name), kind)
            if op == "delete":
                self.rates.pop(key, None)
            else:
                self.rates[key] = int(value)
        return None

    def snapshot(self, now_ms=None):
        """What a poll of every topic would show now (the streaming job's view: its future logs too)."""
        return read_cluster(self, {t for t, _ in self.topics}, log_dir_brokers=set(self.brokers), now_ms=now_ms)
