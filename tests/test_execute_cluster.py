"""`execute` and `verify` against the real three-node cluster: KIP-179 throttles set exactly, foreign
entries and rates untouched, validation that changes nothing, removal that restores the prior rate."""

import json

import pytest

from streaming.control.ownership.store import KafkaLedger
from streaming.cluster.admin import KafkaClusterAdmin
from tests.cluster_cli import (MB, cli, expect_throttles, ownership_topic,
                               reassigning, throttles, wait_done, write_plan)
from streaming.vocabulary.states import OwnershipState

pytestmark = pytest.mark.cluster

L, F = "leader", "follower"


def test_execute_sets_kip179_throttles_and_verify_removes_only_ours(cluster, clean, tmp_path):
    topic = cluster.create_topic(cluster.unique_topic("exec"), {0: [1], 1: [2]}, megabytes=0)
    cluster.produce(topic, [0], megabytes=10)
    own = ownership_topic()
    clean += [topic, own]
    # Someone else's throttles: an entry on the same topic, a rate on a broker we will use, one on a broker we won't.
    cluster.set_configs(topic_configs={topic: {"leader.replication.throttled.replicas": "1:2"}},
                        broker_configs={3: {"follower.replication.throttled.rate": 7 * MB}, 2: {"leader.replication.throttled.rate": 3 * MB}})
    plan = write_plan(tmp_path / "move.json", [(topic, 0, [3])])
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]

    code, out, err = cli("execute", *common, "--reassignment-json-file", plan, "--throttle", MB, "--output", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["rollback"]["partitions"] == [{"topic": topic, "partition": 0, "replicas": [1], "log_dirs": ["any"]}]
    assert result["started"] == [f"{topic}-0"] and result["request_id"]

    # KIP-179: leader entries = current replicas, follower = new ones; rates on source 1 and destination 3.
    during = {(topic, L): frozenset({"1:2", "0:1"}), (topic, F): frozenset({"0:3"}),
              (1, L): MB, (1, F): MB, (3, L): MB, (3, F): MB, (2, L): 3 * MB}
    expect_throttles(cluster, [topic], during)
    store = KafkaLedger(KafkaClusterAdmin(cluster.bootstrap), own)
    [record] = store.records()
    assert record.request_id == result["request_id"] and record.state == OwnershipState.STARTED and record.auto_remove
    assert {(c.broker, c.kind): c.prior for c in record.rates} == {(1, L): None, (1, F): None, (3, L): None, (3, F): 7 * MB}
    assert {(c.topic, c.kind, c.partition, c.broker) for c in record.entries} == {(topic, L, 0, 1), (topic, F, 0, 3)}

    code, out, _ = cli("verify", *common, "--reassignment-json-file", plan)
    if (topic, 0) in reassigning(cluster):  # it was certainly still moving during that verify
        assert code == 1 and "in progress" in out
        assert throttles(cluster, [topic]) == during

    wait_done(cluster, [(topic, 0)])
    code, out, err = cli("verify", *common, "--reassignment-json-file", plan, "--output", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["complete"] and report["partitions"][0]["status"] == "complete"
    assert sorted((a["scope"], a["name"], a["kind"], a["action"]) for a in report["throttle_actions"]) == [
        ("broker", "1", F, "removed"), ("broker", "1", L, "removed"), ("broker", "3", F, "restored"),
        ("broker", "3", L, "removed"), ("topic", topic, F, "removed"), ("topic", topic, L, "removed")]
    expect_throttles(cluster, [topic], {(topic, L): frozenset({"1:2"}), (3, F): 7 * MB, (2, L): 3 * MB})

    code, out, _ = cli("verify", *common, "--reassignment-json-file", plan, "--output", "json")
    assert code == 0 and json.loads(out)["throttle_actions"] == []  # idempotent
    store.refresh()
    assert [r.state for r in store.records()] == [OwnershipState.DONE]
    store.reader.close()


def test_execute_validation_errors_change_nothing(cluster, clean, tmp_path):
    topic = cluster.create_topic(cluster.unique_topic("bad"), {0: [1], 1: [2]}, megabytes=0)
    cluster.produce(topic, [0], megabytes=12)
    own = ownership_topic()
    clean += [topic, own]
    cluster.set_configs(topic_configs={topic: {"follower.replication.throttled.replicas": "1:1"}},
                        broker_configs={2: {"leader.replication.throttled.rate": 3 * MB}})
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]

    # A partition already moving (started by this tool, so the "already reassigning" check has one).
    moving = write_plan(tmp_path / "moving.json", [(topic, 0, [3])])
    assert cli("execute", *common, "--reassignment-json-file", moving, "--throttle", MB)[0] == 0
    before = throttles(cluster, [topic])
    ongoing = reassigning(cluster)
    assert (topic, 0) in ongoing

    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"version": 1, "partitions": [')
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 1, "replicas": [3]}] * 2}))
    cases = {
        "unknown topic": (write_plan(tmp_path / "t.json", [("no-such-topic", 0, [2])]), ["--throttle", MB]),
        "unknown partition": (write_plan(tmp_path / "p.json", [(topic, 7, [2])]), ["--throttle", MB]),
        "unknown broker": (write_plan(tmp_path / "b.json", [(topic, 1, [2, 9])]), ["--throttle", MB]),
        "zero throttle": (write_plan(tmp_path / "z.json", [(topic, 1, [3])]), ["--throttle", 0]),
        "negative throttle": (write_plan(tmp_path / "n.json", [(topic, 1, [3])]), ["--throttle", -5]),
        "negative log dir throttle": (write_plan(tmp_path / "n2.json", [(topic, 1, [3])]), ["--replica-alter-log-dirs-throttle", -1]),
        "already reassigning": (write_plan(tmp_path / "a.json", [(topic, 0, [2]), (topic, 1, [3])]), ["--throttle", MB]),
        "invalid json": (bad_json, ["--throttle", MB]),
        "duplicate partition": (dup, ["--throttle", MB]),
    }
    for name, (path, extra) in cases.items():
        code, out, err = cli("execute", *common, "--reassignment-json-file", path, *extra)
        assert code == 2, f"{name}: exit {code}, stderr {err!r}"
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, f"{name}: {err!r}"
        assert "Current partition replica assignment" not in out, name
    assert "already being reassigned" in cli("execute", *common, "--reassignment-json-file", tmp_path / "a.json", "--throttle", MB)[2]
    assert throttles(cluster, [topic]) == before
    assert reassigning(cluster) == ongoing
    store = KafkaLedger(KafkaClusterAdmin(cluster.bootstrap), own)
    assert len(store.records()) == 1  # only the request that did start
    store.reader.close()

    # --dry-run validates and reports, changes nothing either.
    code, out, _ = cli("execute", *common, "--reassignment-json-file", tmp_path / "z.json", "--throttle", MB, "--dry-run")
    assert code == 0 and "Would set" in out
    assert throttles(cluster, [topic]) == before and reassigning(cluster) == ongoing

    # Cancel the move: back to the original replica, and the cancel takes its throttles with it.
    code, out, err = cli("cancel", *common, "--reassignment-json-file", moving)
    assert code == 0, err
    assert "cancelled" in out
    expect_throttles(cluster, [topic], {(topic, F): frozenset({"1:1"}), (2, L): 3 * MB})


