"""The bad-input corpus (tests/bad_inputs.py, plus generated documents and property files) through the real
CLI: in-process through `streaming.cli.main` for every case, and a sample of every category through the
installed executable (which also sees what librdkafka or a JVM would write straight to the stderr fd).

For every case: the exit code it owes (2 local input, 3 the cluster), exactly one stderr line with no
control character, no traceback or Java stack, no password echoed, and for cluster cases the cluster's
reassignments, throttle configs and topics identical before and after. A failure lists its problems by
tag (wrong-exit, traceback, java-stack, multi-line, unescaped, secret-echoed, cluster-changed).
"""

import io
import json
import os
import re
import socket
import subprocess
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from streaming.cli import main
from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from streaming.vocabulary.errors import EXIT_BAD_INPUT
from streaming.vocabulary.kafka_limits import INT32_MAX
from tests import aws_environment
from tests.bad_inputs import CASES, NEVER_CREATED, SECRET, UNREACHABLE, Case, Special, doc, entry
from tests.cluster_cli import BROKERS, cancel_everything, clear_broker_throttles
from tests.kafka_fixtures import ROOT, wait_for

EXECUTABLE = ROOT / ".venv" / "bin" / "reassign-monitor"
JAVA_STACK = re.compile(r"^\s+at [\w$.<>]+\(|Py4J|java\.\w+\.|org\.apache\.|^%\d+\|", re.MULTILINE)
UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
TOKEN = re.compile(r"@(FILE|CONFIG|TMP|BUSY|FREE|BOOT|TOPIC|MOVING)")


# --- running a case ----------------------------------------------------------------------------------------

def materialize(spec, path):
    """Make `spec` (tests.bad_inputs: text, bytes or Special) exist at `path`; the path to pass."""
    if isinstance(spec, Special):
        if spec.kind == "path":
            return spec.path
        if spec.kind == "directory":
            path.mkdir()
        elif spec.kind == "sparse":  # a hole: any size without writing it
            with open(path, "wb") as handle:
                handle.truncate(spec.size)
        elif spec.kind == "link-loop":
            os.symlink(path, path)
        elif spec.kind == "dangling-link":
            os.symlink("/nonexistent/target", path)
        return str(path)
    path.write_bytes(spec if isinstance(spec, bytes) else spec.encode("utf-8"))
    return str(path)


def fill(text, tokens):
    for token, value in tokens.items():
        text = text.replace(token, value)
    return text


def argv_of(case, tmp_path, tokens):
    tokens = {**tokens, "@TMP": str(tmp_path)}
    if case.file is not None:
        spec = case.file if not isinstance(case.file, str) else fill(case.file, tokens)
        tokens["@FILE"] = materialize(spec, tmp_path / case.file_name)
    elif "@FILE" in "".join(case.argv):  # a path that must not exist
        tokens["@FILE"] = str(tmp_path / case.file_name)
    if case.config is not None:
        tokens["@CONFIG"] = materialize(case.config, tmp_path / "client.properties")
    argv = [fill(a, tokens) for a in case.argv]
    assert not [a for a in argv if TOKEN.search(a)], f"unfilled token in {argv}"  # else a case fails for the wrong reason
    return argv


def in_process(argv, connect=None):
    """(exit code, stdout, stderr, escaped exception) of `reassign-monitor ARGV` in this process; `connect`:
    the admin door (default: the real one)."""
    out, err = io.StringIO(), io.StringIO()
    escaped = None
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv, connect=connect)
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code
        except BaseException as error:  # noqa: BLE001 - anything else escaping main is a traceback for the operator
            code, escaped = None, error
    return code, out.getvalue(), err.getvalue(), escaped


