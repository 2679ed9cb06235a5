"""The throttle janitor's orchestration: reads ownership, plans (streaming.control.throttles.removal, pure), applies with read-back.

For the streaming job (driver side, inside foreachBatch; nothing here is pickled to executors):

    janitor = janitor_factory(config, admin)   # config: JobConfig (bootstrap, command_config, timeout_s,
                                               #   throttle_cleanup, dry_run, ownership_topic)
    for action, key, value in janitor.on_batch(snapshot, batch_id):
        keyed_records.append((key, value))     # a `throttle` record for the progress topic
        throttle_actions.labels(scope=action.scope, action=action.action).inc()

`Janitor.on_batch(snapshot, batch_id) -> list[JanitorOutput]`; each output is a named tuple
(action: ThrottleAction, key: str, value: dict) with the key and value made by `throttle_record`
(sinks.throttle_records). It never raises for a cluster problem (the query must keep running): a failed
read is logged and retried next batch, a failed write is returned as a `failed` action. `snapshot` needs
the tables brokers, reassignments, topic_throttles and broker_throttles, and for claimed alter-log-dirs
rates the poll's future logs (log_dirs) and log_dirs_answered; and `errors`.

What one batch does:
1. Refresh the ownership records from Kafka (they were read fully at construction, so a job restarted
   between a completion and the removal finishes the removal: rule 5). Compare the poll with the two
   before it: throttles that appeared together with a reassignment started by another tool become an
   `observed` ownership record (streaming.control.throttles.adoption), written before anything is removed.
2. Plan on the batch's snapshot. Steady state stops here: no extra admin request.
3. If something is due: re-read the cluster (reassignments, throttle configs, log dirs where needed)
   AFTER the ownership refresh and plan again on that (streaming.control.throttles.read). The batch's poll may predate
   an `execute` that has since started; planning on the fresh read means a throttle is only removed when
   a read taken after its ownership record was seen shows its partitions not moving.
4. Apply each action with one IncrementalAlterConfigs (SUBTRACT entries; DELETE or SET a rate) and
   read back until the cluster shows it (broker configs propagate asynchronously), else `failed`
   (streaming.control.throttles.apply).
   Before planning, a record whose claimed rate that read shows changed gives the claim up and is written
   back without it (streaming.control.throttles.bookkeeping.given_up): the value is someone else's from then on.
5. Mark ownership records `done` once a fresh read shows nothing of theirs left
   (streaming.control.throttles.bookkeeping.settled).
Dry run and `--throttle-cleanup off` stop after step 2 and report each due action once (again only
after it stopped being due for a batch), never writing to the cluster or the ownership topic.

`sweep(batch_id=-1)` does steps 1, 3-5 at once: what `verify` and `cancel` call, and what the job's driver
watch (streaming.control) calls the moment an owned partition leaves the reassignment list. The job calls
`on_batch` from Spark's foreachBatch thread and `sweep`, `owned_partitions`, `accepted_moves` and `requests`
from the watch's thread: one lock serializes them, so the ownership store and the observer's history see one
caller at a time.
`streaming.control.throttles.apply.apply(admin, actions)` is step 4 alone (with read-back), for callers holding a
plan of their own.

Broker rates are handled per broker only: kafka-python (like confluent-kafka) cannot describe the
cluster-default broker resource "", so a cluster-wide default rate is never set, read, or removed here.
"""

import sys
import threading
import time
from collections import deque
from typing import NamedTuple

from streaming.vocabulary.throttle_actions import ALL, REMOVED, RESTORED, Policy, ThrottleAction
from streaming.control.throttles.apply import READBACK_TIMEOUT_S, apply
from streaming.control.throttles.bookkeeping import given_up, settled
from streaming.control.throttles.adoption import observe
from streaming.control.ownership.records import DONE, EXECUTE, accepted_moves, new_request_id
from streaming.control.ownership.store import KafkaOwnershipStore
from streaming.control.throttles.removal import plan
from streaming.control.throttles.read import read_cluster, read_for_plan
from sinks.throttle_records import describe, describe_claims, describe_observed, throttle_record
from streaming.control.throttles.view import after_actions, view_of


