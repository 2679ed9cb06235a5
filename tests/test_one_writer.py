"""One writer of cluster state: only streaming.control.applier calls the door's writes of cluster state
(AlterPartitionReassignments, IncrementalAlterConfigs, AlterReplicaLogDirs) or the ledger's writes of the
ownership topic, in the job and in the CLI alike; the job's Spark side never imports the applier (the batch hands
its findings to the controller, which alone acts). Read from the source, so a new caller fails here."""

import ast
from pathlib import Path

import pytest

from streaming.control.applier import CLUSTER_WRITES
from streaming.control.ownership.store import LEDGER_WRITES

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("streaming", "sinks", "dashboards")
WRITER = "streaming/control/applier.py"
# The door defines the writes, the ledger implements its own: they are where the calls end, not callers.
DEFINERS = {"streaming/cluster/writes.py", "streaming/control/ownership/store.py"}
WRITES = frozenset(CLUSTER_WRITES) | frozenset(LEDGER_WRITES)


def modules():
    return sorted(str(path.relative_to(ROOT)) for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def write_calls(source):
    """(line, method) of every call of a method named like one of WRITES."""
    return [(node.lineno, node.func.attr) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES]


def imported(source):
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("module", modules())
def test_only_the_applier_writes_cluster_state(module):
    if module == WRITER or module in DEFINERS:
        return
    calls = write_calls((ROOT / module).read_text())
    assert not calls, f"{module} writes cluster state itself (only {WRITER} may): {calls}"


def test_the_applier_does_write_through_the_door_and_the_ledger():
    """The check above cannot pass by accident: the applier holds every write it names."""
    assert {method for _, method in write_calls((ROOT / WRITER).read_text())} == WRITES


@pytest.mark.parametrize("module", [m for m in modules() if m.startswith("streaming/spark/")])
def test_the_spark_side_of_the_job_never_acts(module):
    """The batch computes and hands its findings over (streaming.control.findings); it holds no writer."""
    names = imported((ROOT / module).read_text())
    assert not {n for n in names if n.startswith("streaming.control.applier")}, module
    assert not {n for n in names if n.startswith(("streaming.control.sweep", "streaming.control.submission",
                                                   "streaming.control.plans.step"))}, module


@pytest.mark.parametrize("source, calls", [
    ("admin.alter_throttles([])", [(1, "alter_throttles")]),
    ("self.ledger.put(record)", [(1, "put")]),
    ("x = store.records()", []),
], ids=["door-write", "ledger-write", "a-read"])
def test_write_calls_finds_what_it_looks_for(source, calls):
    assert write_calls(source) == calls
