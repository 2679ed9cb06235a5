"""The throttle janitor: reads ownership, plans (sinks.throttle_plan, pure), applies with read-back.

For the streaming job (driver side, inside foreachBatch; nothing here is pickled to executors):

    janitor = janitor_factory(config)          # config: JobConfig (bootstrap, command_config, timeout_s,
                                               #   throttle_cleanup, dry_run, ownership_topic)
    for action, key, value in janitor.on_batch(snapshot, batch_id):
        keyed_records.append((key, value))     # a `throttle` record for the progress topic
        throttle_actions.labels(scope=action.scope, action=action.action).inc()

`Janitor.on_batch(snapshot, batch_id) -> list[JanitorOutput]`; each output is a named tuple
(action: ThrottleAction, key: str, value: dict) with the key and value made by `throttle_record`. It
never raises for a cluster problem (the query must keep running): a failed read is logged and retried
next batch, a failed write is returned as a `failed` action. `snapshot` needs the tables brokers,
reassignments, topic_throttles and broker_throttles, and for claimed alter-log-dirs rates the poll's future
logs (log_dirs) and log_dirs_answered; and `errors`.

What one batch does:
1. Refresh the ownership records from Kafka (they were read fully at construction, so a job restarted
   between a completion and the removal finishes the removal: rule 5). Compare the poll with the two
   before it: throttles that appeared together with a reassignment started by another tool become an
   `observed` ownership record (sinks.throttle_observe), written before anything is removed.
2. Plan on the batch's snapshot. Steady state stops here: no extra admin request.
3. If something is due: re-read the cluster (reassignments, throttle configs, log dirs where needed)
   AFTER the ownership refresh and plan again on that. The batch's poll may predate an `execute` that
   has since started; planning on the fresh read means a throttle is only removed when a read taken
   after its ownership record was seen shows its partitions not moving.
4. Apply each action with one IncrementalAlterConfigs (SUBTRACT entries; DELETE or SET a rate) and
   read back until the cluster shows it (broker configs propagate asynchronously), else `failed`.
5. Mark ownership records `done` once a fresh read shows nothing of theirs left.
Dry run and `--throttle-cleanup off` stop after step 2 and report each due action once (again only
after it stopped being due for a batch), never writing to the cluster or the ownership topic.

`sweep(batch_id=-1)` does steps 1, 3-5 at once: what `verify` and `cancel` call.
`apply(actions)` is step 4 alone (with read-back), for callers holding a plan of their own.

Broker rates are handled per broker only: kafka-python (like confluent-kafka) cannot describe the
cluster-default broker resource "", so a cluster-wide default rate is never set, read, or removed here.
"""

import sys
import time
from collections import deque
from typing import NamedTuple

from sinks import throttle_plan as tp
from sinks.ownership import DONE, new_request_id
from sinks.throttle_observe import observe
from sinks.records import THROTTLE_KIND, record, throttle_key
from streaming.vocabulary.config_keys import throttle_config_key
from streaming.vocabulary.snapshot import Snapshot, table


class JanitorOutput(NamedTuple):
    action: tp.ThrottleAction
    key: str
    value: dict


def describe(action):
    """One line saying what the action did (or would do, or failed to do)."""
    key = throttle_config_key(action.scope, action.kind)
    where = f"topic {action.name}" if action.scope == tp.TOPIC else f"broker {action.name}"
    what = {tp.SUBTRACT: f"removed {','.join(action.entries)} from {key}",
            tp.DELETE: f"deleted {key}={action.value}",
            tp.SET: f"restored {key}={action.restored_value} (was {action.value})"}[action.op]
    if action.action == tp.DRY_RUN:
        return f"{where}: dry run: {action.reason}"
    prefix = "FAILED " if action.action == tp.FAILED else ""
    return f"{where}: {prefix}{what}: {action.reason}"


def throttle_record(action, ts_ms, batch_id, cluster_id):
    """(key, value) of the progress-topic `throttle` record for one action (sinks.records shape)."""
    value = record(
        THROTTLE_KIND, ts_ms, batch_id, cluster_id, message=describe(action),
        topic=action.name if action.scope == tp.TOPIC else None,
        broker=int(action.name) if action.scope == tp.BROKER else None,
        request_id=",".join(action.request_ids) or None,
        throttle={"scope": action.scope, "name": action.name, "kind": action.kind, "action": action.action,
                  "entries": list(action.entries) or None, "value": action.value,
                  "restored_value": action.restored_value, "reason": action.reason})
    return throttle_key(action.scope, action.name), value


