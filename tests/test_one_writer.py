"""One writer, by type: the door a module holds (streaming.cluster.admin.ClusterReader) reads; a ClusterWriter
(every change to the cluster, the project's own topics created and written included) is made only with the write
grant (streaming.cluster.grant), and only streaming.control.applier imports the grant (as pyproject.toml's
contract "One writer" says for import-linter). The ledger's writes take the writer as an argument, so only the
applier makes them; the applier is made only by its factory; the job's Spark side never imports what acts.
Read from the source and from the types, so a new writing method or a new caller fails here whatever it is named."""

import ast
import inspect
from pathlib import Path

import pytest

from streaming.cluster.admin import ClusterReader, ClusterWriter, KafkaClusterAdmin
from streaming.cluster.grant import WRITE_GRANT
from streaming.cluster.writes import KafkaClusterWriter
from streaming.control.applier import Applier, applier_of
from streaming.control.ownership.records import Ownership
from streaming.control.ownership.store import KafkaLedger, Ledger
from streaming.vocabulary.states import OwnershipState
from tests.fake_cluster import FakeCluster

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("streaming", "sinks", "dashboards")
GRANT = "streaming.cluster.grant"
APPLIER = "streaming/control/applier.py"
WRITER = "streaming/cluster/writes.py"
# Who may name the grant: the applier (to open the writer), the writer (to check it) and the grant itself.
GRANT_HOLDERS = {APPLIER, WRITER, "streaming/cluster/grant.py"}
# What Kafka's client libraries change the cluster with (kafka-python's KafkaAdminClient and its request builders,
# confluent-kafka's AdminClient and Producer): of the door's modules, the only ones that may import those libraries
# (pyproject.toml: "Only the cluster door talks to Kafka"), only the writer may call them.
KAFKA_WRITES = frozenset({
    "alter_configs", "incremental_alter_configs", "_alter_configs_request", "alter_partition_reassignments",
    "alter_replica_log_dirs", "create_topics", "delete_topics", "create_partitions", "create_acls", "delete_acls",
    "delete_records", "Producer", "NewTopic", "AlterConfigOp"})


