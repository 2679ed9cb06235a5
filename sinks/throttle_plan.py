"""The throttle janitor's decision, pure: `plan(snapshot, owned_records, policy) -> [ThrottleAction]`.

No I/O and no clock: the cluster comes in as a Snapshot (or the ClusterView made of it), ownership as
`sinks.ownership.Ownership` records, "now" is the snapshot's `ts_ms`. `sinks.janitor` does the I/O.

Safety rules (DESIGN.md "Throttle janitor: safety rules") and where each lives here:

1. An entry `p:b` stays while partition p of its topic reassigns: `partition_still_reassigning`.
2. A broker rate stays while any ongoing reassignment has the broker as a source or destination
   (any broker in replicas/adding/removing of a reassigning partition; for the alter-log-dirs rate also
   while the broker holds a future log or its log dirs are unknown): `broker_still_moving`.
3. Surgical: only entries some record claims are candidates, removed with SUBTRACT; `*` is never an
   entry and foreign entries are never claimed. A broker rate someone changed after us is theirs.
4. Policies: `owned` (claims of records whose owner lets go: `owner_still_needs`), `all` (every
   throttle once nothing reassigns, like `kafka-reassign-partitions --verify`), `off` (report only:
   the owned plan as dry-run actions). A prior value is restored instead of deleted (owned).
5./6. Ownership lives in Kafka (sinks.ownership); every plan is recomputed from the cluster, so applying
   it twice is harmless: once applied, nothing it removed is there to remove again.
7. Dry run: the same plan with every action turned into `dry_run`.

Topic and broker throttles each go through one loop over their kinds (leader and follower alike).
Broker rates are per broker only (the cluster default `""` cannot be described with our clients).
`plan` refuses to decide (returns []) on a poll that missed an API it depends on: a missing
reassignment list would otherwise read as "nothing moves".
"""

from collections import defaultdict
from dataclasses import dataclass, field, replace

from sinks import throttle_entries as te
from sinks.metric_names import THROTTLE_ACTION_NAMES
from sinks.ownership import ABORTED, DONE, PENDING
from streaming.vocabulary.config_keys import BROKER, BROKER_THROTTLE_KEYS, DELETE, SET, SUBTRACT, TOPIC, TOPIC_THROTTLE_KEYS

REMOVED, RESTORED, DRY_RUN, FAILED = THROTTLE_ACTION_NAMES
OWNED, ALL, OFF = POLICIES = ("owned", "all", "off")
ALTER_LOG_DIRS = "alter_log_dirs"

# A poll missing any of these cannot tell what still moves or what is set: decide nothing on it.
DECISION_APIS = ("DescribeCluster", "ListPartitionReassignments", "DescribeConfigs")
PENDING_GRACE_MS = 10 * 60 * 1000  # a `pending` record older than this is an execute that died midway


@dataclass(frozen=True)
class Policy:
    cleanup: str = OWNED
    dry_run: bool = False
    release: frozenset = frozenset()  # request ids whose --no-auto-remove-throttle an explicit verify/cancel overrides
    pending_grace_ms: int = PENDING_GRACE_MS

    def __post_init__(self):
        if self.cleanup not in POLICIES:
            raise ValueError(f"throttle cleanup policy must be one of {', '.join(POLICIES)}: {self.cleanup!r}")

    @property
    def acts(self):
        return not self.dry_run and self.cleanup != OFF


@dataclass(frozen=True)
class ThrottleAction:
    scope: str  # topic | broker
    name: str  # topic name or broker id
    kind: str  # leader | follower | alter_log_dirs
    action: str  # removed | restored | dry_run | failed
    op: str  # subtract | delete | set
    entries: tuple[str, ...] = ()  # topic: the `p:b` entries taken out
    value: str | None = None  # the value before
    restored_value: str | None = None  # broker: the prior value put back
    reason: str = ""
    request_ids: tuple[str, ...] = ()


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
    ongoing = {(row["topic"], int(row["partition"])): tuple(
                   tuple(int(b) for b in (row[c] if row[c] is not None else ())) for c in ("replicas", "adding", "removing"))
               for row in snapshot["reassignments"].to_dict("records")}
    brokers_moving = {b for lists in ongoing.values() for brokers in lists for b in brokers}
    brokers = snapshot["brokers"]
    log_dirs = snapshot["log_dirs"]
    return ClusterView(
        now_ms=int(snapshot.ts_ms),
        complete=not (failed & set(DECISION_APIS)) and not brokers.empty,
        reassigning=frozenset(ongoing),
        moving_brokers=frozenset(brokers_moving),
        alive=snapshot.alive_brokers(),
        registered=frozenset(int(b) for b in brokers["broker"]),
        log_dirs_known=snapshot.answered_brokers(),
        future_log_brokers=frozenset(int(b) for b in log_dirs.loc[log_dirs["is_future"], "broker"]),
        topic_values={(r["topic"], r["kind"]): r["value"] for r in snapshot["topic_throttles"].to_dict("records")},
        broker_rates={(int(r["broker"]), r["kind"]): int(r["rate"])
                      for r in snapshot["broker_throttles"].to_dict("records") if int(r["broker"]) >= 0},
        ongoing=ongoing,
    )


