"""Reasons on plain rows (made columns, as the rules read them): one case per rule (the row, the throttles, the
expected code and line), the budget view's choice of budgets, and the reasons' place in records, the schema and
/metrics."""

import json

import pytest

from sinks import metric_names as m
from sinks.prometheus import Picture, samples
from sinks.records import SCHEMA_PATH, replica_records
from streaming.core.budget import BudgetKey
from streaming.core.budget_view import Throttles, model
from streaming.core.diagnosis import RULES, Context, diagnose, diagnosed, out_of_isr_targets
from streaming.vocabulary.columns import from_rows
from streaming.vocabulary.reasons import REASON_CODES

NOW_MS = 3_600_000  # 01:00:00 UTC
RATE_3 = [{"broker": 3, "kind": "follower", "rate": 1_000_000}, {"broker": 1, "kind": "leader", "rate": 1_000_000}]
ALL_LISTED = [{"topic": "t", "kind": "follower", "value": "*"}, {"topic": "t", "kind": "leader", "value": "*"}]


def row(partition=0, broker=3, leader=1, state="COPYING", numerator=500_000, denominator=1_000_000, copy_rate=100e3,
        leader_rate=0.0, stalled_seconds=0.0, since_s=0, in_isr=False, intra_broker=False, progress=None):
    return {"topic": "t", "partition": partition, "broker": broker, "intra_broker": intra_broker,
            "numerator": numerator, "denominator": denominator,
            "progress": progress if progress is not None else (numerator or 0) / (denominator or 1),
            "in_isr": in_isr, "leader": leader, "copy_rate": copy_rate, "leader_rate": leader_rate,
            "stalled_seconds": stalled_seconds, "state": state, "state_since_ms": since_s * 1000, "ts_ms": NOW_MS}


def diagnosis(rows, broker_throttles=RATE_3, topic_throttles=ALL_LISTED, offline=(), unanswered=None,
              offline_dirs=None, held_by=None):
    """(code, line) of the first row, diagnosed with the others."""
    columns = from_rows(rows)
    budget_model = model(columns, topic_throttles, broker_throttles, NOW_MS)
    codes, lines = diagnose(columns, Context(budget_model, NOW_MS, frozenset(offline), pending_after_s=20.0,
                                             unanswered=unanswered or {}, offline_log_dirs=offline_dirs or {},
                                             out_of_isr_targets=held_by or {}))
    return codes[0], lines[0]


