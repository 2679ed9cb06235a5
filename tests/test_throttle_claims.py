"""What `execute` sets and claims (streaming.control.throttles.claims) and the ownership records (streaming.control.ownership.records). Pure."""

from dataclasses import replace

import pytest

from streaming.vocabulary import throttle_entries as te
from streaming.control.throttles.claims import log_dir_moves, moves_for, throttle_setting
from streaming.control.ownership.records import EntryClaim, Move, Ownership, RateClaim, Refusal, accepted_moves, decode, encode, new_request_id
from streaming.control.ownership.store import MemoryLedger
from streaming.control.throttles.view import ClusterView
from streaming.vocabulary.reassignment_file import PartitionMove
from streaming.control.ownership.records import Origin
from streaming.vocabulary.states import OwnershipState

MB = 1_000_000


def view(topics=None, rates=None):
    return ClusterView(now_ms=0, complete=True, reassigning=frozenset(), moving_brokers=frozenset(),
                       alive=frozenset({1, 2, 3, 4}), registered=frozenset({1, 2, 3, 4}), log_dirs_known=frozenset(),
                       future_log_brokers=frozenset(), topic_values=topics or {}, broker_rates=rates or {})


def ours(rid, entries=(), rates=()):
    return Ownership(rid, OwnershipState.STARTED, 0, 0, entries=tuple(EntryClaim(*e) for e in entries), rates=tuple(RateClaim(*r) for r in rates))


def shown(setting):
    return ({k: te.format_entries(v) for k, v in setting.appends.items()},
            {(c.broker, c.kind): (c.rate, c.prior) for c in setting.rate_claims},
            {k: te.format_entries(v) for k, v in setting.foreign.items()}, setting.all_replicas)


T0_1_2 = Move("t", 0, (1, 2), (2, 3))  # 1,2 -> 2,3: sources 1,2; destination 3
CASES = [
    pytest.param([T0_1_2], view(), [], MB,
                 ({("t", "leader"): "0:1,0:2", ("t", "follower"): "0:3"},
                  {(b, k): (MB, None) for b in (1, 2, 3) for k in ("leader", "follower")}, {}, ()),
                 id="kip179-leader-sources-follower-destinations-rates-on-all"),
    pytest.param([T0_1_2, Move("t", 1, (3,), (3,))], view(), [], MB,
                 ({("t", "leader"): "0:1,0:2", ("t", "follower"): "0:3"},
                  {(b, k): (MB, None) for b in (1, 2, 3) for k in ("leader", "follower")}, {}, ()),
                 id="partition-gaining-no-replica-is-not-throttled"),
    pytest.param([T0_1_2], view(), [], None, ({}, {}, {}, ()), id="no-throttle-sets-nothing"),
    pytest.param([T0_1_2], view(topics={("t", "leader"): "0:1,5:5"}), [], MB,
                 ({("t", "leader"): "0:2", ("t", "follower"): "0:3"},
                  {(b, k): (MB, None) for b in (1, 2, 3) for k in ("leader", "follower")},
                  {("t", "leader"): "0:1"}, ()),
                 id="foreign-entry-already-there-not-claimed"),
    pytest.param([T0_1_2], view(topics={("t", "leader"): "0:1"}), [ours("A", entries=[("t", "leader", 0, 1)])], MB,
                 ({("t", "leader"): "0:1,0:2", ("t", "follower"): "0:3"},
                  {(b, k): (MB, None) for b in (1, 2, 3) for k in ("leader", "follower")}, {}, ()),
                 id="entry-of-our-own-active-request-is-shared"),
    pytest.param([T0_1_2], view(topics={("t", "follower"): "*"}), [], MB,
                 ({("t", "leader"): "0:1,0:2"},
                  {(b, k): (MB, None) for b in (1, 2, 3) for k in ("leader", "follower")}, {}, (("t", "follower"),)),
                 id="star-left-alone"),
    pytest.param([T0_1_2], view(rates={(1, "leader"): 7 * MB, (2, "leader"): 2 * MB}),
                 [ours("A", rates=[(2, "leader", 2 * MB, 4 * MB)])], MB,
                 ({("t", "leader"): "0:1,0:2", ("t", "follower"): "0:3"},
                  {**{(b, k): (MB, None) for b in (1, 2, 3) for k in ("leader", "follower")},
                   (1, "leader"): (MB, 7 * MB), (2, "leader"): (MB, 4 * MB)}, {}, ()),
                 id="prior-recorded-and-carried-over-from-our-own-request"),
    pytest.param([T0_1_2], view(rates={(1, "leader"): MB}),
                 [ours("A", rates=[(1, "leader", MB, None)]), ours("B", rates=[(1, "leader", MB, 6 * MB)])], 2 * MB,
                 ({("t", "leader"): "0:1,0:2", ("t", "follower"): "0:3"},
                  {**{(b, k): (2 * MB, None) for b in (1, 2, 3) for k in ("leader", "follower")},
                   (1, "leader"): (2 * MB, 6 * MB)}, {}, ()),
                 id="prior-carried-over-from-the-newest-of-our-requests-holding-the-value"),
]


