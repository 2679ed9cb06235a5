"""The one door to the cluster: every admin read and write this project makes, behind two small protocols.

`ClusterReader` names the reads we use and returns plain rows: anyone may hold one (the poller, the decisions'
read-backs, the commands, the Spark workers). `ClusterWriter` names every change the project makes to the cluster,
the creation of and writes to its own topics included: only the applier (streaming.control.applier) obtains one,
from the reader's `writer(grant)` with the write grant (streaming.cluster.grant) only it imports. Both are tested on
fakes built from data (tests/fake_cluster.py) and, for real, against the local cluster.
`KafkaClusterAdmin` is the reader: the clients and the one call path every call takes (retries, stale clients
dropped, refusals named) in streaming.cluster.door, the reads in .reads and .own_topics; its writer,
streaming.cluster.writes.KafkaClusterWriter, takes the same path over the same clients.
"""

from collections import Counter
from typing import ContextManager, Protocol

from streaming.cluster.door import Door
from streaming.cluster.own_topics import OwnTopics
from streaming.cluster.reads import Reads
from streaming.cluster.writes import KafkaClusterWriter


class ClusterWriter(Protocol):
    def alter_throttles(self, changes: list[tuple]) -> list[str | None]: ...
    def start_reassignments(self, targets: dict[tuple[str, int], list[int]]) -> dict[tuple[str, int], str | None]: ...
    def cancel_reassignments(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], str | None]: ...
    def alter_replica_log_dirs(self, wanted: dict[tuple[str, int, int], str]) -> dict[tuple[str, int, int], str | None]: ...
    def ensure_topic(self, name: str, partitions: int, config: dict[str, str], min_insync_replicas: int | None = None) -> bool: ...
    def produce(self, topic: str, keyed_values: list[tuple[str, bytes]], timeout_s: float | None = None) -> None: ...


class ClusterReader(Protocol):
    requests: int
    retried: Counter

    def describe_cluster(self) -> tuple[str, list[dict]]: ...
    def unanswering(self) -> frozenset[int]: ...
    def unanswered_since(self) -> dict[int, int]: ...  # unresponsive brokers -> Unix ms since they did not answer
    def hold_unanswered(self, since_ms: dict[int, int]) -> None: ...  # another door's unresponsive brokers, held here
    def list_reassignments(self) -> list[dict]: ...
    def listed_or_last(self) -> tuple[list[dict], bool]: ...  # the last list while the controller is silent: True
    def impatient(self) -> ContextManager: ...  # controller-bound calls never wait for a silent controller within
    def describe_partitions(self, topics: list[str] | None) -> list[dict]: ...
    def unknown_topics(self, topics: list[str]) -> frozenset[str]: ...  # asked by name; NotAuthorized if hidden
    def describe_log_dirs(self, broker: int) -> list[dict]: ...
    def log_dirs_answer(self, broker: int) -> tuple[list[dict], list[dict]]: ...  # (logs, offline log dirs)
    def log_dir_paths(self, broker: int) -> set[str]: ...
    def list_offsets(self, leaders: dict[tuple[str, int], int]) -> list[dict]: ...
    def describe_throttles(self, topics: list[str], brokers: list[int]) -> tuple[list[dict], list[dict]]: ...
    def topic_exists(self, name: str) -> bool: ...
    def read_log(self, topic: str, partition: int, start: int) -> list[tuple[int, bytes, bytes | None]]: ...
    def writer(self, grant: object) -> ClusterWriter: ...  # PermissionError without the write grant
    def close(self) -> None: ...


class KafkaClusterAdmin(Reads, OwnTopics, Door):
    """ClusterReader over kafka-python and confluent-kafka. Construction bootstraps (bounded by `timeout_s`) and
    refuses a cluster without KIP-455's reassignment calls (Kafka before 2.4: Unsupported, exit 3) before any
    request is sent."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        try:
            self.require_reassignment_apis()
        except Exception:
            self.close()
            raise

    def writer(self, grant):
        """The writer over this door's clients: only with the write grant (streaming.cluster.grant)."""
        return KafkaClusterWriter(self, grant)
