"""The one writer: every change this project makes to the cluster's state and to the ownership topic.

Decisions are pure (streaming.control.throttles.removal, .adoption, .steering, streaming.control.plans.step);
`Applier` carries them out through the door's writer (streaming.cluster.admin.ClusterWriter) and the ledger it is
given. It is the only holder of a writer: `applier_of` is the one factory, and only this module imports the write
grant that opens the door's writer (streaming.cluster.grant; pyproject.toml's contract "One writer" and
tests/test_one_writer.py). The ledger's writes take that writer as an argument, so only the applier can make
them. The streaming job's controller and driver and the CLI commands (`execute`, `verify`, `cancel`, `pause`,
`resume`) each get theirs from `applier_of`. Reads are not here: anyone may read, through the door
(streaming.cluster.admin.ClusterReader).

- `apply(actions)`: throttle actions (SUBTRACT entries; DELETE or SET a rate) in one IncrementalAlterConfigs
  per broker, then read back until the cluster shows each (broker configs propagate asynchronously). An action
  refused or not confirmed by the deadline comes back `failed`, except a topic's action refused because the
  topic was deleted meanwhile: its configs went with it, the action is done.
- `apply_sweep(decided)`: a sweep's decision (streaming.control.sweep.Decided): the records that give a claim up
  written back, its actions applied as `apply` does, and the records the read-back shows settled marked `done`.
- `set_throttles(setting)`: APPEND entries and SET rates (both idempotent) as `execute` and a plan's wave set
  them, set again what a read-back misses, until the cluster shows them.
- `start_moves`, `cancel_moves`, `move_log_dirs`: AlterPartitionReassignments (to a target; KIP-455 cancel) and
  AlterReplicaLogDirs, as the door answers them (per partition or replica: None, or the refusal's name).
- `record`, `record_plan`, `record_lease`: the ledger's writes, durable when they return.
- `create_topic`, `publisher(topic)`: the project's own topics: created (waiting for their leaders), and
  records written to one of them (the progress topic) by whoever is handed its publisher.
"""

import sys
import time
from dataclasses import replace

from streaming.cluster.grant import WRITE_GRANT
from streaming.control.sweep import Swept, settlements
from streaming.control.throttles.bookkeeping import confirmed
from streaming.control.throttles.read import read_cluster
from streaming.control.throttles.view import view_of
from streaming.vocabulary import throttle_entries as te
from streaming.vocabulary.config_keys import APPEND, BROKER, SET, SUBTRACT, TOPIC
from streaming.vocabulary.errors import TOPIC_DELETED, ClusterError
from streaming.vocabulary.throttle_actions import FAILED
from streaming.vocabulary.states import OwnershipState

READBACK_TIMEOUT_S = 15.0
# The first read-back after an alter usually comes before the brokers applied it: at 0.25 s between reads a sweep's
# read-back took 0.54-0.59 s (the cut-off test's job log), during which the controller noticed no other move's end,
# and the second of two moves ending together had its throttles removed 1.44 s after its end.
READBACK_INTERVAL_S = 0.1
MIN_READBACK_S = 5.0  # setting throttles: the read-back waits at least this long, whatever --timeout is
REAPPLY_S = 1.0  # setting throttles: what a read-back still misses this long after it was set is set again


def _stderr(line):
    print(line, file=sys.stderr, flush=True)


def failed(action, why):
    return replace(action, action=FAILED, reason=f"{why} ({action.reason})")


def some(items, shown=3):
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def missing_from(setting, snapshot):
    """What of a ThrottleSetting (streaming.control.throttles.claims) the cluster does not show yet, one string each."""
    view = view_of(snapshot)
    missing = [f"{t} {k}: {te.format_entries(pairs - te.parse(view.topic_values.get((t, k))))}"
               for (t, k), pairs in setting.appends.items() if pairs - te.parse(view.topic_values.get((t, k)))]
    missing += [f"broker {b} {k}" for (b, k), rate in setting.rates.items() if view.broker_rates.get((b, k)) != rate]
    return missing


def applier_of(door, ledger=None, log=_stderr, readback_timeout_s=READBACK_TIMEOUT_S):
    """The one writer over `door` (streaming.cluster.admin.ClusterReader) and `ledger`
    (streaming.control.ownership.store.Ledger, None for a writer that needs none): the one factory."""
    return Applier(door, door.writer(WRITE_GRANT), ledger, readback_timeout_s, log)


class Publisher:
    """Records to one of the project's own topics (the progress topic), the one write its holder can make."""

    def __init__(self, writer, topic):
        self._writer, self.topic = writer, topic

    def write(self, keyed_values, timeout_s=30.0):
        """Write (key, encoded value) pairs and wait until all are acknowledged; raise if any failed."""
        self._writer.produce(self.topic, keyed_values, timeout_s)


