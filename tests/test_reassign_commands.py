"""execute / verify / cancel decisions on crafted snapshots (no cluster): validation, statuses, and the
KAFKA-14424 refusal of cancel (an offline broker is not something to stage on the shared test cluster)."""

import pytest

from streaming.commands import cancel, execute, verify
from streaming.vocabulary.reassignment_file import PartitionMove
from streaming.vocabulary.snapshot import from_rows
from tests.cluster_cli import cli
from tests.fake_cluster import FakeCluster


def snapshot(dead=()):
    """t-0 on [1, 2] reassigning to [2, 3] (3 adding); t-1 on [2]; brokers 1-3."""
    return from_rows(
        0, "c",
        partitions=[{"topic": "t", "partition": 0, "leader": 2, "replicas": [2, 3, 1], "isr": [2, 1]},
                    {"topic": "t", "partition": 1, "leader": 2, "replicas": [2], "isr": [2]}],
        reassignments=[{"topic": "t", "partition": 0, "replicas": [2, 3, 1], "adding": [3], "removing": [1]}],
        brokers=[{"broker": b, "alive": b not in dead} for b in (1, 2, 3)],
        log_dirs_answered=[{"broker": b} for b in (1, 2, 3)])


VALIDATION = [
    pytest.param([PartitionMove("t", 1, (3,))], False, [], id="valid"),
    pytest.param([PartitionMove("u", 0, (3,))], False, ["unknown topic u"], id="unknown-topic"),
    pytest.param([PartitionMove("t", 5, (3,))], False, ["unknown partition t-5"], id="unknown-partition"),
    pytest.param([PartitionMove("t", 1, (3, 9, 8))], False, ["t-1: unknown brokers 9, 8"], id="unknown-brokers"),
    pytest.param([PartitionMove("t", 0, (3,))], False,
                 ["t-0 is already being reassigned (use --additional to change its target)"], id="already-reassigning"),
    pytest.param([PartitionMove("t", 0, (3,))], True, [], id="additional-allows-it"),
    pytest.param([PartitionMove("t", 1, (2, 3), ("any", "data"))], False,
                 ["t-1: log dir 'data' for broker 3 is not an absolute path"], id="relative-log-dir"),
    pytest.param([PartitionMove("t", 1, (2, 3), ("any", "/nope"))], False, ["t-1: broker 3 has no log dir /nope"],
                 id="missing-log-dir"),
    pytest.param([PartitionMove("t", 1, (2, 3), ("any", "/data"))], False, [], id="existing-log-dir"),
]


@pytest.mark.parametrize("moves, additional, problems", VALIDATION)
def test_execute_validation(moves, additional, problems):
    assert execute.validate(moves, snapshot(), additional, lambda broker: {"/data"}) == problems


STATUSES = [
    pytest.param(PartitionMove("t", 0, (2, 3)), verify.IN_PROGRESS, id="in-progress"),
    pytest.param(PartitionMove("t", 1, (2,)), verify.COMPLETE, id="complete"),
    pytest.param(PartitionMove("t", 1, (3,)), verify.DIFFERS, id="replicas-differ"),
    pytest.param(PartitionMove("u", 0, (3,)), verify.UNKNOWN_TOPIC, id="unknown-topic"),
    pytest.param(PartitionMove("t", 4, (3,)), verify.UNKNOWN_PARTITION, id="unknown-partition"),
]


@pytest.mark.parametrize("move, status", STATUSES)
def test_verify_status(move, status):
    [(_, found, _)] = verify.statuses([move], snapshot())
    assert found == status


def fake_cluster(dead=()):
    """The cluster of `snapshot()` as the one fake (tests.fake_cluster): cancel polls it for real."""
    return FakeCluster(
        brokers={b: b not in dead for b in (1, 2, 3)},
        partitions={("t", 0): {"replicas": [2, 3, 1], "isr": [2, 1], "leader": 2},
                    ("t", 1): {"replicas": [2], "isr": [2], "leader": 2}},
        reassigning={("t", 0): ([2, 3, 1], [3], [1])})


def test_cancel_refuses_when_an_original_replica_broker_is_offline(tmp_path):
    admin = fake_cluster(dead=(1,))
    code, out, err = cli("cancel", "--bootstrap-server", "127.0.0.1:1", "--all", "--preserve-throttles",
                         connect=lambda _args: admin)
    assert code == 2 and admin.cancels == [] and out == ""
    assert "KAFKA-14424" in err and "broker 1 offline" in err and len(err.strip().splitlines()) == 1


def test_cancel_force_overrides_the_refusal():
    admin = fake_cluster(dead=(1,))
    code, out, err = cli("cancel", "--bootstrap-server", "127.0.0.1:1", "--all", "--force", "--preserve-throttles",
                         connect=lambda _args: admin)
    assert code == 0, err
    assert admin.cancels == [[("t", 0)]]
    assert "cancelled" in out


def test_cancel_ignores_an_offline_broker_that_was_being_added():
    admin = fake_cluster(dead=(3,))  # 3 is the adding replica: the cancel drops it anyway
    code, _, err = cli("cancel", "--bootstrap-server", "127.0.0.1:1", "--all", "--preserve-throttles",
                       connect=lambda _args: admin)
    assert code == 0, err
    assert len(admin.cancels) == 1


def test_cancel_of_partitions_not_reassigning_changes_nothing(tmp_path):
    admin = fake_cluster()
    plan = tmp_path / "p.json"
    plan.write_text('{"version": 1, "partitions": [{"topic": "t", "partition": 1}]}')
    code, out, _ = cli("cancel", "--bootstrap-server", "127.0.0.1:1", "--reassignment-json-file", plan,
                       connect=lambda _args: admin)
    assert code == 0 and admin.cancels == [] and "not reassigning" in out


def test_cancel_offline_originals():
    ongoing = {("t", 0): {"replicas": [2, 3, 1], "adding": [3], "removing": [1]}}
    assert cancel.offline_originals(ongoing, frozenset({2, 3}), [("t", 0)]) == {("t", 0): [1]}
    assert cancel.offline_originals(ongoing, frozenset({1, 2}), [("t", 0)]) == {}
