"""The cluster as the janitor's rules see it: `view_of(snapshot) -> ClusterView`, extracted once. Pure."""

from dataclasses import dataclass, field

from streaming.vocabulary.kafka_apis import DECISION_APIS


@dataclass(frozen=True)
class ClusterView:
    """What the rules look at, extracted once from a Snapshot."""
    now_ms: int
    complete: bool
    reassigning: frozenset  # (topic, partition)
    moving_brokers: frozenset  # brokers in replicas/adding/removing of any ongoing reassignment
    alive: frozenset
    registered: frozenset
    log_dirs_known: frozenset  # brokers whose log dirs this view holds (so future logs are known)
    future_log_brokers: frozenset
    topic_values: dict  # (topic, kind) -> raw value
    broker_rates: dict  # (broker, kind) -> rate; per broker only (the cluster default is not handled)
    ongoing: dict = field(default_factory=dict)  # (topic, partition) -> (replicas, adding, removing)


def view_of(snapshot):
    if isinstance(snapshot, ClusterView):
        return snapshot
    failed = {e.api for e in snapshot.errors}
    ongoing = {(row["topic"], row["partition"]): tuple(tuple(row[c] or ()) for c in ("replicas", "adding", "removing"))
               for row in snapshot["reassignments"]}
    brokers_moving = {b for lists in ongoing.values() for brokers in lists for b in brokers}
    brokers = snapshot["brokers"]
    return ClusterView(
        now_ms=int(snapshot.ts_ms),
        complete=not (failed & set(DECISION_APIS)) and bool(brokers),
        reassigning=frozenset(ongoing),
        moving_brokers=frozenset(brokers_moving),
        alive=snapshot.alive_brokers(),
        registered=frozenset(b["broker"] for b in brokers),
        log_dirs_known=snapshot.answered_brokers(),
        future_log_brokers=frozenset(r["broker"] for r in snapshot["log_dirs"] if r["is_future"]),
        topic_values={(r["topic"], r["kind"]): r["value"] for r in snapshot["topic_throttles"]},
        broker_rates={(r["broker"], r["kind"]): r["rate"] for r in snapshot["broker_throttles"] if r["broker"] >= 0},
        ongoing=ongoing,
    )