# ---- the rules: each returns why a throttle must stay (a one-line reason), or None ----

def owner_lets_go(record, view, policy):
    """None when `record` no longer needs its throttles kept for its own sake (rule 4), else why."""
    if record.state == PENDING and view.now_ms - record.created_ms < policy.pending_grace_ms:
        return f"request {record.request_id} is still being executed"
    if not record.auto_remove and record.state != ABORTED and record.request_id not in policy.release:
        return f"request {record.request_id} was executed with --no-auto-remove-throttle"
    return None


def owner_still_needs(view, owners, policy):
    for record in owners:
        reason = owner_lets_go(record, view, policy)
        if reason:
            return reason
    return None


def partition_still_reassigning(view, topic, partition):  # rule 1
    if (topic, partition) in view.reassigning:
        return f"{topic}-{partition} is still reassigning"
    return None


def broker_still_moving(view, broker, kind):  # rule 2
    if broker in view.moving_brokers:
        return f"broker {broker} is a source or destination of an ongoing reassignment"
    if kind == ALTER_LOG_DIRS:
        if broker not in view.log_dirs_known:
            return f"log dirs of broker {broker} unknown"
        if broker in view.future_log_brokers:
            return f"broker {broker} is moving a replica between log dirs"
    return None


def broker_unreachable(view, broker):
    if broker not in view.alive:
        return f"broker {broker} is not alive"
    return None


def entry_blocker(view, topic, partition, owners, policy):
    """The order in which an owned topic entry's rules are asked; the first reason wins."""
    return (partition_still_reassigning(view, topic, partition)
            or owner_still_needs(view, owners, policy))


def rate_blocker(view, broker, kind, owners, policy):
    """The order in which an owned broker rate's rules are asked; the first reason wins."""
    return (broker_still_moving(view, broker, kind)
            or broker_unreachable(view, broker)
            or owner_still_needs(view, owners, policy))


# ---- plans ----

def _ids(records):
    return tuple(sorted({r.request_id for r in records}))


def entry_owners(records):
    """(topic, kind) -> (partition, broker) -> [records claiming it]."""
    owners = defaultdict(lambda: defaultdict(list))
    for record in records:
        for claim in record.entries:
            owners[(claim.topic, claim.kind)][(claim.partition, claim.broker)].append(record)
    return owners


def rate_owners(records):
    """(broker, kind) -> [(record, claim)], earliest request first."""
    owners = defaultdict(list)
    for record in sorted(records, key=lambda r: (r.created_ms, r.request_id)):
        for claim in record.rates:
            owners[(claim.broker, claim.kind)].append((record, claim))
    return owners


def _plan_owned(view, records, policy):
    actions = []
    for (topic, kind), claimed in sorted(entry_owners(records).items()):
        value = view.topic_values.get((topic, kind))
        present = te.parse(value)
        removable = {pb: owners for pb, owners in claimed.items()
                     if pb in present and not entry_blocker(view, topic, pb[0], owners, policy)}
        if removable:
            partitions = sorted({p for p, _ in removable})
            actions.append(ThrottleAction(
                TOPIC, topic, kind, REMOVED, SUBTRACT, entries=tuple(te.entry_strings(removable)), value=value,
                reason=f"no longer reassigning: {', '.join(f'{topic}-{p}' for p in partitions)}",
                request_ids=_ids(r for owners in removable.values() for r in owners)))
    for (broker, kind), owned in sorted(rate_owners(records).items()):
        current = view.broker_rates.get((broker, kind))
        owners = [record for record, _ in owned]
        if current is None or current not in {claim.rate for _, claim in owned}:
            continue  # gone, or changed by someone else since we set it: not ours to touch
        if rate_blocker(view, broker, kind, owners, policy):
            continue
        prior = owned[0][1].prior  # the value before the earliest of our requests set it
        reason = f"no ongoing reassignment uses broker {broker}"
        if prior is None:
            actions.append(ThrottleAction(BROKER, str(broker), kind, REMOVED, DELETE, value=str(current),
                                          reason=reason, request_ids=_ids(owners)))
        elif prior != current:
            actions.append(ThrottleAction(BROKER, str(broker), kind, RESTORED, SET, value=str(current),
                                          restored_value=str(prior), reason=f"{reason}; restoring the value it had before",
                                          request_ids=_ids(owners)))
    return actions


