"""The plan's records in the ownership topic (streaming.control.ownership.plans, .store) and the waves' `plan_id`:
what is written reads back the same, parts and header apart, through the fake cluster's topic log."""

import pytest

from streaming.control.ownership.plans import PART_MOVES, Plan
from streaming.control.plans.scheduler import Limits
from streaming.control.ownership.records import Move, Ownership, Refusal, decode, encode
from streaming.control.applier import applier_of
from streaming.control.ownership.store import KafkaLedger, find_plan
from tests.fake_cluster import FakeCluster
from streaming.vocabulary.states import OwnershipState, PlanState

TOPIC = "own"


def plan_of(partitions, limits=Limits(5, 3, 10**9)):
    moves = tuple(Move("t", p, (1,), (2,)) for p in range(partitions))
    return Plan("20261123T180000.000Z-abcd", PlanState.RUNNING, 1, 1, limits, moves, "smallest", 1000)


@pytest.mark.parametrize("partitions", [1, PART_MOVES, PART_MOVES * 2 + 1], ids=["one", "one part", "three parts"])
def test_a_plan_reads_back_whole(partitions):
    fake = FakeCluster()
    applier_of(fake, KafkaLedger(fake, TOPIC)).record_plan(plan_of(partitions), with_parts=True)
    assert KafkaLedger(fake, TOPIC).plans() == [plan_of(partitions)]


def test_a_state_change_rewrites_only_the_header_and_the_latest_wins():
    fake = FakeCluster()
    store = applier_of(fake, KafkaLedger(fake, TOPIC))
    store.record_plan(plan_of(3), with_parts=True)
    written = len(fake.logs[TOPIC])
    store.record_plan(plan_of(3).with_state(PlanState.PAUSED, 2, note="pause"))
    assert len(fake.logs[TOPIC]) == written + 1
    assert find_plan(KafkaLedger(fake, TOPIC), plan_of(3).request_id).state == PlanState.PAUSED


def test_a_header_without_its_parts_is_no_plan():
    fake = FakeCluster()
    applier_of(fake, KafkaLedger(fake, TOPIC)).record_plan(plan_of(3), with_parts=True)
    del fake.logs[TOPIC][0]  # the part: as if the header had been written first and the part lost
    assert KafkaLedger(fake, TOPIC).plans() == []


def test_plans_and_ownership_records_share_the_topic_without_seeing_each_other():
    fake = FakeCluster()
    wave = Ownership("20261123T180001.000Z-0001", OwnershipState.STARTED, 2, 2, moves=(Move("t", 0, (1,), (2,)),),
                     plan_id=plan_of(1).request_id)
    applier_of(fake, KafkaLedger(fake, TOPIC)).record(wave)
    applier_of(fake, KafkaLedger(fake, TOPIC)).record_plan(plan_of(1), with_parts=True)
    assert KafkaLedger(fake, TOPIC).records() == [wave]
    assert [p.request_id for p in KafkaLedger(fake, TOPIC).plans()] == [plan_of(1).request_id]


@pytest.mark.parametrize("plan_id", [None, "20261123T180000.000Z-abcd"], ids=["execute", "wave of a plan"])
def test_plan_id_round_trips(plan_id):
    record = Ownership("20261123T180001.000Z-0001", OwnershipState.STARTED, 2, 2, plan_id=plan_id)
    assert decode(encode(record)) == record
    assert ("plan_id" in encode(record).decode()) == (plan_id is not None)


@pytest.mark.parametrize("state, refused", [
    (OwnershipState.STARTED, ()), (OwnershipState.STARTED, (Refusal("t", 1, "InvalidReplicationAssignmentError"),)),
    (OwnershipState.ABORTED, (Refusal("t", 0, "UnknownTopicOrPartitionError"), Refusal("u", 3, "no answer")))],
    ids=["none", "one-of-a-started-wave", "every-one-of-an-aborted-wave"])
def test_a_waves_refusals_round_trip(state, refused):
    record = Ownership("20261123T180001.000Z-0001", state, 2, 2, plan_id="20261123T180000.000Z-abcd", refused=refused)
    assert decode(encode(record)) == record
    assert ("refused" in encode(record).decode()) == bool(refused)


def test_leases_read_back_in_log_order_beside_the_plan_and_ownership_records():
    from streaming.control.ownership.leases import Lease, holder_of

    fake = FakeCluster()
    store = applier_of(fake, KafkaLedger(fake, TOPIC))
    store.record_plan(plan_of(3), with_parts=True)
    request_id = plan_of(3).request_id
    claims = [Lease(request_id, "job h:1", 0, 15_000), Lease(request_id, "execute --wait h:2", 1, 15_001)]
    for claim in claims:
        store.record_lease(claim)
    again = KafkaLedger(fake, TOPIC)
    assert again.leases(request_id) == claims and holder_of(again.leases(request_id)).holder == "job h:1"
    assert again.plans() == [plan_of(3)] and KafkaLedger(fake, TOPIC).records() == []


def test_log_dirs_and_their_throttle_read_back_and_a_plan_without_them_writes_neither():
    """A plan's moves between log dirs survive a restart: the dirs in its parts and its waves, the rate in its header."""
    moves = (Move("t", 0, (1,), (1,), ("/b",)), Move("t", 1, (1, 2), (3, 2), ("/b", "any")), Move("t", 2, (1,), (2,)))
    plan = Plan("20261123T180000.000Z-abcd", PlanState.RUNNING, 1, 1, Limits(2), moves, throttle=1000,
                log_dir_throttle=3000)
    fake = FakeCluster()
    applier_of(fake, KafkaLedger(fake, TOPIC)).record_plan(plan, with_parts=True)
    assert KafkaLedger(fake, TOPIC).plans() == [plan]
    wave = Ownership("20261123T180001.000Z-0001", OwnershipState.STARTED, 2, 2, moves=moves, plan_id=plan.request_id)
    assert decode(encode(wave)) == wave
    fake = FakeCluster()
    applier_of(fake, KafkaLedger(fake, TOPIC)).record_plan(plan_of(1), with_parts=True)
    assert not any(b"log_dir" in value for _, value in fake.logs[TOPIC])