class RefusingStart:
    """The real cluster's door, except that its writer's AlterPartitionReassignments is refused (after `check()`)."""

    def __init__(self, admin, check):
        self.admin, self.check = admin, check

    def __getattr__(self, name):
        return getattr(self.admin, name)

    def writer(self, grant):
        return _RefusingStartWriter(self.admin.writer(grant), self.check)


class _RefusingStartWriter:
    def __init__(self, writer, check):
        self.writer, self.check = writer, check

    def __getattr__(self, name):
        return getattr(self.writer, name)

    def start_reassignments(self, targets):
        from streaming.vocabulary.errors import Refused

        self.check()
        raise Refused("AlterPartitionReassignments: refused (simulated)")


def test_execute_rolls_back_exactly_what_it_set_when_the_start_fails(cluster, clean, tmp_path):
    from streaming.commands.reassign_common import connect

    topic = cluster.create_topic(cluster.unique_topic("abort"), {0: [1]}, megabytes=0)
    own = ownership_topic()
    clean += [topic, own]
    cluster.set_configs(topic_configs={topic: {"leader.replication.throttled.replicas": "9:9"}},
                        broker_configs={2: {"follower.replication.throttled.rate": 7 * MB}})
    before = throttles(cluster, [topic])

    def throttles_were_set():  # before the start was attempted
        assert throttles(cluster, [topic]) != before

    plan = write_plan(tmp_path / "move.json", [(topic, 0, [2])])
    code, _, err = cli("execute", "--bootstrap-server", cluster.bootstrap, "--ownership-topic", own,
                       "--reassignment-json-file", plan, "--throttle", MB,
                       connect=lambda args: RefusingStart(connect(args), throttles_were_set))
    assert code == 3 and "refused (simulated)" in err
    expect_throttles(cluster, [topic], before)  # foreign entry kept, foreign rate on broker 2 restored
    store = KafkaLedger(KafkaClusterAdmin(cluster.bootstrap), own)
    assert [r.state for r in store.records()] == [OwnershipState.DONE]
    store.reader.close()


def test_log_dir_placement_and_its_throttle_are_set_and_removed(cluster, clean, tmp_path):
    topic = cluster.create_topic(cluster.unique_topic("logdir"), {0: [1]}, megabytes=1)
    own = ownership_topic()
    clean += [topic, own]
    admin = cluster.admin()
    try:
        [response] = admin.describe_log_dirs(brokers=[2])
        log_dir = response["log_dirs"][0]["log_dir"]
    finally:
        admin.close()
    plan = tmp_path / "move.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2], "log_dirs": [log_dir]}]}))
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    code, out, err = cli("execute", *common, "--reassignment-json-file", plan, "--throttle", MB,
                         "--replica-alter-log-dirs-throttle", 2 * MB, "--output", "json")
    assert code == 0, err
    assert json.loads(out)["log_dir_moves_failed"] == []
    assert throttles(cluster, [topic])[(2, "alter_log_dirs")] == 2 * MB
    wait_done(cluster, [(topic, 0)])
    code, _, err = cli("verify", *common, "--reassignment-json-file", plan)
    assert code == 0, err
    expect_throttles(cluster, [topic], {})