def problems(case, code, out, err, escaped=None):
    """Every way the result breaks the promise, as tags with the evidence."""
    found = []
    if escaped is not None or "Traceback" in err:
        found.append(f"traceback: {escaped!r}" if escaped is not None else "traceback")
    if JAVA_STACK.search(err):
        found.append("java-stack")
    if code != case.code:
        found.append(f"wrong-exit: {code} (want {case.code})")
    if err.count("\n") != 1 or not err.endswith("\n"):
        found.append(f"multi-line: {err.count(chr(10))} newlines")
    elif any(unicodedata.category(c) in UNSAFE for c in err[:-1]):
        found.append("unescaped")
    if SECRET in out + err:
        found.append("secret-echoed")
    if err and not err.startswith("reassign-monitor"):
        found.append("foreign-first-line")
    return found


# --- the cluster's state ---------------------------------------------------------------------------------------

class Snapshot:
    """Reassignments, throttle configs of the corpus topics and every broker, and the topic list."""

    def __init__(self, cluster, topics):
        self.admin, self.topics = cluster.admin(), topics

    def __call__(self):
        ongoing = {(tp.topic, tp.partition): tuple(r["adding_replicas"]) for tp, r in
                   self.admin.list_partition_reassignments().items()}
        described = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in self.topics]
                                                + [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in BROKERS])
        configs = {(scope, name, key): described.get(scope, {}).get(name, {}).get(key, {}).get("value")
                   for scope, names, keys in (("topic", self.topics, TOPIC_THROTTLE_KEYS.values()),
                                              ("broker", [str(b) for b in BROKERS], BROKER_THROTTLE_KEYS.values()))
                   for name in names for key in keys}
        return ongoing, configs, frozenset(self.admin.list_topics())


@pytest.fixture(autouse=True)
def aws_of_the_test(monkeypatch, tmp_path_factory):
    """The AWS environment of tests/aws_environment.py, for the in-process cases and the executables they start."""
    aws_environment.isolate(monkeypatch, tmp_path_factory.mktemp("aws"))


@pytest.fixture(scope="module")
def busy_port():
    """A port another socket listens on, as a job already running would."""
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        yield str(busy.getsockname()[1])


@pytest.fixture(scope="module")
def world(cluster, busy_port):
    """A topic to move (2 partitions on brokers 1, 2) and one whose partition 0 is reassigning under a
    throttle slow enough to outlast the module; the cluster as it was is restored at the end."""
    cancel_everything(cluster)
    clear_broker_throttles(cluster)
    cluster.delete_topics([NEVER_CREATED])  # left by an earlier failing run, it would hide a creation in this one
    topic = cluster.create_topic(cluster.unique_topic("badinput"), {0: [1, 2], 1: [1, 2]})
    moving = cluster.create_topic(cluster.unique_topic("badinput-moving"), {0: [1]}, megabytes=5)
    cluster.set_configs(topic_configs={moving: {TOPIC_THROTTLE_KEYS["leader"]: "0:1", TOPIC_THROTTLE_KEYS["follower"]: "0:3"}},
                        broker_configs={1: {BROKER_THROTTLE_KEYS["leader"]: 10_000},
                                        3: {BROKER_THROTTLE_KEYS["follower"]: 10_000}})
    admin = cluster.admin()
    admin.alter_partition_reassignments({TopicPartition(moving, 0): [1, 3]})
    admin.close()
    snapshot = Snapshot(cluster, [topic, moving])
    wait_for(lambda: (moving, 0) in snapshot()[0] and NEVER_CREATED not in snapshot()[2], 20,
             message="the slow move to start and no leftover topic")
    try:
        yield {"@BOOT": cluster.bootstrap, "@TOPIC": topic, "@MOVING": moving, "@BUSY": busy_port}, snapshot
    finally:
        snapshot.admin.close()
        cancel_everything(cluster)
        clear_broker_throttles(cluster)
        cluster.delete_topics([topic, moving])


def free_port():
    with socket.socket() as probe:
        probe.bind(("0.0.0.0", 0))
        return str(probe.getsockname()[1])


LOCAL = [c for c in CASES if not c.cluster]
ON_CLUSTER = [c for c in CASES if c.cluster]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in LOCAL])
def test_local_bad_input(case, tmp_path, busy_port):
    argv = argv_of(case, tmp_path, {"@BOOT": UNREACHABLE, "@FREE": free_port(), "@BUSY": busy_port})
    code, out, err, escaped = in_process(argv)
    assert not problems(case, code, out, err, escaped), (problems(case, code, out, err, escaped), err[:2000])