def modules():
    return sorted(str(path.relative_to(ROOT)) for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def grant_uses(source):
    """(line, what) of every way `source` reaches the write grant: an import of its module (by any spelling), its
    module's name as a string (importlib), or the grant's own names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name == GRANT]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names
                      if node.module == GRANT or f"{node.module}.{alias.name}" == GRANT]
        elif isinstance(node, ast.Constant) and node.value == GRANT:
            found.append((node.lineno, node.value))
        elif isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) or node.attr) in (
                "WRITE_GRANT", "WriteGrant"):
            found.append((node.lineno, getattr(node, "id", None) or node.attr))
    return found


def constructions(source, type_name):
    """(line) of every call of `type_name` (its constructor), however it was imported."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) == type_name or getattr(node.func, "attr", None) == type_name)]


def kafka_writes(source):
    return sorted({(node.lineno, name) for node in ast.walk(ast.parse(source))
                   for name in [getattr(node, "id", None) or getattr(node, "attr", None) or
                                (node.name if isinstance(node, ast.alias) else None)]
                   if name in KAFKA_WRITES})


def members(protocol):
    return {name for name in vars(protocol) if not name.startswith("_")} | set(protocol.__annotations__)


@pytest.mark.parametrize("module", modules())
def test_only_the_applier_reaches_the_write_grant(module):
    if module in GRANT_HOLDERS:
        return
    uses = grant_uses((ROOT / module).read_text())
    assert not uses, f"{module} reaches the write grant (only {APPLIER} may): {uses}"


@pytest.mark.parametrize("module", modules())
def test_only_the_applier_makes_an_applier_and_only_the_door_its_writer(module):
    source = (ROOT / module).read_text()
    if module != APPLIER:
        assert not constructions(source, "Applier"), f"{module} makes an Applier (only {APPLIER}'s applier_of may)"
    if module != "streaming/cluster/admin.py":
        assert not constructions(source, "KafkaClusterWriter"), f"{module} makes a writer"


@pytest.mark.parametrize("module", modules())
def test_nobody_takes_the_writer_out_of_the_applier(module):
    """The applier and its Publisher keep their writer as `_writer`; no other module reads that attribute."""
    if module == APPLIER:
        return
    taken = [node.lineno for node in ast.walk(ast.parse((ROOT / module).read_text()))
             if isinstance(node, ast.Attribute) and node.attr == "_writer"]
    assert not taken, f"{module} takes the applier's writer: lines {taken}"


@pytest.mark.parametrize("module", [m for m in modules() if m.startswith("streaming/cluster/")])
def test_only_the_writer_calls_kafkas_writes(module):
    if module == WRITER:
        return
    assert not kafka_writes((ROOT / module).read_text()), f"{module} changes the cluster itself (only {WRITER} may)"


def test_the_reader_has_no_write_and_the_writer_every_one():
    """By type: whatever ClusterWriter names, neither the reader's protocol nor the door's class has it, and the
    writer implements all of it (a new write is added to the writer, or it fails here)."""
    writes = members(ClusterWriter)
    assert writes >= {"alter_throttles", "start_reassignments", "ensure_topic", "produce"}
    assert not writes & members(ClusterReader)
    assert not {name for name in writes if hasattr(KafkaClusterAdmin, name)}
    assert all(callable(getattr(KafkaClusterWriter, name, None)) for name in writes)


@pytest.mark.parametrize("grant", [None, object(), "WRITE_GRANT"], ids=["none", "another-object", "its-name"])
def test_no_writer_without_the_grant(grant):
    with pytest.raises(PermissionError):
        KafkaClusterWriter(None, grant)
    with pytest.raises(PermissionError):
        FakeCluster().writer(grant)
    assert isinstance(KafkaClusterWriter(None, WRITE_GRANT), KafkaClusterWriter)


def test_the_ledger_writes_only_through_a_writer():
    """Every write of the Ledger protocol takes the writer; the Kafka ledger holds none of its own."""
    writes = {name for name in members(Ledger) if "writer" in inspect.signature(getattr(Ledger, name)).parameters}
    assert writes == {"put", "put_plan", "put_lease"}
    fake = FakeCluster()
    ledger = KafkaLedger(fake, "own")
    record = Ownership("20261123T180001.000Z-0001", OwnershipState.DONE, 1, 1)
    with pytest.raises(TypeError):
        ledger.put(record)  # pylint: disable=no-value-for-parameter
    applier_of(fake, ledger).record(record)
    assert KafkaLedger(fake, "own").records() == [record]


def test_the_applier_holds_the_writer_it_was_made_with():
    fake = FakeCluster()
    applier = applier_of(fake, None)
    assert isinstance(applier, Applier) and not hasattr(applier, "writer")
    applier.start_moves({("t", 0): [2]})
    assert fake.starts == [{("t", 0): [2]}]


@pytest.mark.parametrize("module", [m for m in modules() if m.startswith("streaming/spark/")])
def test_the_spark_side_of_the_job_never_acts(module):
    """The batch computes and hands its findings over (streaming.control.findings); it holds no writer. The driver,
    run's wiring, gets the applier's factory (the job's topics, the progress topic's publisher) and nothing else."""
    names = set()
    for node in ast.walk(ast.parse((ROOT / module).read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    applier = {n for n in names if n.startswith("streaming.control.applier")}
    assert applier <= ({"streaming.control.applier", "streaming.control.applier.applier_of"}
                       if module == "streaming/spark/driver.py" else set()), module
    assert not {n for n in names if n.startswith(("streaming.control.sweep", "streaming.control.submission",
                                                   "streaming.control.plans.step"))}, module


@pytest.mark.parametrize("source, found", [
    ("from streaming.cluster.grant import WRITE_GRANT", True),
    ("from streaming.cluster import grant", True),
    ("import streaming.cluster.grant", True),
    ("importlib.import_module('streaming.cluster.grant')", True),
    ("door.writer(grants.WRITE_GRANT)", True),
    ("from streaming.cluster import admin\nadmin.KafkaClusterAdmin(b).describe_cluster()", False),
], ids=["from-module", "from-package", "import", "importlib", "by-name", "a-reader"])
def test_grant_uses_finds_what_it_looks_for(source, found):
    assert bool(grant_uses(source)) == found


@pytest.mark.parametrize("source, found", [
    ("kafka.alter_partition_reassignments(chunk)", True),
    ("from confluent_kafka import Producer", True),
    ("admin.create_topics([topic])", True),
    ("kafka.describe_configs(resources)", False),
], ids=["reassign", "producer", "create-topics", "a-read"])
def test_kafka_writes_finds_what_it_looks_for(source, found):
    assert bool(kafka_writes(source)) == found
