"""`--throttle auto`'s decision (streaming.control.throttles.autothrottle): one table of cases, one row per rule and guard
against flapping, then properties over generated signals, rates, bounds and clocks. Pure."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.control.throttles import autothrottle as at
from streaming.control.throttles.autothrottle import BrokerSignals, Bounds, Window

MB = 1_000_000
BOUNDS = Bounds(floor=1 * MB, ceiling=100 * MB, min_interval_s=30)
NIGHT = Bounds(floor=1 * MB, ceiling=100 * MB, schedule=(Window(22 * 60, 6 * 60, 20 * MB),), min_interval_s=30)
NOON, MIDNIGHT = 12 * 3600.0, 86400.0 * 3  # clock seconds (UTC)
FB, BINDS = BrokerSignals(falling_behind=True), BrokerSignals(binds=True)
STRESS = "partition t-3 (not moving) is out of its ISR: 2 of 3 replicas"


def brief(changes):
    return {b: (c.old, c.new, c.signal) for b, c in changes.items()}


CASES = [
    pytest.param({1: 10 * MB}, {}, None, BOUNDS, NOON, {}, {}, id="nothing-to-do-stays"),
    pytest.param({1: 10 * MB}, {1: BINDS}, None, BOUNDS, NOON, {}, {1: (10 * MB, 19_900_000, at.BINDS)},
                 id="binds-raises-additively-by-a-tenth-of-the-span"),
    pytest.param({1: 90_500_000}, {1: BINDS}, None, BOUNDS, NOON, {}, {1: (90_500_000, 100 * MB, at.BINDS)},
                 id="raise-stops-at-the-ceiling"),
    pytest.param({1: 100 * MB}, {1: FB}, None, BOUNDS, NOON, {}, {}, id="at-the-ceiling-nothing-more"),
    pytest.param({1: 10 * MB}, {1: FB}, None, BOUNDS, NOON, {}, {1: (10 * MB, 20 * MB, at.FALLING_BEHIND)},
                 id="falling-behind-doubles-toward-the-ceiling"),
    pytest.param({1: 80 * MB}, {1: FB}, None, BOUNDS, NOON, {}, {1: (80 * MB, 100 * MB, at.FALLING_BEHIND)},
                 id="falling-behind-capped-by-the-ceiling"),
    pytest.param({1: 10 * MB, 2: 10 * MB}, {1: FB, 2: BINDS}, STRESS, BOUNDS, NOON, {},
                 {1: (10 * MB, 5 * MB, at.STRESS), 2: (10 * MB, 5 * MB, at.STRESS)}, id="stress-cuts-every-broker-in-half"),
    pytest.param({1: 1_500_000}, {}, STRESS, BOUNDS, NOON, {}, {1: (1_500_000, MB, at.STRESS)},
                 id="stress-cut-stops-at-the-floor"),
    pytest.param({1: MB}, {}, STRESS, BOUNDS, NOON, {}, {}, id="stress-at-the-floor-stays"),
    pytest.param({1: 500_000}, {}, STRESS, BOUNDS, NOON, {}, {}, id="stress-never-raises-even-to-the-floor"),
    pytest.param({1: 500_000}, {}, None, BOUNDS, NOON, {}, {1: (500_000, MB, at.FLOOR)}, id="below-the-floor-up-to-it"),
    pytest.param({1: 50 * MB}, {}, None, NIGHT, MIDNIGHT, {}, {1: (50 * MB, 20 * MB, at.CEILING)},
                 id="schedule-window-caps-at-night"),
    pytest.param({1: 50 * MB}, {}, None, NIGHT, MIDNIGHT + 7 * 3600, {}, {}, id="schedule-window-over-by-day"),
    pytest.param({1: 10 * MB}, {1: FB}, None, NIGHT, MIDNIGHT + 23 * 3600, {}, {1: (10 * MB, 20 * MB, at.FALLING_BEHIND)},
                 id="schedule-window-wraps-past-midnight"),
    pytest.param({1: 101 * MB}, {}, None, BOUNDS, NOON, {1: NOON - 1}, {1: (101 * MB, 100 * MB, at.CEILING)},
                 id="bounds-hold-at-once-even-just-after-a-change"),
    pytest.param({1: 10 * MB}, {1: FB}, None, BOUNDS, NOON, {1: NOON - 29}, {}, id="not-twice-within-the-interval"),
    pytest.param({1: 10 * MB}, {1: FB}, STRESS, BOUNDS, NOON, {1: NOON - 29}, {}, id="stress-waits-for-the-interval-too"),
    pytest.param({1: 10 * MB}, {1: FB}, None, BOUNDS, NOON, {1: NOON - 30}, {1: (10 * MB, 20 * MB, at.FALLING_BEHIND)},
                 id="after-the-interval-again"),
    pytest.param({1: 99_500_000}, {1: BINDS}, None, BOUNDS, NOON, {}, {}, id="change-below-the-hysteresis-not-made"),
]


@pytest.mark.parametrize("rates, signals, stress, bounds, now_s, last, expected", CASES)
def test_decide(rates, signals, stress, bounds, now_s, last, expected):
    assert brief(at.decide(rates, signals, stress, bounds, now_s, last)) == expected


@st.composite
def situations(draw):
    floor = draw(st.integers(1, 50 * MB))
    ceiling = draw(st.integers(floor, 200 * MB))
    windows = tuple(Window(draw(st.integers(0, 1439)), draw(st.integers(0, 1439)), draw(st.integers(floor, ceiling)))
                    for _ in range(draw(st.integers(0, 2))))
    bounds = Bounds(floor, ceiling, windows, draw(st.sampled_from([0.0, 10.0, 30.0])))
    brokers = draw(st.lists(st.integers(1, 6), unique=True, min_size=1, max_size=4))
    rates = {b: draw(st.integers(1, 300 * MB)) for b in brokers}
    signals = {b: BrokerSignals(draw(st.booleans()), draw(st.booleans())) for b in brokers}
    stress = draw(st.sampled_from([None, None, STRESS]))
    now_s = draw(st.floats(0, 10 * 86400, allow_nan=False))
    last = {b: now_s - draw(st.floats(0, 60, allow_nan=False)) for b in brokers if draw(st.booleans())}
    return rates, signals, stress, bounds, now_s, last


PROPERTY = settings(max_examples=120, deadline=None)


@PROPERTY
@given(situations())
def test_bounds_never_exceeded(situation):
    rates, signals, stress, bounds, now_s, last = situation
    for broker, change in at.decide(*situation).items():
        assert change.new <= bounds.ceiling_at(now_s)
        assert change.new >= bounds.floor or (stress and change.new <= change.old)


@PROPERTY
@given(situations())
def test_no_flapping_within_bounds(situation):
    rates, signals, stress, bounds, now_s, last = situation
    ceiling = bounds.ceiling_at(now_s)
    for broker, change in at.decide(*situation).items():
        if bounds.floor <= change.old <= ceiling:
            assert abs(change.new - change.old) >= at.HYSTERESIS * change.old
            assert broker not in last or now_s - last[broker] >= bounds.min_interval_s


@PROPERTY
@given(situations())
def test_stress_never_raises_a_rate(situation):
    rates, signals, stress, bounds, now_s, last = situation
    for change in at.decide(rates, signals, STRESS, bounds, now_s, last).values():
        assert change.new < change.old and change.signal in (at.STRESS, at.CEILING)


@PROPERTY
@given(situations())
def test_only_owned_brokers_change(situation):
    rates, signals, stress, bounds, now_s, last = situation
    assert set(at.decide(*situation)) <= set(rates)
