"""The cluster as the janitor's rules see it: `view_of(snapshot) -> ClusterView`, extracted once, and
`after_actions(view, actions)`: the same view once the janitor's actions were carried out. Pure."""

from dataclasses import dataclass, field, replace

from streaming.vocabulary import throttle_entries as te
from streaming.vocabulary.config_keys import DELETE, SET, SUBTRACT, TOPIC

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


def after_actions(view, actions):
    """`view` with `actions` (carried out and confirmed) applied: what the cluster shows once the janitor acted,
    so that what the janitor itself removed or restored is never mistaken for someone else's change."""
    topics, rates = dict(view.topic_values), dict(view.broker_rates)
    for action in actions:
        if action.scope == TOPIC:
            key = (action.name, action.kind)
            if action.op == DELETE:
                topics.pop(key, None)
            elif action.op == SUBTRACT:
                topics[key] = te.format_entries(te.parse(topics.get(key)) - {te.parse_entry(e) for e in action.entries})
        elif action.op == DELETE:
            rates.pop((int(action.name), action.kind), None)
        elif action.op == SET:
            rates[(int(action.name), action.kind)] = int(action.restored_value)
    return replace(view, topic_values=topics, broker_rates=rates)