@pytest.mark.parametrize("moves, cluster, active, throttle, expected", CASES)
def test_throttle_setting(moves, cluster, active, throttle, expected):
    assert shown(throttle_setting(moves, cluster, active, throttle)) == expected


def test_claims_match_appends():
    setting = throttle_setting([T0_1_2], view(topics={("t", "leader"): "0:1"}), [], MB)
    assert {(c.topic, c.kind, c.partition, c.broker) for c in setting.entries} == {
        ("t", "leader", 0, 2), ("t", "follower", 0, 3)}


def test_moves_use_original_replicas_of_an_ongoing_reassignment():
    file_moves = [PartitionMove("t", 0, (3, 4)), PartitionMove("t", 1, (1,))]
    moves = moves_for(file_moves, {("t", 0): [1, 2, 3], ("t", 1): [2]}, {("t", 0): {"replicas": [1, 2, 3], "adding": [3]}})
    assert moves == (Move("t", 0, (1, 2), (3, 4)), Move("t", 1, (2,), (1,)))
    assert moves[0].destinations == (3, 4)


def test_log_dir_moves_and_their_throttle():
    moves = moves_for([PartitionMove("t", 0, (1, 2), ("/d1", "any"))], {("t", 0): [1, 2]}, {})
    assert moves == (Move("t", 0, (1, 2), (1, 2), ("/d1", "any")),)
    dirs = log_dir_moves(moves)
    assert dirs == {("t", 0, 1): "/d1"}
    setting = throttle_setting((), view(), [], None, dirs, 3 * MB)
    assert [(c.broker, c.kind, c.rate) for c in setting.rate_claims] == [(1, "alter_log_dirs", 3 * MB)]


def test_ownership_round_trip():
    record = Ownership("20260101T000000.000Z-abcd", OwnershipState.STARTED, 1, 2, auto_remove=False,
                       moves=(Move("t", 0, (1, 2), (2, 3)),),
                       entries=(EntryClaim("t", "leader", 0, 1), EntryClaim("t", "leader", 10, 2), EntryClaim("t", "follower", 0, 3)),
                       rates=(RateClaim(1, "leader", MB, None), RateClaim(3, "follower", MB, 7 * MB)), note="n")
    back = decode(encode(record))
    assert set(back.entries) == set(record.entries)  # encoded grouped per (topic, kind), so order may differ
    assert replace(back, entries=()) == replace(record, entries=())


def test_request_ids_are_monotonic_and_sortable():
    ids = []
    for _ in range(50):
        ids.append(new_request_id(ids, now_ms=1_800_000_000_000))  # same clock reading every time
    assert ids == sorted(ids) and len(set(ids)) == 50
    later = new_request_id(ids, now_ms=1_900_000_000_000)
    assert later > ids[-1] and later.startswith("20300317T")


def test_memory_store_keeps_the_latest_per_request():
    store = MemoryLedger()
    record = Ownership("a", OwnershipState.STARTED, 0, 0)
    store.put(record)
    store.put(record.with_state(OwnershipState.DONE, 5))
    assert [r.state for r in store.records()] == [OwnershipState.DONE] and not store.records()[0].active


def moving(rid, created_ms, state=OwnershipState.STARTED, origin=Origin.EXECUTE, refused=(), target=(2,)):
    return Ownership(rid, state, created_ms, created_ms, origin=origin, moves=(Move("t", 0, (1,), target),),
                     refused=tuple(Refusal("t", p, "INVALID_REPLICA_ASSIGNMENT") for p in refused))


@pytest.mark.parametrize("records, targets", [
    ([moving("a", 1)], {("t", 0): (2,)}),
    ([moving("a", 1, state=OwnershipState.PENDING)], {}),  # not accepted yet
    ([moving("a", 1, state=OwnershipState.DONE)], {}),
    ([moving("a", 1, origin=Origin.OBSERVED)], {}),  # another tool's move: seen listed, never ours to hand over
    ([moving("a", 1, refused=(0,))], {}),
    ([moving("b", 2, target=(3,)), moving("a", 1)], {("t", 0): (3,)}),  # the newest request's move
], ids=["accepted", "pending", "done", "observed", "refused", "newest-wins"])
def test_accepted_moves(records, targets):
    assert {p: m.target for p, m in accepted_moves(records).items()} == targets
