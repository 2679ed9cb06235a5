"""The budget model on plain data: a table of cases (moves, budgets -> finish times), and its invariants
as properties (a finished move never delays another; more budget never means a later finish; shares never
exceed a budget)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from streaming.core.budget import BudgetKey, Move, budget_rates, effective_throttle, simulate, simulate_admitted
from streaming.vocabulary.kafka_limits import THROTTLE_FLOOR_BYTES_PER_S

F3 = BudgetKey("follower", 3, True)
L1 = BudgetKey("leader", 1, True)
L2 = BudgetKey("leader", 2, True)
U3 = BudgetKey("follower", 3, False)
NOW = 1000.0


def move(key, mb, budgets=(F3,), growth=0.0, observed=None):
    return Move(key, mb * 1e6, growth, observed, budgets)


CASES = [
    # id, throttles {budget: rate}, moves, expected {key: seconds from now, or "never" / None (unknown)}
    ("one-move", {F3: 300e3}, [move("a", 3)], {"a": 10.0}),
    ("three-share-one-throttle", {F3: 300e3}, [move("a", 3), move("b", 6), move("c", 9)],
     {"a": 30.0, "b": 50.0, "c": 60.0}),
    ("leader-growth-slows-the-move", {F3: 300e3}, [move("a", 3, growth=100e3)], {"a": 15.0}),
    ("growth-above-share-waits-for-the-others", {F3: 600e3}, [move("a", 1, growth=400e3), move("b", 3)],
     {"b": 10.0, "a": 20.0}),
    ("growth-above-the-whole-budget-never-finishes", {F3: 300e3}, [move("a", 1, growth=400e3), move("b", 3)],
     {"a": "never", "b": 20.0}),
    ("nothing-left-takes-no-share", {F3: 300e3}, [move("a", 0), move("b", 3)], {"a": 0.0, "b": 10.0}),
    ("throttle-below-its-floor-copies-at-the-floor", {F3: 1.0}, [move("a", THROTTLE_FLOOR_BYTES_PER_S * 10 / 1e6)],
     {"a": 10.0}),
    ("unthrottled-budget-runs-at-the-observed-total", {},
     [move("a", 1.5, (U3,), observed=100e3), move("b", 3, (U3,), observed=200e3)], {"a": 10.0, "b": 15.0}),
    ("unthrottled-without-an-observed-rate-is-unknown", {}, [move("a", 1, (U3,))], {"a": None}),
    # Kafka's alter-log-dirs throttle copies about 90 % of its rate, less on a loaded broker: moves that measure a
    # throttled budget alone (no other budget, every one with a rate) and copy less than it set its rate.
    ("moves-alone-on-a-throttle-copying-less-set-its-rate", {F3: 300e3},
     [move("a", 1.5, observed=100e3), move("b", 3, observed=50e3)], {"a": 20.0, "b": 30.0}),
    ("copying-more-than-the-throttle-counts-the-throttle", {F3: 300e3}, [move("a", 3, observed=900e3)], {"a": 10.0}),
    ("a-move-on-two-budgets-measures-neither", {F3: 300e3, L1: 1e6}, [move("a", 3, (F3, L1), observed=100e3)],
     {"a": 10.0}),
    ("a-move-without-a-rate-leaves-the-throttle", {F3: 300e3}, [move("a", 3, observed=100e3), move("b", 3)],
     {"a": 20.0, "b": 20.0}),
    ("tightest-budget-binds", {F3: 300e3, L1: 1e6}, [move("a", 1, (F3, L1)), move("b", 1), move("c", 1)],
     {"a": 10.0, "b": 10.0, "c": 10.0}),
    ("a-freed-share-goes-to-the-moves-on-that-budget", {F3: 300e3, L1: 150e3, L2: 300e3},
     [move("a", 1.5, (F3, L1)), move("b", 1.5, (F3, L2))], {"a": 10.0, "b": 10.0}),
    # Equal shares: a move bound elsewhere (b, by L1 at 100 KB/s) leaves part of its share of F3 unused, so
    # `a` is modelled at 150 KB/s until it finishes, not at 200 KB/s (conservative: late, never early).
    ("equal-shares-are-conservative", {F3: 300e3, L1: 100e3}, [move("a", 1.5, (F3,)), move("b", 2, (F3, L1))],
     {"a": 10.0, "b": 20.0}),
]


@pytest.mark.parametrize("throttles, moves, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_finish_times(throttles, moves, expected):
    outcome = simulate(moves, budget_rates(throttles, moves), NOW)
    got = {}
    for key, finish in outcome.finishes.items():
        got[key] = "never" if finish.never else finish.eta_s(NOW)
    assert got.keys() == expected.keys()
    for key, want in expected.items():
        if isinstance(want, float):
            assert got[key] == pytest.approx(want, rel=1e-9), (key, got)
        else:
            assert got[key] == want, (key, got)


def test_the_cluster_eta_is_the_last_finish_not_total_bytes_over_total_rate():
    moves = [move("a", 3), move("b", 6, growth=50e3), move("c", 9)]
    outcome = simulate(moves, budget_rates({F3: 300e3}, moves), NOW)
    assert outcome.last_finish_s() == max(f.at_s for f in outcome.finishes.values())
    assert outcome.last_finish_s(["a"]) == outcome.finishes["a"].at_s


def test_an_effective_throttle_is_never_below_one_fetch_per_quota_window():
    assert effective_throttle(1) == pytest.approx(1_048_576 / 11)
    assert effective_throttle(5e6) == 5e6


def test_the_binding_budget_and_its_users_are_reported():
    moves = [move("a", 1, (F3, L1)), move("b", 1)]
    outcome = simulate(moves, budget_rates({F3: 300e3, L1: 100e3}, moves), NOW)
    assert outcome.finishes["a"].binding == L1 and outcome.finishes["a"].share == 100e3
    assert outcome.finishes["b"].binding == F3 and outcome.finishes["b"].share == 150e3
    assert outcome.users == {F3: 2, L1: 1}


# -- properties --

BUDGETS = [F3, L1, L2, BudgetKey("follower", 2, True)]


@st.composite
def scenarios(draw):
    rates = {b: draw(st.floats(min_value=1e3, max_value=5e6)) for b in BUDGETS}
    count = draw(st.integers(min_value=1, max_value=8))
    moves = []
    for i in range(count):
        used = draw(st.lists(st.sampled_from(BUDGETS), min_size=1, max_size=2, unique=True))
        moves.append(Move(f"m{i}", draw(st.floats(min_value=0, max_value=1e7)),
                          draw(st.sampled_from([0.0, 0.0, draw(st.floats(min_value=0, max_value=3e5))])),
                          None, tuple(used)))
    return rates, moves


def _at(outcome, key):
    finish = outcome.finishes[key]
    return math.inf if finish.at_s is None else finish.at_s


def _later(a, b):
    """Whether finish time a is later than b beyond rounding."""
    return a > b + 1e-6 * max(1.0, abs(b)) if b < math.inf else False


@settings(max_examples=100, deadline=None)
@given(scenarios())
def test_shares_never_exceed_a_budget(scenario):
    rates, moves = scenario
    outcome = simulate(moves, budget_rates(rates, moves), NOW)
    for budget, rate in budget_rates(rates, moves).items():
        used = sum(outcome.finishes[m.key].share or 0.0 for m in moves if budget in m.budgets and m.remaining > 0)
        assert used <= rate * (1 + 1e-9)


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.data())
def test_a_finished_move_never_delays_another(scenario, data):
    rates, moves = scenario
    gone = data.draw(st.integers(min_value=0, max_value=len(moves) - 1))
    with_it = simulate(moves, budget_rates(rates, moves), NOW)
    finished = [m if i != gone else Move(m.key, 0.0, m.growth, m.observed, m.budgets) for i, m in enumerate(moves)]
    without = simulate(finished, budget_rates(rates, finished), NOW)
    for m in moves:
        if m.key != moves[gone].key:
            assert not _later(_at(without, m.key), _at(with_it, m.key)), m.key


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.sampled_from(BUDGETS), st.floats(min_value=1.0, max_value=10.0))
def test_more_budget_never_means_a_later_finish(scenario, budget, factor):
    rates, moves = scenario
    before = simulate(moves, budget_rates(rates, moves), NOW)
    more = {**rates, budget: rates[budget] * factor}
    after = simulate(moves, budget_rates(more, moves), NOW)
    for m in moves:
        assert not _later(_at(after, m.key), _at(before, m.key)), m.key


# ---- a plan's ETA: moves started as the scheduler's limits let them (simulate_admitted) ----

@st.composite
def plan_moves(draw):
    """Moves from a source to a destination among four brokers, each broker's leader and follower budgets
    throttled at a drawn rate; sizes in bytes, no growth."""
    rates = {b: draw(st.sampled_from([1.0, 2.0, 5.0])) for b in range(1, 5)}
    moves = []
    for i in range(draw(st.integers(1, 12))):
        source = draw(st.integers(1, 4))
        destination = draw(st.integers(1, 4).filter(lambda b, s=source: b != s))
        moves.append(Move(i, float(draw(st.integers(1, 50))),
                          budgets=(BudgetKey("leader", source, True), BudgetKey("follower", destination, True))))
    return moves, {budget: rates[budget.broker] for m in moves for budget in m.budgets}


def at_most(n):
    """The simplest admission: the first pending moves, up to n copying."""
    return lambda running, waiting: [m.key for m in waiting][:max(0, n - len(running))]


@settings(max_examples=100, deadline=None)
@given(plan_moves(), st.integers(1, 6))
def test_a_plan_never_finishes_before_its_busiest_budget_could_carry_its_bytes(scenario, limit):
    moves, rates = scenario
    finish_s = simulate_admitted([], moves, at_most(limit), rates, 10.0)
    busiest = max(sum(m.remaining for m in moves if budget in m.budgets) / rate for budget, rate in rates.items())
    assert finish_s >= 10.0 + busiest - 1e-6


@settings(max_examples=100, deadline=None)
@given(plan_moves())
def test_with_no_limit_binding_a_plan_finishes_with_its_last_move(scenario):
    """One model: the plan's ETA of moves all started is the moves' own last finish."""
    moves, rates = scenario
    assert simulate_admitted([], moves, at_most(len(moves)), rates, 0.0) == \
        pytest.approx(simulate(moves, rates, 0.0).last_finish_s())


@settings(max_examples=100, deadline=None)
@given(plan_moves())
def test_one_at_a_time_a_plan_takes_the_sum_of_its_moves(scenario):
    moves, rates = scenario
    alone = sum(m.remaining / min(rates[b] for b in m.budgets) for m in moves)
    assert simulate_admitted([], moves, at_most(1), rates, 0.0) == pytest.approx(alone)


# More allowance is NOT always sooner under equal shares (hypothesis found it; a list-scheduling anomaly):
# with limit 2 moves 0 and 1 start, with limit 4 move 3 also takes half of broker 2's follower budget from
# move 0, which then finishes later than the whole plan did with limit 2.
@pytest.mark.parametrize("limit, finish_s", [(2, 3.0), (4, 3.5)], ids=["limit-2", "limit-4"])
def test_more_allowance_can_finish_later(limit, finish_s):
    sizes = [(3, 2, 2), (1, 3, 1), (1, 3, 1), (1, 2, 1)]  # (source, destination, bytes) at 1 byte/s everywhere
    moves = [Move(i, float(n), budgets=(BudgetKey("leader", s, True), BudgetKey("follower", d, True)))
             for i, (s, d, n) in enumerate(sizes)]
    rates = {b: 1.0 for m in moves for b in m.budgets}
    assert simulate_admitted([], moves, at_most(limit), rates, 0.0) == pytest.approx(finish_s)


def test_a_plan_whose_pending_moves_can_never_start_has_no_eta():
    move = Move("a", 1.0, budgets=(BudgetKey("follower", 1, True),))
    assert simulate_admitted([], [move], lambda running, waiting: [], {move.budgets[0]: 1.0}, 0.0) is None
    assert simulate_admitted([], [], at_most(1), {}, 5.0) == 5.0


def test_a_plan_finishes_with_its_own_moves_not_with_others_on_other_budgets():
    other = Move("other", 100.0, budgets=(BudgetKey("follower", 9, True),))
    mine = Move("mine", 2.0, budgets=(BudgetKey("follower", 1, True),))
    rates = {other.budgets[0]: 1.0, mine.budgets[0]: 1.0}
    assert simulate_admitted([other], [mine], at_most(2), rates, 0.0, keys={"mine"}) == pytest.approx(2.0)
    assert simulate_admitted([other], [mine], at_most(2), rates, 0.0) == pytest.approx(100.0)
