"""The throttle janitor as the job's controller runs it on a batch's findings (streaming.control.controller:
`on_batch`, the sweep of streaming.control.sweep) on an in-memory cluster and ledger: steady state costs nothing,
removal is decided on a fresh read, read back, recorded as done, reported once in dry run, survives a restart,
and every action's record is a valid progress-topic record."""

import json
import time
from dataclasses import replace

import jsonschema
import pytest

from sinks.records import SCHEMA_PATH
from sinks.throttle_records import throttle_record
from streaming.control.ownership.records import EntryClaim, Move, Ownership, RateClaim
from streaming.control.ownership.store import MemoryLedger
from streaming.control.throttles import removal as tp
from streaming.vocabulary import config_keys as ck
from streaming.vocabulary import throttle_actions as ta
from tests.controller_support import Writer, a_controller, findings
from tests.fake_cluster import FakeCluster
from streaming.vocabulary.states import OwnershipState

MB = 1_000_000
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def request(rid="R1", state=OwnershipState.STARTED, auto_remove=True, created_ms=None):
    now = int(time.time() * 1000) if created_ms is None else created_ms
    return Ownership(
        request_id=rid, state=state, created_ms=now - 1000, updated_ms=now - 1000, auto_remove=auto_remove,
        moves=(Move("t", 0, (1,), (2,)),),
        entries=(EntryClaim("t", "leader", 0, 1), EntryClaim("t", "follower", 0, 2)),
        rates=(RateClaim(1, "leader", MB, None), RateClaim(1, "follower", MB, None),
               RateClaim(2, "leader", MB, 5 * MB), RateClaim(2, "follower", MB, None)))


def throttled(moving=False):
    """The cluster while (or after) R1 moved t-0 from 1 to 2; 3:3 is a foreign entry, 9 a foreign topic."""
    cluster = FakeCluster(
        topics={("t", "leader"): "0:1,3:3", ("t", "follower"): "0:2", ("u", "leader"): "*"},
        rates={(1, "leader"): MB, (1, "follower"): MB, (2, "leader"): MB, (2, "follower"): MB, (3, "leader"): 9 * MB})
    if moving:
        cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    return cluster


class Janitor:
    """The controller's janitor on `cluster` and `ledger`: `on_batch(snapshot, batch_id)` hands it a batch's poll and
    returns the actions taken, `written()` the records it wrote for them."""

    def __init__(self, cluster, ledger, **policy):
        self.logged, self.writer = [], Writer()
        self.controller = a_controller(cluster, ledger, writer=self.writer, logged=self.logged, **policy)[0]
        self.ledger = ledger

    def on_batch(self, snapshot, batch_id):
        return self.controller.on_batch(findings(snapshot, batch_id))

    def written(self):
        self.controller.write_records()
        return [(key, json.loads(value)) for key, value in self.writer.written]

    def sweep(self):
        return self.controller._sweep_now(-1)


def janitor(cluster, ledger, **policy):
    j = Janitor(cluster, ledger, **policy)
    return j, j.logged


def test_steady_state_costs_no_admin_request():
    cluster, store = throttled(moving=True), MemoryLedger.of(request())
    j, _ = janitor(cluster, store)
    snapshot = cluster.snapshot()
    before = cluster.requests
    assert j.on_batch(snapshot, 1) == []
    assert cluster.requests == before and cluster.alters == []