def execute_in_flight(view, records, policy):
    return any(r.state == PENDING and view.now_ms - r.created_ms < policy.pending_grace_ms for r in records)


def _plan_all(view, records, policy):
    if view.reassigning or execute_in_flight(view, records, policy):
        return []
    reason = "nothing is reassigning (--throttle-cleanup all)"
    actions = []
    for (topic, kind), value in sorted(view.topic_values.items()):
        if kind in TOPIC_THROTTLE_KEYS and (value or "").strip():
            entries = ("*",) if te.is_all(value) else tuple(te.entry_strings(te.parse(value)))
            actions.append(ThrottleAction(TOPIC, topic, kind, REMOVED, DELETE, entries=entries, value=value, reason=reason))
    for (broker, kind), rate in sorted(view.broker_rates.items()):
        if kind in BROKER_THROTTLE_KEYS and not (broker_still_moving(view, broker, kind) or broker_unreachable(view, broker)):
            actions.append(ThrottleAction(BROKER, str(broker), kind, REMOVED, DELETE, value=str(rate), reason=reason))
    return actions


def as_dry_run(action):
    verb = {SUBTRACT: f"subtract {','.join(action.entries)}", DELETE: "delete it",
            SET: f"restore {action.restored_value}"}[action.op]
    return replace(action, action=DRY_RUN, reason=f"dry run, would {verb}: {action.reason}")


def plan(snapshot, owned_records, policy=Policy()):
    """The throttle actions due now. Pure; `snapshot` is a Snapshot or a ClusterView."""
    view = view_of(snapshot)
    if not view.complete:
        return []
    active = [r for r in owned_records if r.state != DONE]
    actions = (_plan_all if policy.cleanup == ALL else _plan_owned)(view, active, policy)
    return actions if policy.acts else [as_dry_run(a) for a in actions]


# ---- after the fact: read-back and bookkeeping ----

def confirmed(action, snapshot):
    """Whether the cluster shows `action` carried out (the read-back after apply)."""
    view = view_of(snapshot)
    if action.scope == TOPIC:
        value = view.topic_values.get((action.name, action.kind))
        if action.op == DELETE:
            return not (value or "").strip()
        return not (te.parse(value) & {te.parse_entry(e) for e in action.entries})
    current = view.broker_rates.get((int(action.name), action.kind))
    return current is None if action.op == DELETE else current == int(action.restored_value)


def settled(snapshot, record, owned_records, policy=Policy()):
    """True when `record` has nothing left to remove: its owner lets go, none of its partitions moves, and
    none of its claims is still in place (removed, restored, or since changed by someone else)."""
    view = view_of(snapshot)
    if not view.complete or record.state == DONE or owner_lets_go(record, view, policy):
        return False
    if any((m.topic, m.partition) in view.reassigning for m in record.moves):
        return False
    if any((c.partition, c.broker) in te.parse(view.topic_values.get((c.topic, c.kind))) for c in record.entries):
        return False
    owners = rate_owners([r for r in owned_records if r.state != DONE])
    for claim in record.rates:
        if claim.broker not in view.registered:
            continue  # the broker left the cluster: nothing of it to restore
        if claim.broker not in view.alive:
            return False
        current = view.broker_rates.get((claim.broker, claim.kind))
        if current is not None and current != claim.prior and current in {c.rate for _, c in owners[(claim.broker, claim.kind)]}:
            return False
    return True


def applied(snapshot, actions):
    """The view after `actions` were carried out: what `apply` is expected to leave (tests, read-back)."""
    view = view_of(snapshot)
    topics, rates = dict(view.topic_values), dict(view.broker_rates)
    for action in actions:
        if action.action in (DRY_RUN, FAILED):
            continue
        if action.scope == TOPIC:
            key = (action.name, action.kind)
            if action.op == DELETE:
                topics.pop(key, None)
            elif not te.is_all(topics.get(key)):
                left = te.parse(topics.get(key)) - {te.parse_entry(e) for e in action.entries}
                topics[key] = te.format_entries(left)
        else:
            key = (int(action.name), action.kind)
            if action.op == DELETE:
                rates.pop(key, None)
            else:
                rates[key] = int(action.restored_value)
    return replace(view, topic_values=topics, broker_rates=rates)