# The job's observer compares consecutive polls; polls further apart than this many triggers (at least a
# minute, so long batches at scale still observe) had a gap in between: the job ran no batch while nothing
# moved, and a throttle someone set meanwhile must not pass for one set with the next foreign reassignment.
OBSERVE_GAP_TRIGGERS = 3
OBSERVE_GAP_MIN_S = 60.0


class JanitorOutput(NamedTuple):
    action: ThrottleAction
    key: str
    value: dict


class Janitor:
    """See the module docstring. `admin`: streaming.cluster.admin.ClusterAdmin (reads, and IncrementalAlterConfigs
    through `alter_throttles`); `store`: OwnershipStore."""

    def __init__(self, admin, store, policy=Policy(), readback_timeout_s=READBACK_TIMEOUT_S, log=None,
                 observe_gap_ms=None):
        self.admin, self.store, self.policy = admin, store, policy
        # Polls further apart than this are a gap for the observer (the job's batches stop while nothing
        # moves: README contract change 24); None: no bound.
        self.observe_gap_ms = observe_gap_ms
        self._acted_ms = -1  # the time of the fresh read the latest removals were decided on
        self.readback_timeout_s = readback_timeout_s
        self.log = log or (lambda line: print(f"throttle janitor: {line}", file=sys.stderr, flush=True))
        self._reported = set()  # dry-run actions already reported while they stay due
        self._history = deque(maxlen=2)  # the last complete views, to see throttles appear with a reassignment
        self._observed = []  # dry run / off: observed ownership kept in memory only (nothing is written)
        self._lock = threading.RLock()  # the job's batch thread and its watch thread (module docstring)
        # Seconds of each step of the last sweep: ownership (refresh), read (the fresh read), alter and
        # read_back (streaming.control.throttles.apply), records (ownership records written after): what the watch logs.
        self.last_sweep_steps = {}

    def on_batch(self, snapshot, batch_id):
        with self._lock:
            return self._on_batch(snapshot, batch_id)

    def owned_partitions(self):
        """(topic, partition) of every move of an active ownership record, after reading what others wrote
        since the last call: what the job's watch must see leave the reassignment list."""
        with self._lock:
            self.store.refresh()
            return {(m.topic, m.partition) for r in self.store.records() + self._observed if r.active for m in r.moves}

    def accepted_moves(self):
        """The moves of active `execute` requests Kafka accepted, as `owned_partitions` last read them
        (streaming.control.ownership.records.accepted_moves): what the watch hands over when one ended unseen."""
        with self._lock:
            return accepted_moves(self.store.records())

    def requests(self):
        """Ongoing `execute` requests as last read: request id -> its (topic, partition)s."""
        with self._lock:
            return {r.request_id: [(m.topic, m.partition) for m in r.moves]
                    for r in self.store.records() if r.active and r.origin == EXECUTE}

    def _on_batch(self, snapshot, batch_id):
        try:
            self.store.refresh()
            if snapshot.ts_ms > self._acted_ms:  # an older poll shows throttles since removed, their records done
                self._observe(snapshot, self.store.records())
            records = self.store.records() + self._observed
            due = plan(snapshot, records, self.policy)
            if not self.policy.acts:
                self._observed = [r for r in self._observed if not settled(snapshot, r, records, self.policy)]
                return self._outputs(self._new_reports(due), snapshot, batch_id)
            if not due and not self._settle_candidates(snapshot, records) and not given_up(snapshot, records, self.policy):
                return []
            outputs = self._act(records, batch_id, hint=due)
            if self._history:  # the poll predates what was just done: our own removals are nobody's new throttles
                carried = [o.action for o in outputs if o.action.action in (REMOVED, RESTORED)]
                self._history[-1] = after_actions(self._history[-1], carried)
            return outputs
        except Exception as error:  # the streaming query must survive a cluster hiccup: retry next batch
            self.log(f"batch {batch_id}: skipped: {type(error).__name__}: {error}")
            return []

    def sweep(self, batch_id=-1):
        """Refresh ownership, read the cluster now, remove what is due, settle records. Raises on read errors."""
        with self._lock:
            return self._sweep(batch_id)

    def _sweep(self, batch_id):
        started = time.monotonic()
        self.store.refresh()
        records = self.store.records()
        self.last_sweep_steps = {"ownership": time.monotonic() - started}
        if not self.policy.acts:
            fresh = read_for_plan(self.admin, records, self.policy, hint=None)
            return self._outputs(plan(fresh, records, self.policy), fresh, batch_id)
        return self._act(records, batch_id, hint=None, steps=self.last_sweep_steps)

    def observe_now(self):
        """Observe the cluster as a poll would, read now: every topic's and broker's throttles and the
        reassignments. The job's watch calls it while no batch runs, so the observer's last view stays at
        most a trigger old and a move another tool starts after an idle stretch is still seen to bring its
        throttles (rule 4) - without it, the first batch after the gap could not tell. Raises on read errors."""
        with self._lock:
            if self.policy.cleanup == ALL:
                return
            self.store.refresh()
            topics = {row["topic"] for row in self.admin.describe_partitions(None)}
            self._observe(read_cluster(self.admin, topics), self.store.records())

    def _observe(self, snapshot, records):
        """Record throttles that appeared together with a reassignment this job saw start (rule 4)."""
        if self.policy.cleanup == ALL:
            return
        view = view_of(snapshot)
        gap_ms = view.now_ms - self._history[-1].now_ms if self._history else 0
        stale = self.observe_gap_ms is not None and gap_ms > self.observe_gap_ms
        if not view.complete or stale:
            self._history.clear()  # a gap: what looks new after it may just have been unseen
            if not view.complete:
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
        self.log(describe_observed(found))

    def _act(self, records, batch_id, hint, steps=None):
        steps = {} if steps is None else steps
        started = time.monotonic()
        fresh = read_for_plan(self.admin, records, self.policy, hint)
        self._acted_ms = max(self._acted_ms, fresh.ts_ms)
        steps["read"] = time.monotonic() - started
        records = self._give_up(records, fresh)
        done, after = apply(self.admin, plan(fresh, records, self.policy), records, self.readback_timeout_s, self.log,
                            timings=steps)
        settling = time.monotonic()
        self._settle(records, after or fresh)
        steps["records"] = time.monotonic() - settling
        return self._outputs(done, fresh, batch_id)

    def _give_up(self, records, now):
        """Write back without them the rate claims that `now` - a read taken after the ownership refresh - shows
        the cluster no longer holds. Returns the records as they are now."""
        rewritten = {r.request_id: r for r in given_up(now, records, self.policy)}
        for record in rewritten.values():
            self.store.put(record)
            self.log(f"request {record.request_id} no longer owns what the cluster changed since: "
                     f"now claims {describe_claims(record)}")
        return [rewritten.get(r.request_id, r) for r in records]

    def _settle_candidates(self, snapshot, records):
        return [r for r in records if r.state != DONE and settled(snapshot, r, records, self.policy)]

    def _settle(self, records, now):
        """Mark `done` the records that `now` - a read taken after the ownership refresh, never a batch's
        older poll - shows settled."""
        for owned in records:
            if owned.state != DONE and settled(now, owned, records, self.policy):
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
    store = KafkaOwnershipStore(admin, config.ownership_topic, create=True)
    return Janitor(admin, store, Policy(cleanup=config.throttle_cleanup, dry_run=config.dry_run),
                   observe_gap_ms=int(max(OBSERVE_GAP_TRIGGERS * config.trigger_interval_s, OBSERVE_GAP_MIN_S) * 1000))