CASES = [
    # id, rows (the first is diagnosed), kwargs of diagnosis, expected (code, line)
    ("healthy-copying", [row()], {}, (None, None)),
    ("destination-offline", [row(state="BROKER_OFFLINE", numerator=None, since_s=3540)], {"offline": (3,)},
     ("DESTINATION_OFFLINE", "destination broker 3 offline since 00:59:00 UTC")),
    ("leader-offline", [row(state="BROKER_OFFLINE", denominator=None, since_s=3500)], {"offline": (1,)},
     ("LEADER_OFFLINE", "leader broker 1 of the partition offline since 00:58:20 UTC")),
    ("no-leader", [row(state="BROKER_OFFLINE", leader=-1, denominator=None, since_s=3500)], {},
     ("LEADER_OFFLINE", "the partition has no leader since 00:58:20 UTC")),
    # A broker the door holds as unresponsive: since when it has not answered, not since the state began.
    ("destination-does-not-answer", [row(state="BROKER_OFFLINE", numerator=None, since_s=3540)],
     {"offline": (3,), "unanswered": {3: 3_530_000}},
     ("DESTINATION_OFFLINE", "destination broker 3 does not answer since 00:58:50 UTC")),
    ("leader-does-not-answer", [row(state="BROKER_OFFLINE", denominator=None, since_s=3500)],
     {"offline": (1,), "unanswered": {1: 3_490_000}},
     ("LEADER_OFFLINE", "leader broker 1 of the partition does not answer since 00:58:10 UTC")),
    # Does not answer the job while Kafka lists it alive: which broker, since when, and Kafka's view.
    ("destination-unobserved", [row(state="UNOBSERVED", numerator=None, since_s=3540)],
     {"offline": (3,), "unanswered": {3: 3_530_000}},
     ("UNOBSERVED", "destination broker 3 does not answer the job since 00:58:50 UTC; Kafka lists it alive and the "
                    "replica not yet in the ISR")),
    ("destination-unobserved-in-sync", [row(state="UNOBSERVED", numerator=None, in_isr=True, since_s=3540)],
     {"offline": (3,), "unanswered": {3: 3_530_000}},
     ("UNOBSERVED", "destination broker 3 does not answer the job since 00:58:50 UTC; Kafka lists it alive and the "
                    "replica in the ISR")),
    ("leader-unobserved", [row(state="UNOBSERVED", denominator=None, since_s=3500)],
     {"offline": (1,), "unanswered": {1: 3_490_000}},
     ("UNOBSERVED", "leader broker 1 of the partition does not answer the job since 00:58:10 UTC; Kafka lists it "
                    "alive")),
    ("another-broker-unanswering-leaves-the-line", [row(state="BROKER_OFFLINE", numerator=None, since_s=3540)],
     {"offline": (2, 3), "unanswered": {2: 3_530_000}},
     ("DESTINATION_OFFLINE", "destination broker 3 offline since 00:59:00 UTC")),
    # A log dir Kafka took offline on the destination (docs/progress.md "Offline log dirs"): at once, whatever the
    # state, when the destination holds no byte of the replica in an online dir.
    ("log-dir-offline", [row(state="COPYING", numerator=0, since_s=3590)], {"offline_dirs": {3: ("/k/data2",)}},
     ("LOG_DIR_OFFLINE", "log dir /k/data2 on broker 3 is offline; the replica has no log in an online log dir there")),
    ("log-dir-offline-stalled", [row(state="STALLED", numerator=0, stalled_seconds=612.0)],
     {"offline_dirs": {3: ("/k/data2",)}},
     ("LOG_DIR_OFFLINE", "log dir /k/data2 on broker 3 is offline; the replica has no log in an online log dir there")),
    ("log-dirs-offline", [row(state="PENDING", numerator=0, copy_rate=None, since_s=3590)],
     {"offline_dirs": {3: ("/k/data2", "/k/data3")}},
     ("LOG_DIR_OFFLINE", "log dirs /k/data2, /k/data3 on broker 3 are offline; the replica has no log in an online "
                         "log dir there")),
    ("replica-in-an-online-dir-is-fine", [row()], {"offline_dirs": {3: ("/k/data2",)}}, (None, None)),
    ("offline-dir-on-another-broker-is-fine", [row(state="PENDING", numerator=0, copy_rate=None, since_s=3590)],
     {"offline_dirs": {2: ("/k/data2",)}}, (None, None)),
    ("destination-offline-comes-first", [row(state="BROKER_OFFLINE", numerator=None, since_s=3540)],
     {"offline": (3,), "offline_dirs": {3: ("/k/data2",)}},
     ("DESTINATION_OFFLINE", "destination broker 3 offline since 00:59:00 UTC")),
    # Completion held by a replica that is not moving (KAFKA-19975): the adding replica is in the ISR, the
    # reassignment waits for every target replica to be.
    ("held-by-a-replica-out-of-isr", [row(state="IN_SYNC", in_isr=True, numerator=1_000_000, since_s=3560)],
     {"held_by": {("t", 0): (2,)}},
     ("TARGET_REPLICA_OUT_OF_ISR", "in the ISR for 40s, but the reassignment completes only when every target "
                                   "replica is: the replica on broker 2 is out of the ISR")),
    ("held-by-two-replicas-out-of-isr", [row(state="IN_SYNC", in_isr=True, numerator=1_000_000, since_s=3500)],
     {"held_by": {("t", 0): (1, 2)}},
     ("TARGET_REPLICA_OUT_OF_ISR", "in the ISR for 1m40s, but the reassignment completes only when every target "
                                   "replica is: the replica on brokers 1, 2 are out of the ISR")),
    ("in-sync-a-moment-while-another-is-out-is-fine",
     [row(state="IN_SYNC", in_isr=True, numerator=1_000_000, since_s=3590)], {"held_by": {("t", 0): (2,)}},
     (None, None)),
    ("held-elsewhere-is-fine", [row(state="IN_SYNC", in_isr=True, numerator=1_000_000, since_s=3500)],
     {"held_by": {("t", 1): (2,)}}, (None, None)),
    ("copying-while-another-is-out-is-not-held", [row()], {"held_by": {("t", 0): (2,)}}, (None, None)),
    ("caught-up-not-in-isr", [row(numerator=1_000_000, stalled_seconds=40.0, state="STALLED")], {},
     ("CAUGHT_UP_NOT_IN_ISR", "at 100 % for 40s but not in ISR (replica.lag.time.max.ms 30000 by default)")),
    ("caught-up-a-moment-ago-is-fine", [row(numerator=1_000_000, stalled_seconds=4.0)], {}, (None, None)),
    ("stalled-under-a-throttle-of-1-byte", [row(state="STALLED", stalled_seconds=612.0)],
     {"broker_throttles": [{"broker": 3, "kind": "follower", "rate": 1}]},
     ("THROTTLE_TOO_LOW", "no bytes for 10m12s; follower throttle on broker 3 is 1 B/s")),
    ("stalled-leader-silent", [row(state="STALLED", stalled_seconds=612.0, leader=2)], {},
     ("LEADER_NOT_SENDING", "no bytes for 10m12s; leader of the partition is on broker 2, which answers "
                            "DescribeLogDirs but sends nothing")),
    ("falling-behind-names-both-rates-and-the-budget",
     [row(state="FALLING_BEHIND", copy_rate=200e3, leader_rate=1.2e6)] + [row(partition=p) for p in (1, 2)], {},
     ("COPY_BELOW_GROWTH", "copy 200.0 KB/s < leader growth 1.2 MB/s; follower throttle on broker 3 is 1.0 MB/s "
                           "shared by 3 moves")),
    # Its share (500 KB/s, then the whole 1 MB/s once partition 1 finished) stays below its leader's growth.
    ("copying-but-its-share-is-below-growth", [row(copy_rate=900e3, leader_rate=1.2e6), row(partition=1)], {},
     ("COPY_BELOW_GROWTH", "copy 900.0 KB/s < leader growth 1.2 MB/s; follower throttle on broker 3 is 1.0 MB/s "
                           "shared by 2 moves")),
    ("share-below-growth-until-another-finishes-is-fine", [row(copy_rate=500e3, leader_rate=600e3), row(partition=1)],
     {}, (None, None)),
    ("falling-behind-unthrottled", [row(state="FALLING_BEHIND", copy_rate=100e3, leader_rate=300e3)],
     {"broker_throttles": []},
     ("COPY_BELOW_GROWTH", "copy 100.0 KB/s < leader growth 300.0 KB/s; no throttle on broker 3: 100.0 KB/s "
                           "observed, shared by 1 move")),
    ("pending-behind-a-shared-budget", [row(state="PENDING", numerator=0, copy_rate=None, since_s=3570)]
     + [row(partition=p) for p in range(1, 13)], {},
     ("WAITING_FOR_BUDGET", "waiting: broker 3 already receives 12 other moves")),
    ("pending-alone", [row(state="PENDING", numerator=0, copy_rate=None, since_s=3570)], {},
     ("NO_BYTES_YET", "no bytes for 30s since the move was seen")),
    ("pending-briefly-is-fine", [row(state="PENDING", numerator=0, copy_rate=None, since_s=3590)], {}, (None, None)),
    ("in-sync-is-fine", [row(state="IN_SYNC", in_isr=True, numerator=1_000_000)], {}, (None, None)),
]