class Applier:
    """`reader`: the door (streaming.cluster.admin.ClusterReader), for read-backs; `writer`: its writer
    (streaming.cluster.admin.ClusterWriter); `ledger`: streaming.control.ownership.store.Ledger. Made by
    `applier_of`."""

    def __init__(self, reader, writer, ledger, readback_timeout_s=READBACK_TIMEOUT_S, log=_stderr):
        self.reader, self._writer, self.ledger = reader, writer, ledger
        self.readback_timeout_s, self.log = readback_timeout_s, log

    # -- throttles --

    def apply(self, actions, records=(), timings=None):
        """Carry out throttle `actions`, then read back until the cluster shows each (or the deadline: the action
        comes back `failed`). Idempotent: SUBTRACT of absent entries and DELETE of absent keys are no-ops.
        Returns the outcomes and the last read-back, which also covers the topics `records` claim (None when an
        action was not confirmed). `timings` (a dict), if given, gets the seconds of the change ("alter") and of
        the read-back ("read_back")."""
        started = time.monotonic()
        outcome = {}
        changes = [(a.scope, a.name, a.kind, a.op, ",".join(a.entries) if a.op == SUBTRACT else a.restored_value)
                   for a in actions]
        try:
            refusals = self._writer.alter_throttles(changes)
        except Exception as error:
            refusals = [f"{type(error).__name__}: {error}"] * len(actions)
        for action, refusal in zip(actions, refusals):
            if refusal == TOPIC_DELETED and action.scope == TOPIC:  # deleted between the read and the alter
                outcome[action] = replace(action, reason=f"{action.reason}; {TOPIC_DELETED}")
            elif refusal is not None:
                outcome[action] = failed(action, f"refused: {refusal}")
        attempted = [a for a in actions if a not in outcome]
        altered = time.monotonic()
        topics = ({a.name for a in attempted if a.scope == TOPIC}
                  | {c.topic for r in records if r.state != OwnershipState.DONE for c in r.entries})
        deadline, after = time.monotonic() + self.readback_timeout_s, None
        while attempted:
            try:
                after = read_cluster(self.reader, topics)
                attempted = [a for a in attempted if not confirmed(a, after)]
            except Exception as error:
                after = None
                self.log(f"read-back failed: {type(error).__name__}: {error}")
            if not attempted or time.monotonic() > deadline:
                break
            time.sleep(READBACK_INTERVAL_S)
        for action in attempted:
            outcome[action] = failed(action, f"not confirmed by read-back within {self.readback_timeout_s:g}s")
        if timings is not None:
            timings.update(alter=altered - started, read_back=time.monotonic() - altered)
        return [outcome.get(a, a) for a in actions], (after if not attempted else None)

    def apply_sweep(self, decided, steps):
        """Carry out a sweep's decision (streaming.control.sweep.Decided, under a policy that acts): its given-up
        records written back first, then its actions (`apply`), then the records the read-back - or, when an action
        was not confirmed, the sweep's own read - shows settled, marked `done`. `steps` (a dict: the sweep's
        seconds so far) gets those of alter, read_back and records. Returns the streaming.control.sweep.Swept."""
        for record in decided.given_up:
            self.record(record)
        done, after = self.apply(decided.actions, decided.records, timings=steps)
        settling = time.monotonic()
        for record in settlements(after or decided.fresh, decided.records, decided.policy):
            self.record(record)
        steps["records"] = time.monotonic() - settling
        return Swept(done, decided.fresh, steps)

    def set_throttles(self, setting, timeout_s):
        """APPEND and SET (both idempotent) until the cluster shows them. ClusterError when refused or not visible
        within max(timeout_s, MIN_READBACK_S). What a read-back misses is set again: a janitor whose ledger predates
        this request's record may take out, between the set and the read-back, a throttle this request shares with
        an older finished one (seen: a plan's next wave's alter-log-dirs rate, swept by the job as its earlier wave
        ended); its next sweep reads the ledger first and keeps it."""
        changes = [(TOPIC, topic, kind, APPEND, te.format_entries(pairs))
                   for (topic, kind), pairs in sorted(setting.appends.items())]
        changes += [(BROKER, broker, kind, SET, rate) for (broker, kind), rate in sorted(setting.rates.items())]
        deadline = time.monotonic() + max(timeout_s, MIN_READBACK_S)
        applied_s = None
        while True:
            if applied_s is None or time.monotonic() - applied_s >= REAPPLY_S:
                self._alter(changes)
                applied_s = time.monotonic()
            missing = missing_from(setting, read_cluster(self.reader, {t for t, _ in setting.appends}))
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"throttles not visible after setting them: {'; '.join(missing)}")
            time.sleep(READBACK_INTERVAL_S)

    def _alter(self, changes):
        refused = {}
        for (scope, name, kind, _, _), error in zip(changes, self._writer.alter_throttles(changes)):
            if error is not None:
                refused.setdefault(error, []).append(f"{scope} {name} {kind}")
        if refused:
            raise ClusterError("setting throttles refused: " + "; ".join(
                f"{error} ({some(where)})" for error, where in refused.items()))

    # -- reassignments --

    def start_moves(self, targets):
        """AlterPartitionReassignments of {(topic, partition): target replicas}: (topic, partition) -> None
        (accepted) or the refusal's name."""
        return self._writer.start_reassignments(targets)

    def cancel_moves(self, partitions):
        """KIP-455 cancel: (topic, partition) -> None (accepted) or the refusal's name."""
        return self._writer.cancel_reassignments(list(partitions))

    def move_log_dirs(self, wanted):
        """AlterReplicaLogDirs of {(topic, partition, broker): log dir}: each replica -> None or the refusal's name."""
        return self._writer.alter_replica_log_dirs(wanted)

    # -- the ledger --

    def record(self, ownership):
        self.ledger.put(ownership, self._writer)

    def record_plan(self, plan, with_parts=False):
        self.ledger.put_plan(plan, self._writer, with_parts)

    def record_lease(self, lease):
        self.ledger.put_lease(lease, self._writer)

    # -- the project's own topics --

    def create_topic(self, name, partitions, config, min_insync_replicas=None):
        """Create `name` unless it exists, and wait until every partition has a leader: True when created."""
        return self._writer.ensure_topic(name, partitions, config, min_insync_replicas)

    def publisher(self, topic):
        """The Publisher of records to `topic`: what the job's batches and controller write the progress topic with."""
        return Publisher(self._writer, topic)

    def publish(self, topic, keyed_values, timeout_s=None):
        """Write (key, encoded value) pairs to `topic` and wait until all are acknowledged."""
        self._writer.produce(topic, keyed_values, timeout_s)