def cluster_param(case):
    return pytest.param(case, id=case.id)


@pytest.mark.parametrize("case", [cluster_param(c) for c in ON_CLUSTER])
def test_bad_input_against_the_cluster_changes_nothing(case, tmp_path, world):
    tokens, snapshot = world
    argv = argv_of(case, tmp_path, {**tokens, "@FREE": free_port()})
    before = snapshot()
    code, out, err, escaped = in_process(argv)
    after = snapshot()
    found = problems(case, code, out, err, escaped) + (["cluster-changed"] if after != before else [])
    assert not found, (found, err[:2000], before, after)


# A sample of every category through the installed executable: what a JVM or librdkafka writes to the
# stderr fd directly (invisible in-process) shows here, and so does the start-up cost of `run`.
EXECUTABLE_CASES = [c for c in LOCAL if "\x00" not in "".join(c.argv)]  # exec cannot pass a NUL byte
SAMPLE_IDS = {next(c.id for c in EXECUTABLE_CASES if c.category == cat) for cat in {c.category for c in LOCAL}} | {
    "run-checkpoint-is-a-file", "run-metrics-port-taken", "run-unreachable", "run-master-bad",
    "run-config-unknown-key", "progress-topic-newline-forges-a-line", "progress-path-newline", "progress-unreachable",
    "execute-partition-10e30", "progress-deep-lists", "progress-config-not-utf8",
    "progress-config-msk-iam-no-credentials", "progress-msk-iam-unreachable"}  # botocore's own output would show here
SAMPLE = [c for c in EXECUTABLE_CASES if c.id in SAMPLE_IDS]


def run_executable(case, tmp_path, busy_port):
    argv = argv_of(case, tmp_path, {"@BOOT": UNREACHABLE, "@FREE": free_port(), "@BUSY": busy_port})
    result = subprocess.run([str(EXECUTABLE), *argv], capture_output=True, timeout=60)
    err = result.stderr.decode("utf-8", "replace")
    return problems(case, result.returncode, result.stdout.decode("utf-8", "replace"), err), err[:3000]


def test_real_executable(tmp_path, busy_port):
    """The sample in parallel (each process spends most of its second importing): {case id: problems}."""
    for case in SAMPLE:
        (tmp_path / case.id).mkdir()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip([c.id for c in SAMPLE], pool.map(lambda c: run_executable(c, tmp_path / c.id, busy_port), SAMPLE)))
    assert not {case_id: found for case_id, found in results.items() if found[0]}


def test_the_sample_covers_every_category():
    assert {c.category for c in SAMPLE} == {c.category for c in LOCAL}
    assert len([c for c in SAMPLE if c.argv and c.argv[0] == "run"]) >= 3


# --- generated: malformed documents and property files -----------------------------------------------------------


def json_containers(inner):
    """Lists and objects of `inner` (a named function: hypothesis checks that it uses its argument by reading
    its source, which it can misread for a lambda among others)."""
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           json_containers, max_leaves=8)
bad_topics = (st.text(min_size=1, max_size=20).filter(lambda t: not re.fullmatch(r"[a-zA-Z0-9._-]+", t))
              | st.just("") | st.sampled_from([".", ".."]) | st.text("ab", min_size=250, max_size=300)
              | json_values.filter(lambda v: not isinstance(v, str)))
bad_ids = (st.integers(max_value=-1) | st.integers(min_value=INT32_MAX + 1)
           | json_values.filter(lambda v: not isinstance(v, int) or isinstance(v, bool)))
bad_replicas = (st.just([]) | st.lists(bad_ids, min_size=1, max_size=3).map(lambda ids: [1, *ids])
                | st.integers(0, 5).map(lambda b: [b, b]) | json_values.filter(lambda v: not isinstance(v, list)))
