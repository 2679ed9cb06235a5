"""The fleet job's pure parts: which clusters a trigger polls (streaming.spark.fleet_source), and which clusters a
change of the fleet file stops and starts (streaming.spark.fleet_driver.changes)."""

import json

import pytest

from streaming.vocabulary.defaults import RECORD_ROW_BUDGET

from streaming.control.gate import Decision
from streaming.spark.fleet_source import CLUSTERS, TARGET, fleet_offset, fleet_partitions, roster_of, roster_option
from streaming.spark.fleet_driver import Member, changes
from streaming.spark.driver import JobConfig
from streaming.spark.source import UNREPORTED, Target

EU, US = Target("eu", "eu:9092"), Target("us", "us:9092", "/etc/us.properties", 5.0)
WANTED, IDLE = Decision(wanted=True), Decision(wanted=False)
MOVE = {"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []}
NOW = 1_000.0


def at(**polls):
    """A fleet offset with each named cluster at its poll number."""
    return {CLUSTERS: {name: {"poll": poll, TARGET: {"eu": EU, "us": US}[name].options()} for name, poll in polls.items()}}


OFFSETS = [
    # id, start, roster [(target, decision, interval s)], last polled {name: Unix s}, the clusters advanced (None: no batch)
    ("first-trigger-polls-all", {CLUSTERS: {}}, [(EU, WANTED, 2), (US, WANTED, 2)], {}, {"eu": 1, "us": 1}),
    ("idle-cluster-stays", at(eu=4, us=7), [(EU, WANTED, 2), (US, IDLE, 2)], {}, {"eu": 5, "us": 7}),
    ("all-idle-no-batch", at(eu=4, us=7), [(EU, IDLE, 2), (US, IDLE, 2)], {}, None),
    ("longer-interval-waits", at(eu=4, us=7), [(EU, WANTED, 2), (US, WANTED, 10)], {"us": NOW - 5}, {"eu": 5, "us": 7}),
    ("longer-interval-due", at(eu=4, us=7), [(EU, WANTED, 2), (US, WANTED, 10)], {"us": NOW - 9.5}, {"eu": 5, "us": 8}),
    ("cluster-taken-out-dropped", at(eu=4, us=7), [(EU, WANTED, 2)], {}, {"eu": 5}),
    ("cluster-added-starts-at-one", at(eu=4), [(EU, IDLE, 2), (US, WANTED, 2)], {}, {"eu": 4, "us": 1}),
]


@pytest.mark.parametrize("start, roster, last, advanced", [pytest.param(*case[1:], id=case[0]) for case in OFFSETS])
def test_a_trigger_polls_the_clusters_that_want_a_batch_at_their_own_interval(start, roster, last, advanced):
    end = fleet_offset(json.loads(json.dumps(start)), roster, NOW, dict(last))
    if advanced is None:
        assert end == start
        return
    assert {name: offset["poll"] for name, offset in end[CLUSTERS].items()} == advanced
    polled = {p.target.name: p.poll_id for p in fleet_partitions(start, json.loads(json.dumps(end)))}
    before = {name: offset["poll"] for name, offset in start[CLUSTERS].items()}
    assert polled == {name: poll for name, poll in advanced.items() if poll > before.get(name, 0)}


def test_a_cluster_s_partition_carries_its_target_and_its_controller_s_handover():
    end = fleet_offset(at(eu=1), [(US, Decision(wanted=True, unreported=(MOVE,)), 2), (EU, IDLE, 2)], NOW, {})
    [partition] = fleet_partitions(at(eu=1), json.loads(json.dumps(end)))
    assert (partition.target, partition.poll_id, partition.unreported) == (US, 1, (MOVE,))
    assert end[CLUSTERS]["us"][UNREPORTED] == [MOVE]


def test_the_roster_option_reads_back():
    members = [(EU, "/tmp/gates/eu.json", 2.0), (US, "/tmp/gates/us.json", 10.0)]
    assert roster_of(roster_option(members)) == members


def member(name, trigger_s=2.0):
    return Member(JobConfig(bootstrap=f"{name}:9092", cluster_name=name, trigger_interval_s=trigger_s), (("env", "x"),))


CHANGES = [
    # id, running, wanted, stopped, started
    ("nothing", [member("a")], [member("a")], [], []),
    ("added", [member("a")], [member("a"), member("b")], [], ["b"]),
    ("removed", [member("a"), member("b")], [member("b")], ["a"], []),
    ("changed-restarts", [member("a")], [member("a", trigger_s=5.0)], ["a"], ["a"]),
]


@pytest.mark.parametrize("running, wanted, stopped, started", [pytest.param(*case[1:], id=case[0]) for case in CHANGES])
def test_a_change_of_the_file_stops_and_starts_only_the_clusters_it_changed(running, wanted, stopped, started):
    named = lambda members: {m.config.cluster_label: m for m in members}  # noqa: E731
    out, into = changes(named(running), named(wanted))
    assert (out, [m.config.cluster_label for m in into]) == (stopped, started)


class Recorded:
    def __init__(self, fails=False):
        self.seen, self.fails = [], fails

    def handle(self, batch, batch_id, started, computed, record_budget):
        self.seen.append((batch_id, batch["payload"].to_pylist(), record_budget))
        if self.fails:
            raise OSError("spool full")


class Frame:
    def __init__(self, table):
        self.table = table

    def toArrow(self):
        return self.table


def test_each_cluster_s_rows_go_to_its_handler_with_its_share_of_the_records_and_one_failure_keeps_no_other_from_its_rows():
    import pyarrow as pa

    from streaming.spark.job import FleetBatchHandler

    table = pa.table({"cluster": ["eu", "us", "eu", "gone"], "payload": [b"1", b"2", b"3", b"4"]})
    handlers = {"eu": Recorded(fails=True), "us": Recorded()}
    with pytest.raises(OSError):
        FleetBatchHandler(lambda: handlers)(Frame(table), 9)
    # The batch's record budget is one job's, shared by the three clusters it polled (docs/records.md).
    share = RECORD_ROW_BUDGET // 3
    assert {name: h.seen for name, h in handlers.items()} == {"eu": [(9, [b"1", b"3"], share)],
                                                              "us": [(9, [b"2"], share)]}