def test_completion_removes_exactly_what_was_owned_and_marks_done():
    cluster, store = throttled(), MemoryLedger.of(request())
    j, _ = janitor(cluster, store)
    outputs = j.on_batch(cluster.snapshot(), 7)
    assert sorted((o.scope, o.name, o.kind, o.action) for o in outputs) == [
        ("broker", "1", "follower", "removed"), ("broker", "1", "leader", "removed"),
        ("broker", "2", "follower", "removed"), ("broker", "2", "leader", "restored"),
        ("topic", "t", "follower", "removed"), ("topic", "t", "leader", "removed")]
    assert cluster.topics == {("t", "leader"): "3:3", ("t", "follower"): "", ("u", "leader"): "*"}
    assert cluster.rates == {(2, "leader"): 5 * MB, (3, "leader"): 9 * MB}
    assert store.latest["R1"].state == OwnershipState.DONE
    written = j.written()
    assert {key for key, _ in written} == {"throttle:topic:t", "throttle:broker:1", "throttle:broker:2"}
    assert all(value["batch_id"] == 7 for _, value in written)
    # idempotent: the next batch (and a replay of this one) finds nothing to do
    alters = len(cluster.alters)
    assert j.on_batch(cluster.snapshot(), 8) == [] and j.on_batch(cluster.snapshot(), 7) == []
    assert len(cluster.alters) == alters


def test_stale_batch_snapshot_never_removes_what_a_fresh_read_shows_moving():
    """The batch's poll predates the reassignment start; the fresh read after the ownership refresh sees it."""
    cluster, store = throttled(), MemoryLedger.of(request())
    stale = cluster.snapshot()
    cluster.reassigning[("t", 0)] = ((2, 1), (2,))
    j, _ = janitor(cluster, store)
    assert j.on_batch(stale, 1) == []
    assert cluster.alters == [] and store.latest["R1"].state == OwnershipState.STARTED


def test_pending_execute_is_left_alone_then_cleaned_after_grace():
    cluster = throttled()
    store = MemoryLedger.of(request(state=OwnershipState.PENDING))
    j, _ = janitor(cluster, store)
    assert j.on_batch(cluster.snapshot(), 1) == []
    j, _ = janitor(cluster, store, pending_grace_ms=0)
    assert len(j.on_batch(cluster.snapshot(), 2)) == 6


def test_no_auto_remove_is_kept_by_the_job_and_released_by_verify():
    cluster, store = throttled(), MemoryLedger.of(request(auto_remove=False))
    j, _ = janitor(cluster, store)
    assert j.on_batch(cluster.snapshot(), 1) == [] and cluster.alters == []
    verify, _ = janitor(cluster, store, release=frozenset({"R1"}))
    assert len(verify.sweep()) == 6 and store.latest["R1"].state == OwnershipState.DONE


@pytest.mark.parametrize("policy", [dict(dry_run=True), dict(cleanup=ta.OFF)], ids=["dry-run", "off"])
def test_dry_run_reports_each_due_action_once_and_alters_nothing(policy):
    cluster, store = throttled(), MemoryLedger.of(request())
    j, _ = janitor(cluster, store, **policy)
    first = j.on_batch(cluster.snapshot(), 1)
    assert len(first) == 6 and all(o.action == ta.DRY_RUN for o in first)
    assert j.on_batch(cluster.snapshot(), 2) == []
    assert cluster.alters == [] and store.writes == []


def test_refused_and_unconfirmed_alters_are_failed_actions_and_retried():
    cluster, store = throttled(), MemoryLedger.of(request())
    cluster.refuse.add(("broker", "1"))
    cluster.ignore.add(("topic", "t"))
    j, _ = janitor(cluster, store)
    outputs = {(o.scope, o.name, o.kind): o for o in j.on_batch(cluster.snapshot(), 1)}
    assert outputs[("broker", "1", "leader")].action == ta.FAILED
    assert "refused" in outputs[("broker", "1", "leader")].reason
    assert outputs[("topic", "t", "leader")].action == ta.FAILED
    assert "read-back" in outputs[("topic", "t", "leader")].reason
    assert outputs[("broker", "2", "leader")].action == ta.RESTORED
    assert store.latest["R1"].state == OwnershipState.STARTED  # not done: some of its throttles are still there
    cluster.refuse.clear()
    cluster.ignore.clear()
    retried = j.on_batch(cluster.snapshot(), 2)
    assert {o.action for o in retried} == {ta.REMOVED} and len(retried) == 4
    assert store.latest["R1"].state == OwnershipState.DONE


