"""The throttle janitor against the real cluster: overlapping moves, cancel mid-move, a janitor restarted
between completion and removal, and --no-auto-remove-throttle."""

import json

import pytest

from streaming.vocabulary import throttle_actions as ta
from streaming.control.applier import applier_of
from streaming.control.ownership.store import KafkaLedger, ensure_ownership_topic
from streaming.cluster.admin import KafkaClusterAdmin
from streaming.cluster.poller import poll
from tests.controller_support import a_controller, findings
from tests.cluster_cli import (MB, cli, expect_throttles, ownership_topic,
                               reassigning, replicas, throttles, wait_done, write_plan)
from tests.job_process import read_topic
from tests.kafka_fixtures import wait_for
from streaming.vocabulary.states import OwnershipState

pytestmark = pytest.mark.cluster

L, F = "leader", "follower"


def test_completing_the_first_of_two_overlapping_moves_keeps_what_the_second_needs(cluster, clean, tmp_path):
    small = cluster.create_topic(cluster.unique_topic("small"), {0: [1]}, megabytes=1)
    big = cluster.create_topic(cluster.unique_topic("big"), {0: [1]}, megabytes=15)
    own = ownership_topic()
    clean += [small, big, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    first = write_plan(tmp_path / "first.json", [(small, 0, [2])])  # 1 -> 2
    second = write_plan(tmp_path / "second.json", [(big, 0, [3])])  # 1 -> 3: shares source broker 1
    assert cli("execute", *common, "--reassignment-json-file", second, "--throttle", MB)[0] == 0
    assert cli("execute", *common, "--reassignment-json-file", first, "--throttle", MB)[0] == 0

    wait_done(cluster, [(small, 0)])
    assert (big, 0) in reassigning(cluster), "the big move finished first: the test proves nothing"
    code, out, err = cli("verify", *common, "--reassignment-json-file", first, "--output", "json")
    assert code == 0, err
    assert sorted((a["scope"], a["name"], a["kind"]) for a in json.loads(out)["throttle_actions"]) == [
        ("broker", "2", F), ("broker", "2", L), ("topic", small, F), ("topic", small, L)]
    # Broker 1 is still the big move's source and 3 its destination: their rates and the entries stay.
    assert (big, 0) in reassigning(cluster)
    expect_throttles(cluster, [small, big], {(big, L): frozenset({"0:1"}), (big, F): frozenset({"0:3"}),
                                              (1, L): MB, (1, F): MB, (3, L): MB, (3, F): MB})

    wait_done(cluster, [(big, 0)])
    code, out, err = cli("verify", *common, "--reassignment-json-file", second)
    assert code == 0, err
    expect_throttles(cluster, [small, big], {})


def test_an_operators_rate_between_two_overlapping_requests_is_restored(cluster, clean, tmp_path):
    """On the real cluster: request A sets broker 1's leader rate; an operator changes it by hand;
    request B sets A's number again over the operator's value. Once both moves completed, the janitor (verify)
    restores the operator's value: A's stale claim does not delete it."""
    operator = 5 * MB
    first = cluster.create_topic(cluster.unique_topic("stale-a"), {0: [1]}, megabytes=1)
    second = cluster.create_topic(cluster.unique_topic("stale-b"), {0: [1]}, megabytes=1)
    own = ownership_topic()
    clean += [first, second, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    plan_a = write_plan(tmp_path / "a.json", [(first, 0, [2])])  # 1 -> 2
    plan_b = write_plan(tmp_path / "b.json", [(second, 0, [3])])  # 1 -> 3: the same source broker
    assert cli("execute", *common, "--reassignment-json-file", plan_a, "--throttle", MB)[0] == 0
    cluster.set_configs(broker_configs={1: {"leader.replication.throttled.rate": operator}})
    assert cli("execute", *common, "--reassignment-json-file", plan_b, "--throttle", MB)[0] == 0
    assert throttles(cluster, [])[(1, L)] == MB  # B set A's number over the operator's

    wait_done(cluster, [(first, 0), (second, 0)])
    for plan in (plan_a, plan_b):
        code, _, err = cli("verify", *common, "--reassignment-json-file", plan)
        assert code == 0, err
    expect_throttles(cluster, [first, second], {(1, L): operator})


def test_cancel_mid_move_reverts_replicas_and_the_throttles_go(cluster, clean, tmp_path):
    topic = cluster.create_topic(cluster.unique_topic("cancel"), {0: [1, 2]}, megabytes=15)
    own = ownership_topic()
    clean += [topic, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    plan = write_plan(tmp_path / "move.json", [(topic, 0, [2, 3])])
    assert cli("execute", *common, "--reassignment-json-file", plan, "--throttle", MB)[0] == 0
    expect_throttles(cluster, [topic], {(topic, L): frozenset({"0:1", "0:2"}), (topic, F): frozenset({"0:3"}),
                                        **{(b, k): MB for b in (1, 2, 3) for k in (L, F)}})
    assert (topic, 0) in reassigning(cluster)

    code, out, err = cli("cancel", *common, "--reassignment-json-file", plan, "--preserve-throttles", "--output", "json")
    assert code == 0, err
    [row] = json.loads(out)["partitions"]
    assert (row["topic"], row["partition"], row["status"]) == (topic, 0, "cancelled")
    # KRaft reverts to the replicas minus the adding ones, in the order of the reassigning replica list
    # (so [2, 1] here, not the original [1, 2]): the command reports exactly that list.
    assert sorted(row["original_replicas"]) == [1, 2]
    wait_for(lambda: replicas(cluster, topic, 0) == row["original_replicas"], 15, message="replicas reverted")
    assert (topic, 0) not in reassigning(cluster)
    assert throttles(cluster, [topic])  # preserved by the flag: verify (like the job) removes them

    # verify's removals go to the progress topic as `throttle` records naming the cluster (--cluster-name)
    progress = cluster.create_topic(cluster.unique_topic("progress"), {0: [1]})
    clean.append(progress)
    code, out, err = cli("verify", *common, "--reassignment-json-file", plan, "--output", "json",
                         "--progress-topic", progress, "--cluster-name", "janitor-test")
    assert code == 0, err
    assert json.loads(out)["partitions"][0]["status"] == "replicas differ"
    expect_throttles(cluster, [topic], {})
    written = [value for _, value in read_topic(cluster.bootstrap, progress)]
    assert written and {(v["kind"], v["cluster"]) for v in written} == {("throttle", "janitor-test")}


def test_restarted_janitor_finishes_the_removal_once(cluster, clean, tmp_path):
    """The job was killed after the move completed and before it removed the throttles: a new controller
    reading the ownership topic removes them on its first batch, and a further instance finds nothing."""
    topic = cluster.create_topic(cluster.unique_topic("restart"), {0: [2], 1: [3]}, megabytes=2)
    own = ownership_topic()
    clean += [topic, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    cluster.set_configs(broker_configs={1: {"leader.replication.throttled.rate": 4 * MB}})
    auto = write_plan(tmp_path / "auto.json", [(topic, 0, [1])])
    manual = write_plan(tmp_path / "manual.json", [(topic, 1, [1])])
    assert cli("execute", *common, "--reassignment-json-file", auto, "--throttle", MB)[0] == 0
    assert cli("execute", *common, "--reassignment-json-file", manual, "--throttle", MB, "--no-auto-remove-throttle")[0] == 0
    wait_done(cluster, [(topic, 0), (topic, 1)])
    before = throttles(cluster, [topic])
    assert before[(topic, F)] == frozenset({"0:1", "1:1"}) and before[(1, L)] == MB

    def batch(batch_id):
        admin = KafkaClusterAdmin(cluster.bootstrap)
        ensure_ownership_topic(applier_of(admin), own)
        store = KafkaLedger(admin, own)
        try:
            controller = a_controller(admin, store)[0]
            return controller.on_batch(findings(poll(admin, all_partitions=True), batch_id)), store.records()
        finally:
            admin.close()

    actions, records = batch(1)
    assert actions, "the restarted janitor removed nothing"
    assert {a.action for a in actions} <= {ta.REMOVED, ta.RESTORED}
    # The auto request's own entries went; the manual (--no-auto-remove-throttle) request keeps its entries
    # and the rates its brokers share (1 is in both), so broker 2 (only the auto request's source) is freed.
    expect_throttles(cluster, [topic], {(topic, L): frozenset({"1:3"}), (topic, F): frozenset({"1:1"}),
                                        (1, L): MB, (1, F): MB, (3, L): MB, (3, F): MB})
    assert batch(2)[0] == []  # once

    code, out, err = cli("verify", *common, "--reassignment-json-file", manual)  # explicit: releases the manual one
    assert code == 0, err
    expect_throttles(cluster, [topic], {(1, L): 4 * MB})  # the pre-existing rate on broker 1 is back
    _, records = batch(3)
    assert [r.state for r in records] == [OwnershipState.DONE, OwnershipState.DONE]
