"""streaming.core.classify: every rule alone, then every precedence between rules, as one table (the rows as the
columns the rules read: streaming.vocabulary.columns)."""

import pytest

from streaming.core.classify import (classify, is_broker_offline, is_cancelled, is_completed, is_falling_behind,
                                     is_in_sync, is_pending, is_stalled)
from streaming.vocabulary.columns import from_rows, python_values
from streaming.vocabulary.replica_row import STATE


def states(rows, *settings):
    """The state name of each row dict, classified together."""
    return python_values(classify(from_rows(rows), *settings), STATE)

STALL_AFTER_S = 600.0
RATE_WINDOW_S = 60.0

# A replica copying normally: every rule false. Cases override some facts.
BASE = {"numerator": 500, "denominator": 1000, "in_isr": False, "finished": False, "in_replica_set": True,
        "destination_alive": True, "leader_alive": True, "destination_unobserved": False, "leader_unobserved": False,
        "stalled_seconds": 0.0, "copy_rate": 100.0,
        "leader_rate": 10.0, "observed_seconds": 120.0, "still_reassigning": False, "being_removed": False,
        "was_in_sync": False}

CASES = [
    # id, facts that differ from BASE, expected state
    ("copying", {}, "COPYING"),
    ("pending-zero-bytes", {"numerator": 0}, "PENDING"),
    ("unknown-bytes-are-not-pending", {"numerator": None}, "COPYING"),
    ("in-sync", {"in_isr": True}, "IN_SYNC"),
    ("completed", {"finished": True, "in_replica_set": True}, "COMPLETED"),
    ("cancelled", {"finished": True, "in_replica_set": False}, "CANCELLED"),
    ("target-changed-broker-being-removed", {"finished": True, "in_replica_set": True, "still_reassigning": True,
                                             "being_removed": True, "in_isr": False}, "CANCELLED"),
    ("target-changed-removed-after-joining", {"finished": True, "in_replica_set": True, "still_reassigning": True,
                                              "being_removed": True, "in_isr": True}, "CANCELLED"),
    ("made-plain-replica-before-catching-up", {"finished": True, "in_replica_set": True, "still_reassigning": True,
                                               "in_isr": False}, "CANCELLED"),
    ("made-plain-replica-in-isr", {"finished": True, "in_replica_set": True, "still_reassigning": True,
                                   "in_isr": True}, "COMPLETED"),
    ("made-plain-replica-was-in-sync", {"finished": True, "in_replica_set": True, "still_reassigning": True,
                                        "was_in_sync": True}, "COMPLETED"),
    ("finished-out-of-isr-after-completing", {"finished": True, "in_replica_set": True, "in_isr": False},
     "COMPLETED"),
    ("destination-offline", {"destination_alive": False}, "BROKER_OFFLINE"),
    ("leader-offline", {"leader_alive": False}, "BROKER_OFFLINE"),
    ("destination-unobserved", {"destination_alive": False, "destination_unobserved": True}, "UNOBSERVED"),
    ("leader-unobserved", {"leader_alive": False, "leader_unobserved": True}, "UNOBSERVED"),
    ("stalled-at-threshold", {"stalled_seconds": STALL_AFTER_S}, "STALLED"),
    ("not-stalled-yet", {"stalled_seconds": STALL_AFTER_S - 1}, "COPYING"),
    ("falling-behind-equal-rates", {"copy_rate": 10.0, "leader_rate": 10.0}, "FALLING_BEHIND"),
    ("falling-behind-leader-faster", {"copy_rate": 5.0, "leader_rate": 10.0}, "FALLING_BEHIND"),
    ("not-falling-behind-short-window", {"copy_rate": 5.0, "leader_rate": 10.0, "observed_seconds": 30.0}, "COPYING"),
    ("not-falling-behind-idle-leader", {"copy_rate": 0.0, "leader_rate": 0.0}, "COPYING"),
    ("no-history-no-rates", {"copy_rate": None, "leader_rate": None, "stalled_seconds": None}, "COPYING"),
    # Precedence: the first rule in classify() wins.
    ("completed-beats-offline", {"finished": True, "destination_alive": False}, "COMPLETED"),
    ("cancelled-beats-offline", {"finished": True, "in_replica_set": False, "leader_alive": False}, "CANCELLED"),
    ("offline-beats-in-sync", {"in_isr": True, "leader_alive": False}, "BROKER_OFFLINE"),
    ("offline-beats-stalled", {"destination_alive": False, "stalled_seconds": 9999.0}, "BROKER_OFFLINE"),
    ("offline-leader-beats-unobserved-destination", {"destination_alive": False, "destination_unobserved": True,
                                                     "leader_alive": False}, "BROKER_OFFLINE"),
    ("unobserved-beats-in-sync", {"in_isr": True, "destination_alive": False, "destination_unobserved": True},
     "UNOBSERVED"),
    ("unobserved-beats-stalled", {"leader_alive": False, "leader_unobserved": True, "stalled_seconds": 9999.0},
     "UNOBSERVED"),
    ("in-sync-beats-stalled", {"in_isr": True, "stalled_seconds": 9999.0}, "IN_SYNC"),
    ("in-sync-beats-pending", {"in_isr": True, "numerator": 0}, "IN_SYNC"),
    ("stalled-beats-falling-behind", {"stalled_seconds": 9999.0, "copy_rate": 0.0}, "STALLED"),
    ("stalled-beats-pending", {"stalled_seconds": 9999.0, "numerator": 0}, "STALLED"),
    ("falling-behind-beats-pending", {"numerator": 0, "copy_rate": 0.0}, "FALLING_BEHIND"),
]


# Byte counts are ints or None in the core's rows; history columns are floats or None for unknown.
def row(overrides):
    return {**BASE, **overrides}


@pytest.mark.parametrize("overrides, expected", [pytest.param(o, e, id=i) for i, o, e in CASES])
def test_classify(overrides, expected):
    assert states([row(overrides)], STALL_AFTER_S, RATE_WINDOW_S) == [expected]


def test_the_whole_table_at_once_is_each_row_alone():
    rows = [row(o) for _, o, _ in CASES]
    assert states(rows, STALL_AFTER_S, RATE_WINDOW_S) == [e for _, _, e in CASES]


def test_one_shot_rows_without_history_columns():
    rows = [{"numerator": 0, "in_isr": False, "destination_alive": True, "leader_alive": True},
            {"numerator": 5, "in_isr": False, "destination_alive": True, "leader_alive": True},
            {"numerator": 5, "in_isr": True, "destination_alive": True, "leader_alive": True}]
    assert states(rows) == ["PENDING", "COPYING", "IN_SYNC"]


RULES = [
    # id, predicate, facts that make it true
    ("completed", is_completed, {"finished": True}),
    ("cancelled", is_cancelled, {"finished": True, "in_replica_set": False}),
    ("broker-offline", is_broker_offline, {"destination_alive": False}),
    ("in-sync", is_in_sync, {"in_isr": True}),
    ("stalled", lambda r: is_stalled(r, STALL_AFTER_S), {"stalled_seconds": STALL_AFTER_S}),
    ("falling-behind", lambda r: is_falling_behind(r, RATE_WINDOW_S), {"copy_rate": 1.0}),
    ("pending", is_pending, {"numerator": 0}),
]


@pytest.mark.parametrize("predicate, overrides", [pytest.param(p, o, id=i) for i, p, o in RULES])
def test_each_rule_alone(predicate, overrides):
    assert predicate(from_rows([row(overrides), row({})])).tolist() == [True, False]