def read_cluster(admin, topics, log_dir_brokers=(), now_ms=None):
    """A Snapshot read now: brokers, reassignments, throttle configs of `topics` and of every alive broker,
    and the log dirs of `log_dir_brokers` (future logs only). Raises on any failed request."""
    cluster_id, brokers = admin.describe_cluster()
    reassignments = admin.list_reassignments()
    alive = sorted(b["broker"] for b in brokers if b["alive"])
    topic_rows, broker_rows = admin.describe_throttles(sorted(set(topics)), alive)
    log_dirs, answered = [], set()
    for broker in sorted(set(log_dir_brokers) & set(alive)):
        log_dirs += [r for r in admin.describe_log_dirs(broker) if r["is_future"]]
        answered.add(broker)
    return Snapshot(
        ts_ms=int(time.time() * 1000) if now_ms is None else now_ms, cluster_id=cluster_id,
        tables={"brokers": table("brokers", brokers),
                "log_dirs_answered": table("log_dirs_answered", [{"broker": b} for b in sorted(answered)]),
                "reassignments": table("reassignments", reassignments),
                "topic_throttles": table("topic_throttles", topic_rows),
                "broker_throttles": table("broker_throttles", broker_rows),
                "log_dirs": table("log_dirs", log_dirs)})


def _failed(action, why):
    return tp.ThrottleAction(action.scope, action.name, action.kind, tp.FAILED, action.op, action.entries,
                             action.value, action.restored_value, f"{why} ({action.reason})", action.request_ids)