@pytest.mark.parametrize("rows, kwargs, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reason(rows, kwargs, expected):
    assert diagnosis(rows, **kwargs) == expected


def reassigning(replicas, adding=(), removing=(), partition=0):
    return {"topic": "t", "partition": partition, "replicas": list(replicas), "adding": list(adding),
            "removing": list(removing)}


def metadata(isr, partition=0):
    return {"topic": "t", "partition": partition, "isr": list(isr)}


OUT_OF_ISR_CASES = [
    # id, reassignments, partitions (ISR), expected {(topic, partition): brokers}
    ("all-in-isr", [reassigning([1, 2, 3], adding=[3])], [metadata([1, 2, 3])], {}),
    ("a-kept-replica-out", [reassigning([1, 2, 3], adding=[3])], [metadata([1, 3])], {("t", 0): (2,)}),
    ("the-adding-replica-out-is-its-own-move", [reassigning([1, 2, 3], adding=[3])], [metadata([1, 2])], {}),
    ("a-removed-replica-out-does-not-hold-it", [reassigning([1, 2, 3], adding=[3], removing=[2])],
     [metadata([1, 3])], {}),
    ("two-kept-replicas-out", [reassigning([1, 2, 3, 4], adding=[4])], [metadata([4])], {("t", 0): (1, 2, 3)}),
    ("no-metadata", [reassigning([1, 2, 3], adding=[3])], [], {}),
]


@pytest.mark.parametrize("moving, partitions, expected", [c[1:] for c in OUT_OF_ISR_CASES],
                         ids=[c[0] for c in OUT_OF_ISR_CASES])
def test_out_of_isr_targets(moving, partitions, expected):
    assert out_of_isr_targets(moving, partitions) == expected


def test_every_code_has_a_rule_and_the_schema_lists_them():
    assert sorted(code.name for _, _, code in RULES) == sorted(REASON_CODES)
    schema = json.loads(SCHEMA_PATH.read_text())
    assert schema["properties"]["reason_code"]["enum"] == [None, *REASON_CODES]


BUDGET_CASES = [
    # id, row kwargs, topic throttles, broker throttles, expected budgets
    ("both-sides-listed", {}, ALL_LISTED, RATE_3,
     (BudgetKey("leader", 1, True), BudgetKey("follower", 3, True))),
    ("only-the-listed-entry", {"partition": 4},
     [{"topic": "t", "kind": "follower", "value": "4:3,5:2"}, {"topic": "t", "kind": "leader", "value": "0:1"}],
     RATE_3, (BudgetKey("follower", 3, True),)),
    ("listed-without-a-rate-is-unthrottled", {}, ALL_LISTED, [], (BudgetKey("follower", 3, False),)),
    ("a-rate-without-a-listing-is-unthrottled", {}, [], RATE_3, (BudgetKey("follower", 3, False),)),
    ("log-dir-move", {"intra_broker": True}, [], [{"broker": 3, "kind": "alter_log_dirs", "rate": 5}],
     (BudgetKey("alter_log_dirs", 3, True),)),
    ("cluster-default-is-not-read", {}, ALL_LISTED, [{"broker": -1, "kind": "follower", "rate": 5}],
     (BudgetKey("follower", 3, False),)),
]


@pytest.mark.parametrize("kwargs, topic_throttles, broker_throttles, expected",
                         [c[1:] for c in BUDGET_CASES], ids=[c[0] for c in BUDGET_CASES])
def test_budgets_of_a_move(kwargs, topic_throttles, broker_throttles, expected):
    assert Throttles(topic_throttles, broker_throttles).budgets_of(row(**kwargs)) == expected


def test_the_alter_log_dirs_rate_is_one_budget_shared_by_every_future_log_of_its_broker():
    """Two moves between log dirs on broker 3 under its 2 MB/s alter-log-dirs rate get 1 MB/s each (4 MB left: 4 s),
    and the second finishes at full rate once the first is done; a move into broker 3 from another broker uses the
    replication throttles, not that budget (docs/progress.md "Moves between log dirs")."""
    rates = [{"broker": 3, "kind": "alter_log_dirs", "rate": 2_000_000}, *RATE_3]

    def rows(copy_rate):
        return from_rows([row(partition=0, broker=3, leader=3, intra_broker=True, numerator=6_000_000,
                              denominator=10_000_000, copy_rate=copy_rate),
                          row(partition=1, broker=3, leader=3, intra_broker=True, numerator=2_000_000,
                              denominator=10_000_000, copy_rate=copy_rate),
                          row(partition=2, numerator=0, denominator=1_000_000)])

    budget_model = model(rows(1_000_000), ALL_LISTED, rates, NOW_MS)
    first, second, beside = budget_model.eta_seconds().tolist()
    assert first == pytest.approx(4.0, rel=0.01)  # 4 MB at half of 2 MB/s
    assert second == pytest.approx(4.0 + 4.0 / 2, rel=0.01)  # 4 MB shared for 4 s, then 4 MB alone at 2 MB/s
    assert beside == pytest.approx(1.0, rel=0.01)  # 1 MB at the 1 MB/s replication throttles
    assert budget_model.users.max() == 2
    # Seen copying 1.6 MB/s together (Kafka's throttle lets through about 90 % of its rate): timed at that.
    first, second, _ = model(rows(800_000), ALL_LISTED, rates, NOW_MS).eta_seconds().tolist()
    assert (first, second) == pytest.approx((4 / 0.8, 4 / 0.8 + 4 / 1.6), rel=0.01)


def test_replica_records_and_metrics_carry_the_reason():
    diagnosed = {**row(state="STALLED", stalled_seconds=700.0), "previous_state": "COPYING", "transition": False,
                 "eta_seconds": None, "messages_behind_estimate": None, "reason_code": "LEADER_NOT_SENDING",
                 "reason": "no bytes for 11m40s; ..."}
    (_, value), = replica_records(from_rows([diagnosed]), NOW_MS, 7, "c", cluster="a")
    record = json.loads(value)
    assert record["reason_code"] == "LEADER_NOT_SENDING" and record["reason"] == "no bytes for 11m40s; ..."
    got = [(labels, v) for metric, _, labels, v in samples(Picture(replicas=from_rows([diagnosed])))
           if metric == m.REPLICA_DIAGNOSIS]
    assert got == [(("t", "0", "3", "LEADER_NOT_SENDING"), 1.0)]
    healthy = {**diagnosed, "reason_code": None, "reason": None}
    assert not [s for s in samples(Picture(replicas=from_rows([healthy]))) if s[0] == m.REPLICA_DIAGNOSIS]


def test_every_eta_of_a_batch_comes_from_the_one_simulation():
    """Three moves into broker 3 under one 300 KB/s throttle (3, 6 and 9 MB left): replica ETAs 30, 50, 60 s
    although each copies at 100 KB/s now; the partition ETA is its replica's, the cluster's the last finish."""
    from streaming.spark.outputs import PollFacts, assemble

    def moving(partition, mb):
        return {**row(partition=partition, numerator=0, denominator=mb * 1_000_000, copy_rate=100e3, progress=0.0),
                "previous_state": "COPYING", "transition": False, "offset_lag": None,
                "messages_behind_estimate": None, "eta_seconds": None, "poll_id": 1}

    tables = {"topic_throttles": ALL_LISTED, "broker_throttles": [{"broker": 3, "kind": "follower", "rate": 300_000}],
              "brokers": [{"broker": b, "alive": True} for b in (1, 2, 3)],
              "log_dirs_answered": [{"broker": b} for b in (1, 2, 3)]}
    output = assemble(from_rows([moving(0, 3), moving(1, 6), moving(2, 9)]), tables,
                      PollFacts("c", NOW_MS, 1, 0.1, (), {}), 5, cluster="a")
    assert output.replicas["eta_seconds"].tolist() == pytest.approx([30.0, 50.0, 60.0])
    assert output.partitions["eta_seconds"].tolist() == pytest.approx([30.0, 50.0, 60.0])
    assert output.summary["eta_seconds"] == pytest.approx(60.0)
    records = {key: json.loads(value) for key, value in output.records}
    assert records["t:2:3"]["eta_seconds"] == pytest.approx(60.0) and records["t:2"]["eta_seconds"] == pytest.approx(60.0)
    assert records["reassignment"]["eta_seconds"] == pytest.approx(60.0)
    assert output.picture.topics["eta_seconds"].tolist() == pytest.approx([60.0])


def test_a_steady_moves_eta_counts_down_with_the_clock_and_a_burst_moves_it_little():
    """History's smoothed rate feeds an unthrottled budget: polls every 10 s of a move copying 10 KB/s give
    ETAs that fall by 10 s a poll; after one poll with a 5x burst the rate behind the ETA is under 2x."""
    from streaming.core.history import Settings, empty_memory, step
    from streaming.core.measure import replica_progress
    from streaming.core.snapshot_columns import from_snapshot
    from tests.test_history import snapshot

    def etas(copied_per_poll):
        memory, out, copied = empty_memory(), [], 0
        for i, gain in enumerate(copied_per_poll):
            copied += gain
            ts_ms = i * 10_000
            memory, report = step(memory, replica_progress(from_snapshot(snapshot(ts_ms, copied))), ts_ms,
                                  Settings(stall_after_s=600, rate_window_s=60))
            eta = model(report, (), (), ts_ms).eta_seconds()[0]
            out.append(None if eta != eta else float(eta))
        return out

    steady = etas([0] + [100_000] * 6)
    assert [a - b for a, b in zip(steady[1:], steady[2:])] == pytest.approx([10.0] * 5, abs=1e-6)
    burst = etas([0] + [100_000] * 4 + [500_000])  # 100 KB left after the burst
    assert burst[5] > 100_000 / (2 * 10_000)


THROTTLES_BINDING_CASES = [
    # id, rows, broker throttles, topic throttles, brokers whose throttle sets a move's share
    ("one move under both throttles: the tighter binds", [row()],
     [{"broker": 3, "kind": "follower", "rate": 1_000_000}, {"broker": 1, "kind": "leader", "rate": 5_000_000}],
     ALL_LISTED, {3}),
    ("the leader's throttle tighter: the source binds", [row()],
     [{"broker": 3, "kind": "follower", "rate": 5_000_000}, {"broker": 1, "kind": "leader", "rate": 1_000_000}],
     ALL_LISTED, {1}),
    ("a rate on the broker but the replica not listed: nothing binds", [row()], RATE_3, (), set()),
    ("no throttle at all", [row()], (), (), set()),
    ("a move in sync takes no share", [row(in_isr=True, numerator=1_000_000)], RATE_3, ALL_LISTED, set()),
]


@pytest.mark.parametrize("rows, broker_throttles, topic_throttles, expected",
                         [case[1:] for case in THROTTLES_BINDING_CASES], ids=[case[0] for case in THROTTLES_BINDING_CASES])
def test_throttles_binding_is_the_models_binding_budget(rows, broker_throttles, topic_throttles, expected):
    """What `--throttle auto` reads as "more rate would finish a move sooner" is the budget model's own answer."""
    assert model(from_rows(rows), topic_throttles, broker_throttles, NOW_MS).throttles_binding() == frozenset(expected)


def test_diagnosed_says_since_when_an_unanswering_broker_has_not_answered():
    """The path the job's batch and `progress` take (streaming.core.diagnosis.diagnosed), every argument in place: a
    broker the door holds as unresponsive, and a PENDING move beside it still asked after pending_after_s."""
    rows = from_rows([row(state="BROKER_OFFLINE", numerator=None, since_s=3540),
                      row(partition=1, broker=2, state="PENDING", numerator=0, copy_rate=None, since_s=3570)])
    done, _ = diagnosed(rows, ALL_LISTED, RATE_3, frozenset({3}), NOW_MS, 20.0, {3: 3_530_000})
    assert list(zip(done["reason_code"].tolist(), done["reason"].tolist())) == [
        ("DESTINATION_OFFLINE", "destination broker 3 does not answer since 00:58:50 UTC"),
        ("NO_BYTES_YET", "no bytes for 30s since the move was seen")]