def test_a_topic_deleted_between_the_read_and_the_alter_has_its_throttles_gone_not_failed():
    """The move left the list because its topic was deleted: the sweep's fresh read still saw the topic's
    configs, the alter comes back refused (the topic does not exist), and its configs went with it."""
    cluster, store = throttled(), MemoryLedger.of(request())
    cluster.deleted.add("t")
    j, _ = janitor(cluster, store)
    outputs = j.on_batch(cluster.snapshot(), 1)
    topic_actions = [o for o in outputs if o.scope == "topic"]
    assert topic_actions and {a.action for a in topic_actions} == {ta.REMOVED}
    assert all("deleted" in a.reason for a in topic_actions)
    assert store.latest["R1"].state == OwnershipState.DONE


def test_a_new_janitor_reading_the_store_finishes_the_removal_once():
    """The job died after the move completed and before removing: the next instance removes, once."""
    cluster, store = throttled(), MemoryLedger.of(request())
    restarted, _ = janitor(cluster, MemoryLedger.of(*store.records()))
    assert len(restarted.on_batch(cluster.snapshot(), 100)) == 6
    again, _ = janitor(cluster, MemoryLedger.of(*restarted.ledger.records()))
    assert again.on_batch(cluster.snapshot(), 101) == []


def test_cluster_errors_skip_the_batch_without_raising():
    cluster, store = throttled(), MemoryLedger.of(request())
    j, logged = janitor(cluster, store)
    snapshot = cluster.snapshot()
    cluster.fail["*"] = ConnectionError("cluster unreachable")
    assert j.on_batch(snapshot, 1) == []
    assert logged and "skipped" in logged[0]


def test_all_policy_clears_everything_once_nothing_moves():
    cluster, store = throttled(), MemoryLedger()
    j, _ = janitor(cluster, store, cleanup=ta.ALL)
    assert len(j.on_batch(cluster.snapshot(), 1)) == 8
    assert cluster.rates == {} and all(not v for v in cluster.topics.values())


def test_alter_log_dirs_rate_waits_for_future_logs():
    cluster = FakeCluster(rates={(1, "alter_log_dirs"): MB}, future={1})
    store = MemoryLedger.of(replace(request(), entries=(), rates=(RateClaim(1, "alter_log_dirs", MB, None),)))
    j, _ = janitor(cluster, store)
    assert j.on_batch(cluster.snapshot(), 1) == []
    cluster.future.clear()
    assert [o.action for o in j.on_batch(cluster.snapshot(), 2)] == [ta.REMOVED]


ACTIONS = [
    ta.ThrottleAction("topic", "t", "leader", ta.REMOVED, ck.SUBTRACT, ("0:1",), "0:1,3:3", None, "done", ("R1",)),
    ta.ThrottleAction("broker", "2", "leader", ta.RESTORED, ck.SET, (), "1000000", "5000000", "done", ("R1", "R2")),
    ta.ThrottleAction("broker", "1", "alter_log_dirs", ta.REMOVED, ck.DELETE, (), "1000000", None, "done", ()),
    tp.as_dry_run(ta.ThrottleAction("topic", "t", "follower", ta.REMOVED, ck.DELETE, ("*",), "*", None, "all")),
    ta.ThrottleAction("broker", "3", "follower", ta.FAILED, ck.DELETE, (), "1", None, "refused", ("R1",)),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: f"{a.scope}-{a.action}-{a.op}")
def test_throttle_records_match_the_progress_schema(action):
    key, value = throttle_record(action, 1_800_000_000_000, 3, "cid", cluster="c")
    jsonschema.validate(value, SCHEMA)
    assert key == f"throttle:{action.scope}:{action.name}"
    assert value["kind"] == "throttle" and value["throttle"]["action"] == action.action
    assert (value["topic"], value["broker"]) == ((action.name, None) if action.scope == "topic" else (None, int(action.name)))