class Janitor:
    """See the module docstring. `admin`: streaming.cluster.admin.ClusterAdmin (reads, and IncrementalAlterConfigs
    through `alter_throttles`); `store`: OwnershipStore."""

    def __init__(self, admin, store, policy=tp.Policy(), readback_timeout_s=15.0, log=None):
        self.admin, self.store, self.policy = admin, store, policy
        self.readback_timeout_s = readback_timeout_s
        self.log = log or (lambda line: print(f"throttle janitor: {line}", file=sys.stderr, flush=True))
        self._reported = set()  # dry-run actions already reported while they stay due
        self._history = deque(maxlen=2)  # the last complete views, to see throttles appear with a reassignment
        self._observed = []  # dry run / off: observed ownership kept in memory only (nothing is written)

    # -- entry points --

    def on_batch(self, snapshot, batch_id):
        try:
            self.store.refresh()
            self._observe(snapshot, self.store.records())
            records = self.store.records() + self._observed
            due = tp.plan(snapshot, records, self.policy)
            if not self.policy.acts:
                self._observed = [r for r in self._observed if not tp.settled(snapshot, r, records, self.policy)]
                return self._outputs(self._new_reports(due), snapshot, batch_id)
            if not due and not self._settle_candidates(snapshot, records):
                return []
            return self._act(records, snapshot, batch_id, hint=due)
        except Exception as error:  # the streaming query must survive a cluster hiccup: retry next batch
            self.log(f"batch {batch_id}: skipped: {type(error).__name__}: {error}")
            return []

    def sweep(self, batch_id=-1):
        """Refresh ownership, read the cluster now, remove what is due, settle records. Raises on read errors."""
        self.store.refresh()
        records = self.store.records()
        if not self.policy.acts:
            fresh = self._read(records, hint=None)
            return self._outputs(tp.plan(fresh, records, self.policy), fresh, batch_id)
        return self._act(records, None, batch_id, hint=None)

    # -- steps --

    def _observe(self, snapshot, records):
        """Record throttles that appeared together with a reassignment this job saw start (rule 4)."""
        if self.policy.cleanup == tp.ALL:
            return
        view = tp.view_of(snapshot)
        if not view.complete:
            self._history.clear()  # a gap: what looks new after it may just have been unseen
            return
        request_id = new_request_id([r.request_id for r in records], view.now_ms)
        found = observe(list(self._history), view, records + self._observed, request_id, view.now_ms)
        self._history.append(view)
        if found is None:
            return
        if self.policy.acts:
            self.store.put(found)
        else:
            self._observed.append(found)
        claims = [f"{c.topic} {c.kind} {c.partition}:{c.broker}" for c in found.entries]
        claims += [f"broker {c.broker} {c.kind} rate" for c in found.rates]
        self.log(f"observed with reassignments started by another tool ({request_id}): {', '.join(claims)}")

    def _act(self, records, snapshot, batch_id, hint):
        fresh = self._read(records, hint)
        actions = tp.plan(fresh, records, self.policy)
        done, after = self.apply(actions, records)
        self._settle(records, after or fresh)
        return self._outputs(done, fresh, batch_id)

    def _read(self, records, hint):
        topics = {c.topic for r in records if r.state != DONE for c in r.entries}
        if self.policy.cleanup == tp.ALL:
            if hint is None:
                topics |= {row["topic"] for row in self.admin.describe_partitions(None)}
            else:
                topics |= {a.name for a in hint if a.scope == tp.TOPIC}
        log_dir_brokers = {c.broker for r in records if r.state != DONE for c in r.rates if c.kind == tp.ALTER_LOG_DIRS}
        if self.policy.cleanup == tp.ALL:
            log_dir_brokers |= {int(a.name) for a in (hint or ()) if a.kind == tp.ALTER_LOG_DIRS}
            if hint is None:
                log_dir_brokers |= {b["broker"] for b in self.admin.describe_cluster()[1]}
        return read_cluster(self.admin, topics, log_dir_brokers)

    def apply(self, actions, records=()):
        """Carry out `actions` (a plan), then read back until the cluster shows each (or the deadline: the
        action comes back `failed`). Idempotent: SUBTRACT of absent entries and DELETE of absent keys are
        no-ops. Returns the outcomes and the last read-back, which also covers the topics `records` claim."""
        outcome = {}
        changes = [(a.scope, a.name, a.kind, a.op, ",".join(a.entries) if a.op == tp.SUBTRACT else a.restored_value)
                   for a in actions]
        try:
            refusals = self.admin.alter_throttles(changes)
        except Exception as error:
            refusals = [f"{type(error).__name__}: {error}"] * len(actions)
        for action, refusal in zip(actions, refusals):
            if refusal is not None:
                outcome[action] = _failed(action, f"refused: {refusal}")
        attempted = [a for a in actions if a not in outcome]
        topics = {a.name for a in attempted if a.scope == tp.TOPIC} | {c.topic for r in records if r.state != DONE for c in r.entries}
        deadline, after = time.monotonic() + self.readback_timeout_s, None
        while attempted:
            try:
                after = read_cluster(self.admin, topics)
                attempted = [a for a in attempted if not tp.confirmed(a, after)]
            except Exception as error:
                after = None
                self.log(f"read-back failed: {type(error).__name__}: {error}")
            if not attempted or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        for action in attempted:
            outcome[action] = _failed(action, f"not confirmed by read-back within {self.readback_timeout_s:g}s")
        return [outcome.get(a, a) for a in actions], (after if not attempted else None)

    def _settle_candidates(self, snapshot, records):
        return [r for r in records if r.state != DONE and tp.settled(snapshot, r, records, self.policy)]

    def _settle(self, records, now):
        """Mark `done` the records that `now` - a read taken after the ownership refresh, never a batch's
        older poll - shows settled."""
        for owned in records:
            if owned.state != DONE and tp.settled(now, owned, records, self.policy):
                self.store.put(owned.with_state(DONE, now.ts_ms, note="every claimed throttle is gone"))

    def _new_reports(self, actions):
        identities = {a: (a.scope, a.name, a.kind, a.op, a.entries, a.value, a.restored_value) for a in actions}
        new = [a for a in actions if identities[a] not in self._reported]
        self._reported = set(identities.values())
        return new

    def _outputs(self, actions, snapshot, batch_id):
        ts_ms = int(time.time() * 1000)
        cluster_id = snapshot.cluster_id if snapshot is not None else ""
        for action in actions:
            self.log(describe(action))
        return [JanitorOutput(a, *throttle_record(a, ts_ms, batch_id, cluster_id)) for a in actions]


def janitor_factory(config, admin):
    """The Janitor the streaming job runs (driver side), from its JobConfig and the driver's admin."""
    from sinks.ownership import KafkaOwnershipStore

    store = KafkaOwnershipStore(admin, config.ownership_topic, create=True)
    return Janitor(admin, store, tp.Policy(cleanup=config.throttle_cleanup, dry_run=config.dry_run))