bad_log_dirs = (st.lists(st.just("any"), max_size=1) | st.just(["any", ""]) | st.just(["any", "relative/dir"])
                | json_values.filter(lambda v: v is not None and not isinstance(v, list)))
one_field_wrong = st.one_of(
    bad_topics.map(lambda v: entry(topic=v)), bad_ids.map(lambda v: entry(partition=v)),
    bad_replicas.map(lambda v: {"topic": "t", "partition": 0, "replicas": v}),
    bad_log_dirs.map(lambda v: entry(log_dirs=v)))
malformed_documents = st.one_of(
    st.tuples(st.lists(st.builds(entry, partition=st.integers(1, 100)), max_size=3), one_field_wrong).map(
        lambda pair: doc(*pair[0], pair[1])),
    json_values.filter(lambda v: not isinstance(v, dict)).map(json.dumps),
    st.sampled_from([0, 2, "1", None, 1.5]).map(lambda v: doc(entry(), version=v)),
    st.binary(max_size=200).filter(lambda b: b.strip() != b"").map(lambda b: b + b"\xff"))
GENERATED = settings(max_examples=100, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def generated_case(argv):
    return Case("generated", "generated", tuple(argv))


@GENERATED
@given(text=malformed_documents)
def test_generated_malformed_documents(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("doc") / "move.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    argv = ["execute", "--bootstrap-server", UNREACHABLE, "--timeout", "1", "--reassignment-json-file", str(path)]
    code, out, err, escaped = in_process(argv)
    assert not problems(generated_case(argv), code, out, err, escaped), (err, text[:300])


property_noise = st.lists(st.sampled_from(["", "# comment", "! comment", "security.protocol=PLAINTEXT"]), max_size=3)
bad_property_lines = st.one_of(
    st.text(st.characters(blacklist_characters="=\n\r#!"), min_size=1, max_size=30).filter(lambda t: t.strip()),
    st.from_regex(r"[a-z.]{1,20}=.{0,20}", fullmatch=True).filter(lambda l: l.split("=")[0].strip() not in
                                                                   ("security.protocol", "sasl.mechanism", "sasl.username",
                                                                    "sasl.password", "ssl.key.password",
                                                                    "ssl.endpoint.identification.algorithm")),
    st.sampled_from(["security.protocol=TLS", "sasl.mechanism=GSSAPI", "ssl.ca.location=/none"]),
)


@GENERATED
@given(before=property_noise, bad=bad_property_lines, after=property_noise)
def test_generated_bad_property_files(before, bad, after, tmp_path_factory):
    path = tmp_path_factory.mktemp("props") / "client.properties"
    path.write_text("\n".join([*before, f"sasl.password={SECRET}", bad, *after]) + "\n", encoding="utf-8")
    argv = ["progress", "--bootstrap-server", UNREACHABLE, "--timeout", "1", "--command-config", str(path)]
    code, out, err, escaped = in_process(argv)
    assert code == EXIT_BAD_INPUT
    assert not problems(generated_case(argv), code, out, err, escaped), (err, bad)


# --- a bug is exit 4, still one line ------------------------------------------------------------------------------

BUGS = [
    # id, exception the command raises
    ("plain", ValueError("unexpected")),
    ("multi-line", RuntimeError("streaming query failed\n\tat org.apache.spark.sql.Foo(Foo.scala:1)\n\tat java.lang.Thread.run")),
    ("empty-text", KeyError()),
    ("huge-text", AssertionError("x" * 100_000)),
]


@pytest.mark.parametrize("error", [pytest.param(e, id=i) for i, e in BUGS])
def test_a_bug_is_exit_4_in_one_line(error):
    from streaming.vocabulary.errors import EXIT_BUG

    def broken(_args):  # a door that fails in a way no error table knows: a bug
        raise error

    argv = ["progress", "--bootstrap-server", "127.0.0.1:9"]
    code, out, err, escaped = in_process(argv, connect=broken)
    assert not problems(Case("bug", "bug", tuple(argv), code=EXIT_BUG), code, out, err, escaped), err
    assert err.rstrip("\n").endswith("run with --debug") and len(err) < 500
