"""A plan's progress row, record and gauges (streaming.control.plans.report, sinks.records, sinks.prometheus) on
plain data: bytes from the step's sizes and the batch's rows, the ETA from the one budget model with the
pending partitions admitted under the plan's limits."""

import json
from dataclasses import replace

import jsonschema
import pytest

from sinks import metric_names as m
from streaming.control.plans.step import Step
from streaming.control.ownership.plans import Plan
from streaming.control.plans.scheduler import Limits
from sinks.prometheus import Picture, samples
from sinks.records import SCHEMA_PATH, plan_key, plan_record
from streaming.control.ownership.records import Move
from streaming.control.plans.advancer import PlanStatus
from streaming.control.plans.report import plan_row
from streaming.vocabulary.columns import KINDS, from_rows
from streaming.vocabulary.states import PlanState

ID = "20261123T180000.000Z-abcd"
NOW_MS = 100_000
MB = 1_000_000  # rates far above the throttle floor (one fetch per quota window, ~95 kB/s) that the model applies


def status(states, throttle=MB, limits=Limits(2), sizes=MB):
    """Four partitions of topic t, each 1 MB moving from broker 1 to broker 2."""
    plan = Plan(ID, PlanState.RUNNING, 0, 0, limits, tuple(Move("t", p, (1,), (2,)) for p in range(4)), throttle=throttle)
    seen = Step(plan, {}, states={("t", p): s for p, s in enumerate(states)}, sizes={("t", p): sizes for p in range(4)})
    return PlanStatus(ID, PlanState.RUNNING, plan=plan, seen=seen, advanced_by="job h:1")


def copying(partition, copied, rate=None):
    return {"topic": "t", "partition": partition, "broker": 2, "intra_broker": False, "leader": 1, "state": "COPYING",
            "in_isr": False, "numerator": copied, "denominator": MB, "leader_rate": 0.0, "copy_rate": rate}


def batch(rows):
    """A batch's replica rows, as the job and `progress` hold them: columns."""
    return from_rows(rows, {name: KINDS[name] for name in copying(0, 0)})


THROTTLED_0 = {"topic_throttles": [{"topic": "t", "kind": "leader", "value": "0:1"},
                                   {"topic": "t", "kind": "follower", "value": "0:2"}],
               "broker_throttles": [{"broker": 1, "kind": "leader", "rate": MB},
                                    {"broker": 2, "kind": "follower", "rate": MB}],
               "reassignments": [{"topic": "t", "partition": 0, "replicas": [2, 1], "adding": [2], "removing": [1]}]}


@pytest.mark.parametrize("states, rows, tables, throttle, remaining, eta", [
    # two at a time share broker 1's and 2's 1 MB/s: 0.5 MB/s each, two pairs of 2 s
    (["pending"] * 4, [], {}, MB, 4 * MB, 4.0),
    # partition 0 half done; 1 joins it, then 2 when 0 finishes (1 s), 3 when 1 does (2 s); 3 alone from 3 s
    (["in_flight", "pending", "pending", "pending"], [copying(0, MB // 2, 4e5)], THROTTLED_0, MB, 3.5 * MB, 3.5),
    (["done", "done", "done", "in_flight"], [], {}, MB, MB, None),  # no row yet (submitted after the poll): unknown
    (["pending"] * 4, [], {}, None, 4 * MB, None),  # unthrottled and nothing copies into broker 2: unknown
    (["done", "done", "left_alone", "cancelled"], [], {}, MB, 0, 0.0),  # finished: its last record
    # the batch polled before partition 0's end that the plan's step read: the plan's view is the newer
    (["done", "done", "done", "done"], [copying(0, MB - 4e5, 1e6)], THROTTLED_0, MB, 0, 0.0),
    (["failed", "pending", "pending", "pending"], [], {}, MB, 3 * MB, 3.0),  # a failed one copies nothing, holds nothing
], ids=["all-pending", "one-half-done", "last-without-row", "unthrottled-unknown", "finished", "done-after-the-poll",
        "one-failed"])
def test_plan_row(states, rows, tables, throttle, remaining, eta):
    row = plan_row(status(states, throttle), batch(rows), tables, NOW_MS)
    assert (row["bytes_total"], row["bytes_remaining"]) == (4 * MB, remaining)
    assert row["eta_seconds"] == (None if eta is None else pytest.approx(eta))
    assert row["partitions"]["pending"] == states.count("pending") and row["partitions_total"] == 4


@pytest.mark.parametrize("states, eta", [(["pending"] * 4, None), (["done", "done", "done", "done"], 0.0)],
                         ids=["pending-between-dirs", "finished"])
def test_a_plan_moving_between_log_dirs_has_no_eta_until_those_moves_end(states, eta):
    plan_status = status(states)
    plan = plan_status.plan
    moves = (replace(plan.moves[0], target=(1,), log_dirs=("/b",)),) + plan.moves[1:]
    plan_status = replace(plan_status, plan=replace(plan, moves=moves))
    assert plan_row(plan_status, batch([]), {}, NOW_MS)["eta_seconds"] == eta


def test_a_plan_not_read_yet_has_no_row():
    assert plan_row(PlanStatus(ID, PlanState.RUNNING), batch([]), {}, NOW_MS) is None


def test_the_plan_record_follows_the_schema_and_the_gauges_name_the_plan():
    row = plan_row(status(["in_flight", "pending", "failed", "left_alone"]), batch([copying(0, MB // 2, 4e5)]),
                   THROTTLED_0, NOW_MS)
    value = plan_record(row, NOW_MS, 7, "c1", cluster="a")
    jsonschema.validate(value, json.loads(SCHEMA_PATH.read_text()))
    assert plan_key(ID) == f"plan:{ID}" and value["rate_bytes_per_sec"] == 4e5
    gauges = {(metric.name, values): v for metric, _, values, v in samples(Picture(plans=(row,)))}
    assert gauges[(m.PLAN_PARTITIONS.name, (ID, "left_alone"))] == 1.0
    assert gauges[(m.PLAN_PARTITIONS.name, (ID, "failed"))] == 1.0 and value["partitions"]["failed"] == 1
    assert gauges[(m.PLAN_REMAINING_BYTES.name, (ID,))] == 1.5 * MB
    assert (m.PLAN_ETA.name, (ID,)) in gauges
