"""The throttle janitor's decision (streaming.control.throttles.removal): one table of cases per rule and policy, then
property tests over generated cluster states. Pure: snapshots and ownership records are plain data."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streaming.vocabulary import throttle_actions as ta
from streaming.control.throttles import bookkeeping as tb
from streaming.vocabulary import throttle_entries as te
from streaming.control.throttles import removal as tp
from streaming.control.throttles import view as tv
from streaming.control.ownership.records import EntryClaim, Move, Ownership, RateClaim
from streaming.control.applier import applier_of
from streaming.control.ownership.store import MemoryLedger
from streaming.vocabulary import config_keys as ck
from streaming.vocabulary.snapshot import PollError, from_rows
from tests.fake_cluster import FakeCluster
from streaming.vocabulary.states import OwnershipState

NOW = 1_800_000_000_000
L, F, D = "leader", "follower", "alter_log_dirs"
MB = 1_000_000


def cluster(reassigning=(), topics=None, rates=None, brokers=(1, 2, 3, 4), dead=(), errors=(), future=None, now=NOW):
    """reassigning: (topic, partition, replicas, adding[, removing]); topics: {(topic, kind): value}; rates: {(broker, kind): rate};
    future: None (log dirs unknown) or the brokers holding a future log."""
    rows = dict(
        reassignments=[{"topic": m[0], "partition": m[1], "replicas": list(m[2]), "adding": list(m[3]),
                        "removing": list(m[4]) if len(m) > 4 else []} for m in reassigning],
        brokers=[{"broker": b, "alive": b not in dead} for b in brokers],
        log_dirs_answered=[{"broker": b} for b in brokers if future is not None and b not in dead],
        topic_throttles=[{"topic": t, "kind": k, "value": v} for (t, k), v in (topics or {}).items()],
        broker_throttles=[{"broker": b, "kind": k, "rate": r} for (b, k), r in (rates or {}).items()])
    if future is not None:
        rows["log_dirs"] = [{"broker": b, "log_dir": "/d", "topic": "x", "partition": 0, "size": 1, "offset_lag": 0,
                             "is_future": True} for b in future]
    snapshot = from_rows(now, "c1", **rows)
    return replace(snapshot, errors=tuple(PollError(api, "boom") for api in errors))


def owned(rid, state=OwnershipState.STARTED, moves=(), entries=None, rates=None, auto_remove=True, created=NOW - 60_000):
    """entries: {(topic, kind): "p:b,..."}; rates: {(broker, kind): (rate, prior)}; moves: (topic, partition)."""
    return Ownership(
        request_id=rid, state=state, created_ms=created, updated_ms=created, auto_remove=auto_remove,
        moves=tuple(Move(t, p, (1,), (2,)) for t, p in moves),
        entries=tuple(EntryClaim(t, k, p, b) for (t, k), v in (entries or {}).items() for p, b in sorted(te.parse(v))),
        rates=tuple(RateClaim(b, k, r, prior) for (b, k), (r, prior) in (rates or {}).items()))


def applied(snapshot, actions):
    """The view after the janitor's `apply` carried out `actions` on an in-memory cluster holding the
    snapshot's throttles (Kafka's IncrementalAlterConfigs semantics, tests.fake_cluster)."""
    view = tv.view_of(snapshot)
    fake = FakeCluster(brokers={b: b in view.alive for b in view.registered},
                               topics=dict(view.topic_values), rates=dict(view.broker_rates))
    applier_of(fake, MemoryLedger(), readback_timeout_s=0).apply(actions)
    return replace(view, topic_values=fake.topics, broker_rates=fake.rates)


def brief(actions):
    """Actions as comparable tuples: (scope, name, kind, action, what) - entries for topics, new value for brokers."""
    out = []
    for a in actions:
        what = ",".join(a.entries) if a.scope == ck.TOPIC else (a.restored_value if a.op == ck.SET else "delete")
        out.append((a.scope, a.name, a.kind, a.action, what))
    return sorted(out)


A = owned("A", moves=[("t", 0)], entries={("t", L): "0:1", ("t", F): "0:2"},
          rates={(1, L): (MB, None), (1, F): (MB, None), (2, L): (MB, None), (2, F): (MB, None)})
A_SET = {("t", L): "0:1", ("t", F): "0:2"}
A_RATES = {(1, L): MB, (1, F): MB, (2, L): MB, (2, F): MB}
A_ALL_REMOVED = [("broker", "1", F, "removed", "delete"), ("broker", "1", L, "removed", "delete"),
                 ("broker", "2", F, "removed", "delete"), ("broker", "2", L, "removed", "delete"),
                 ("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")]

CASES = [
    # --- the happy path ---
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [A], ta.Policy(), A_ALL_REMOVED, id="finished-move-all-owned-removed"),
    pytest.param(cluster(), [A], ta.Policy(), [], id="nothing-set-nothing-to-do"),
    # --- "Still reassigning": an entry stays while its partition reassigns ---
    pytest.param(cluster(reassigning=[("t", 0, [1, 2], [2])], topics=A_SET, rates=A_RATES), [A], ta.Policy(), [],
                 id="rule1-entry-kept-while-partition-reassigns"),
    pytest.param(cluster(reassigning=[("t", 1, [3, 4], [4])], topics={("t", L): "0:1,1:3", ("t", F): "0:2,1:4"}),
                 [owned("A", moves=[("t", 0), ("t", 1)], entries={("t", L): "0:1,1:3", ("t", F): "0:2,1:4"})],
                 ta.Policy(), [("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")],
                 id="rule1-finished-partition-removed-while-sibling-moves"),
    pytest.param(cluster(reassigning=[("u", 0, [1, 2], [2])], topics=A_SET), [owned("A", moves=[("t", 0)], entries=A_SET)],
                 ta.Policy(), [("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")],
                 id="rule1-same-partition-number-of-other-topic-does-not-block"),
    # --- "Broker in use": a broker rate stays while a move uses the broker ---
    pytest.param(cluster(reassigning=[("other", 0, [1, 3], [3])], topics=A_SET, rates=A_RATES), [A], ta.Policy(),
                 [("broker", "2", F, "removed", "delete"), ("broker", "2", L, "removed", "delete"),
                  ("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")],
                 id="rule2-source-broker-of-foreign-move-kept"),
    pytest.param(cluster(reassigning=[("other", 0, [3, 2], [2])], topics=A_SET, rates=A_RATES), [A], ta.Policy(),
                 [("broker", "1", F, "removed", "delete"), ("broker", "1", L, "removed", "delete"),
                  ("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")],
                 id="rule2-destination-broker-kept"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES, dead=(2,)), [A], ta.Policy(),
                 [("broker", "1", F, "removed", "delete"), ("broker", "1", L, "removed", "delete"),
                  ("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")],
                 id="rule2-offline-broker-rate-left-until-it-returns"),
    # --- "Surgical" ---
    pytest.param(cluster(topics={("t", L): "0:1,0:3,7:2", ("t", F): "0:2,0:4"}), [owned("A", moves=[("t", 0)], entries=A_SET)],
                 ta.Policy(), [("topic", "t", F, "removed", "0:2"), ("topic", "t", L, "removed", "0:1")],
                 id="rule3-foreign-entries-left"),
    pytest.param(cluster(topics={("t", L): "*", ("t", F): "*"}), [owned("A", moves=[("t", 0)], entries=A_SET)],
                 ta.Policy(), [], id="rule3-star-never-touched"),
    pytest.param(cluster(topics={("t", L): "0:3", ("t", F): "9:9"}, rates={(1, L): 5 * MB}), [], ta.Policy(), [],
                 id="rule3-nothing-owned-nothing-removed"),
    pytest.param(cluster(rates={(1, L): 7 * MB}), [owned("A", rates={(1, L): (MB, None)})], ta.Policy(), [],
                 id="rule3-rate-changed-by-someone-else-is-theirs"),
    # --- "Policy", "Newest claim", "Restore the prior" ---
    pytest.param(cluster(rates={(1, L): MB, (1, F): MB}), [owned("A", rates={(1, L): (MB, 5 * MB), (1, F): (MB, None)})],
                 ta.Policy(), [("broker", "1", F, "removed", "delete"), ("broker", "1", L, "restored", "5000000")],
                 id="rule4-prior-value-restored"),
    pytest.param(cluster(rates={(1, L): MB}), [owned("A", rates={(1, L): (MB, MB)})], ta.Policy(), [],
                 id="rule4-prior-equal-to-current-nothing-to-do"),
    pytest.param(cluster(rates={(1, L): 2 * MB}),
                 [owned("A", rates={(1, L): (MB, 5 * MB)}, created=NOW - 90_000),
                  owned("B", rates={(1, L): (2 * MB, 5 * MB)}, created=NOW - 30_000)],
                 ta.Policy(), [("broker", "1", L, "restored", "5000000")], id="rule4-shared-rate-restores-the-carried-prior"),
    pytest.param(cluster(rates={(1, L): MB}),
                 [owned("A", rates={(1, L): (MB, None)}, created=NOW - 90_000),
                  owned("B", rates={(1, L): (MB, 5 * MB)}, created=NOW - 30_000)],
                 ta.Policy(), [("broker", "1", L, "restored", "5000000")], id="rule4-newest-holder-prior-wins-over-stale-delete"),
    pytest.param(cluster(rates={(1, L): MB}),
                 [owned("A", rates={(1, L): (MB, None)}, created=NOW - 90_000),
                  owned("B", rates={(1, L): (2 * MB, 5 * MB)}, created=NOW - 30_000)],
                 ta.Policy(), [], id="rule4-value-of-an-overwritten-older-claim-is-not-ours"),
    pytest.param(cluster(reassigning=[("u", 0, [2, 3], [3])], rates={(1, L): MB, (2, L): MB}),
                 [owned("A", moves=[("t", 0)], rates={(1, L): (MB, None), (2, L): (MB, None)}),
                  owned("B", moves=[("u", 0)], rates={(2, L): (MB, None), (3, L): (MB, None)})],
                 ta.Policy(), [("broker", "1", L, "removed", "delete")], id="rule4-overlap-second-move-keeps-shared-broker"),
    pytest.param(cluster(topics={("t", L): "0:1"}),
                 [owned("A", moves=[("t", 0)], entries={("t", L): "0:1"}),
                  owned("B", state=OwnershipState.PENDING, moves=[("t", 0)], entries={("t", L): "0:1"}, created=NOW - 1000)],
                 ta.Policy(), [], id="rule4-entry-shared-with-pending-request-kept"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [replace(A, state=OwnershipState.PENDING, created_ms=NOW - 1000)], ta.Policy(), [],
                 id="rule4-pending-execute-in-grace-kept"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [replace(A, state=OwnershipState.PENDING, created_ms=NOW - ta.PENDING_GRACE_MS - 1)],
                 ta.Policy(), A_ALL_REMOVED, id="rule4-pending-past-grace-is-a-dead-execute"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [replace(A, auto_remove=False)], ta.Policy(), [],
                 id="rule4-no-auto-remove-kept"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [replace(A, auto_remove=False)], ta.Policy(release=frozenset({"A"})),
                 A_ALL_REMOVED, id="rule4-no-auto-remove-released-by-verify"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [replace(A, auto_remove=False, state=OwnershipState.ABORTED)], ta.Policy(),
                 A_ALL_REMOVED, id="rule4-aborted-execute-rolled-back"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [replace(A, state=OwnershipState.DONE)], ta.Policy(), [],
                 id="rule4-done-record-claims-nothing"),
    pytest.param(cluster(topics={("t", L): "0:1,*x"} if False else {("t", L): "0:1,1:1"}, rates={(3, L): MB}),
                 [], ta.Policy(cleanup=ta.ALL),
                 [("broker", "3", L, "removed", "delete"), ("topic", "t", L, "removed", "0:1,1:1")],
                 id="policy-all-clears-everything-once-nothing-moves"),
    pytest.param(cluster(topics={("t", L): "*"}), [], ta.Policy(cleanup=ta.ALL), [("topic", "t", L, "removed", "*")],
                 id="policy-all-clears-star"),
    pytest.param(cluster(reassigning=[("u", 0, [2, 3], [3])], topics={("t", L): "0:1"}, rates={(1, L): MB}), [],
                 ta.Policy(cleanup=ta.ALL), [], id="policy-all-waits-for-every-reassignment"),
    pytest.param(cluster(topics={("t", L): "0:1"}), [replace(A, state=OwnershipState.PENDING, created_ms=NOW - 1000)],
                 ta.Policy(cleanup=ta.ALL), [], id="policy-all-waits-for-execute-in-flight"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [A], ta.Policy(cleanup=ta.OFF),
                 [(s, n, k, "dry_run", w) for s, n, k, _, w in A_ALL_REMOVED], id="policy-off-reports-only"),
    # --- "Policy": dry run ---
    pytest.param(cluster(topics=A_SET, rates=A_RATES), [A], ta.Policy(dry_run=True),
                 [(s, n, k, "dry_run", w) for s, n, k, _, w in A_ALL_REMOVED], id="rule7-dry-run-decides-and-reports"),
    # --- refusing to decide on an incomplete poll ---
    pytest.param(cluster(topics=A_SET, rates=A_RATES, errors=("ListPartitionReassignments",)), [A], ta.Policy(), [],
                 id="incomplete-poll-no-reassignment-list"),
    pytest.param(cluster(topics=A_SET, rates=A_RATES, errors=("DescribeConfigs",)), [A], ta.Policy(cleanup=ta.ALL), [],
                 id="incomplete-poll-no-configs"),
    # --- the alter-log-dirs rate ---
    pytest.param(cluster(rates={(1, D): MB}), [owned("A", rates={(1, D): (MB, None)})], ta.Policy(), [],
                 id="log-dirs-unknown-rate-kept"),
    pytest.param(cluster(rates={(1, D): MB}, future=(1,)), [owned("A", rates={(1, D): (MB, None)})], ta.Policy(), [],
                 id="log-dirs-future-log-rate-kept"),
    pytest.param(cluster(rates={(1, D): MB}, future=()), [owned("A", rates={(1, D): (MB, None)})], ta.Policy(),
                 [("broker", "1", D, "removed", "delete")], id="log-dirs-no-future-log-rate-removed"),
]


@pytest.mark.parametrize("snapshot, records, policy, expected", CASES)
def test_decide(snapshot, records, policy, expected):
    assert brief(tp.decide(snapshot, records, policy)) == sorted(expected)


SETTLED = [
    pytest.param(cluster(), [A], True, id="all-gone"),
    pytest.param(cluster(topics={("t", L): "0:1"}), [A], False, id="entry-still-there"),
    pytest.param(cluster(topics={("t", L): "*"}), [A], True, id="star-is-not-our-entry"),
    pytest.param(cluster(reassigning=[("t", 0, [1, 2], [2])]), [A], False, id="still-moving"),
    pytest.param(cluster(rates={(1, L): MB}), [A], False, id="rate-still-ours"),
    pytest.param(cluster(rates={(1, L): 9 * MB}), [A], True, id="rate-changed-by-someone-else"),
    pytest.param(cluster(dead=(2,)), [A], False, id="broker-offline-unknown"),
    pytest.param(cluster(brokers=(1, 3, 4)), [A], True, id="broker-left-the-cluster"),
    pytest.param(cluster(), [replace(A, auto_remove=False)], False, id="kept-by-no-auto-remove"),
    pytest.param(cluster(errors=("ListPartitionReassignments",)), [A], False, id="incomplete-poll"),
]


GIVEN_UP = [
    pytest.param(cluster(rates={(1, L): MB, (1, F): MB, (2, L): MB, (2, F): MB}), [A], [], id="every-claim-held"),
    pytest.param(cluster(rates={(1, L): 7 * MB, (1, F): MB, (2, F): MB}), [A], [("A", [(1, F), (2, F)])],
                 id="changed-and-deleted-claims-given-up"),
    pytest.param(cluster(dead=(2,), rates={(1, L): MB, (1, F): MB}), [A], [],
                 id="offline-broker-unknown-claim-kept"),
    pytest.param(cluster(), [replace(A, state=OwnershipState.PENDING, created_ms=NOW - 1000)], [], id="execute-in-flight-kept"),
    pytest.param(cluster(), [replace(A, state=OwnershipState.DONE)], [], id="done-record-untouched"),
    pytest.param(cluster(errors=("DescribeConfigs",)), [A], [], id="incomplete-poll-decides-nothing"),
]


@pytest.mark.parametrize("snapshot, records, expected", GIVEN_UP)
def test_given_up(snapshot, records, expected):
    assert [(r.request_id, sorted((c.broker, c.kind) for c in r.rates)) for r in tb.given_up(snapshot, records)] == expected


@pytest.mark.parametrize("snapshot, records, expected", SETTLED)
def test_settled(snapshot, records, expected):
    assert tb.settled(snapshot, records[0], records) is expected


def test_confirmed_and_applied_agree():
    snapshot = cluster(topics={("t", L): "0:1,0:3", ("t", F): "0:2"}, rates={(1, L): MB, (1, F): MB})
    records = [owned("A", moves=[("t", 0)], entries=A_SET, rates={(1, L): (MB, 5 * MB), (1, F): (MB, None)})]
    actions = tp.decide(snapshot, records)
    after = applied(snapshot, actions)
    assert after.topic_values == {("t", L): "0:3", ("t", F): ""}
    assert after.broker_rates == {(1, L): 5 * MB}
    assert all(tb.confirmed(a, after) for a in actions)
    assert not any(tb.confirmed(a, snapshot) for a in actions)


# ---- properties over generated cluster states ----

BROKERS = (1, 2, 3, 4)
TOPICS = ("a", "b")
PARTITIONS = (0, 1, 2)
PAIRS = [(p, b) for p in PARTITIONS for b in BROKERS]
RATES = (MB, 2 * MB, 5 * MB)


@st.composite
def states(draw):
    moving = draw(st.lists(st.tuples(st.sampled_from(TOPICS), st.sampled_from(PARTITIONS)), unique=True, max_size=4))
    reassigning = []
    for topic, partition in moving:
        replicas = draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4, unique=True))
        adding = draw(st.lists(st.sampled_from(replicas), unique=True, max_size=len(replicas)))
        reassigning.append((topic, partition, replicas, adding))
    value = st.one_of(st.none(), st.just("*"), st.just(""),
                      st.lists(st.sampled_from(PAIRS), unique=True, max_size=6).map(te.format_entries))
    topics = {(t, k): v for t in TOPICS for k in (L, F) if (v := draw(value)) is not None}
    rates = {(b, k): r for b in BROKERS for k in (L, F, D) if (r := draw(st.one_of(st.none(), st.sampled_from(RATES)))) is not None}
    dead = draw(st.lists(st.sampled_from(BROKERS), unique=True, max_size=2))
    future = draw(st.one_of(st.none(), st.lists(st.sampled_from(BROKERS), unique=True, max_size=2)))
    errors = draw(st.sampled_from([(), (), (), ("ListPartitionReassignments",), ("DescribeConfigs",), ("DescribeLogDirs",)]))
    snapshot = cluster(reassigning, topics, rates, dead=dead, errors=errors, future=future)

    records = []
    for i in range(draw(st.integers(0, 3))):
        claims = {(t, k): te.format_entries(draw(st.lists(st.sampled_from(PAIRS), unique=True, max_size=4)))
                  for t in TOPICS for k in (L, F) if draw(st.booleans())}
        owned_rates = {(b, k): (draw(st.sampled_from(RATES)), draw(st.one_of(st.none(), st.sampled_from(RATES))))
                       for b in BROKERS for k in (L, F, D) if draw(st.integers(0, 3)) == 0}
        records.append(owned(
            f"R{i}", state=draw(st.sampled_from([OwnershipState.PENDING, OwnershipState.STARTED, OwnershipState.STARTED, OwnershipState.ABORTED, OwnershipState.DONE])),
            moves=draw(st.lists(st.tuples(st.sampled_from(TOPICS), st.sampled_from(PARTITIONS)), unique=True, max_size=3)),
            entries=claims, rates=owned_rates, auto_remove=draw(st.booleans()),
            created=NOW - draw(st.sampled_from([1000, ta.PENDING_GRACE_MS + 1]))))
    policy = ta.Policy(cleanup=draw(st.sampled_from(ta.POLICIES)), dry_run=draw(st.booleans()),
                       release=frozenset(draw(st.lists(st.sampled_from(["R0", "R1", "R2"]), unique=True))))
    return snapshot, records, policy


PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(states())
def test_no_action_touches_what_an_ongoing_move_needs(state):
    snapshot, records, policy = state
    view = tv.view_of(snapshot)
    for action in tp.decide(snapshot, records, policy):
        if action.scope == ck.TOPIC:
            if action.op == ck.DELETE:
                assert not view.reassigning, "all-policy removal while something reassigns"
            for text in action.entries:
                if text != "*":
                    partition, _ = te.parse_entry(text)
                    assert (action.name, partition) not in view.reassigning, f"\"Still reassigning\" broken by {action}"
        else:
            assert int(action.name) not in view.moving_brokers, f"\"Broker in use\" broken by {action}"
            assert int(action.name) in view.alive
            if action.kind == D:
                assert int(action.name) in view.log_dirs_known and int(action.name) not in view.future_log_brokers


@PROPERTY
@given(states())
def test_owned_never_touches_star_foreign_or_unowned(state):
    snapshot, records, policy = state
    policy = replace(policy, cleanup=ta.OWNED)
    view = tv.view_of(snapshot)
    active = [r for r in records if r.state != OwnershipState.DONE]
    claimed = {(c.topic, c.kind, c.partition, c.broker) for r in active for c in r.entries}
    claimed_rates = {(c.broker, c.kind): c for r in active for c in r.rates}
    for action in tp.decide(snapshot, records, policy):
        if action.scope == ck.TOPIC:
            assert action.op == ck.SUBTRACT
            assert not te.is_all(view.topic_values.get((action.name, action.kind)))
            for text in action.entries:
                assert text != "*"
                assert (action.name, action.kind, *te.parse_entry(text)) in claimed, f"foreign entry {text} in {action}"
        else:
            key = (int(action.name), action.kind)
            assert key in claimed_rates, f"unowned rate in {action}"
            assert view.broker_rates[key] in {c.rate for r in active for c in r.rates if (c.broker, c.kind) == key}


@PROPERTY
@given(states())
def test_dry_run_and_off_only_report(state):
    snapshot, records, policy = state
    for quiet in (replace(policy, dry_run=True), replace(policy, cleanup=ta.OFF)):
        assert all(a.action == ta.DRY_RUN for a in tp.decide(snapshot, records, quiet))


@PROPERTY
@given(states())
def test_applying_twice_removes_nothing_more(state):
    snapshot, records, policy = state
    policy = replace(policy, dry_run=False, cleanup=ta.ALL if policy.cleanup == ta.ALL else ta.OWNED)
    first = tp.decide(snapshot, records, policy)
    after = applied(snapshot, first)
    assert all(tb.confirmed(a, after) for a in first)
    assert tp.decide(after, records, policy) == []
