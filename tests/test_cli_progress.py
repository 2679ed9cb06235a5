"""`reassign-monitor progress` without a cluster: arguments, bad input, an unreachable cluster, refused
requests, and the report on a fake admin built from plain data."""

import json
import subprocess
import sys
import time

import jsonschema
import kafka.errors
import pytest

from streaming import cli
from streaming.vocabulary.errors import EXIT_BAD_INPUT, EXIT_CLUSTER, EXIT_IN_PROGRESS, EXIT_OK, EXIT_READER_GONE
from streaming.core.progress_report import SCHEMA_PATH
from tests.fake_cluster import FakeCluster
from tests.kafka_fixtures import ROOT

EXECUTABLE = ROOT / ".venv" / "bin" / "reassign-monitor"
UNREACHABLE = "127.0.0.1:1"
SOMEWHERE = "127.0.0.1:9"  # never contacted: these cases fail before connecting


def write(tmp_path, text, name="move.json"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def doc(*partitions, version=1):
    return json.dumps({"version": version, "partitions": list(partitions)})


BAD_FILES = [
    # id, file text (None: the file does not exist), words of the error line
    ("missing-file", None, "No such file"),
    ("bad-json", "{not json", "not valid JSON"),
    ("version-2", doc({"topic": "t", "partition": 0, "replicas": [1]}, version=2), "unsupported version 2"),
    ("duplicate-partitions", doc({"topic": "t", "partition": 0, "replicas": [1]},
                                 {"topic": "t", "partition": 0, "replicas": [2]}), "t-0 appears more than once"),
    ("negative-partition", doc({"topic": "t", "partition": -1, "replicas": [1]}), "'partition' must be an integer >= 0"),
    ("negative-broker", doc({"topic": "t", "partition": 0, "replicas": [1, -1]}), "broker ids >= 0"),
]


def one_error_line(stderr):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("text, words", [pytest.param(t, w, id=i) for i, t, w in BAD_FILES])
def test_bad_reassignment_file(tmp_path, capsys, text, words):
    path = str(tmp_path / "absent.json") if text is None else write(tmp_path, text)
    code = cli.main(["progress", "--bootstrap-server", SOMEWHERE, "--reassignment-json-file", path])
    captured = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    line = one_error_line(captured.err)
    assert line.startswith("reassign-monitor progress: error: --reassignment-json-file ")
    assert words in line
    assert captured.out == ""


BAD_ARGUMENTS = [
    # id, arguments after `progress`, words of the usage error
    ("no-bootstrap", [], "--bootstrap-server"),
    ("watch-zero", ["--bootstrap-server", SOMEWHERE, "--watch", "0"], "must be positive"),
    ("watch-negative", ["--bootstrap-server", SOMEWHERE, "--watch", "-2"], "must be positive"),
    ("watch-text", ["--bootstrap-server", SOMEWHERE, "--watch", "soon"], "not a number of seconds"),
    ("output-xml", ["--bootstrap-server", SOMEWHERE, "--output", "xml"], "invalid choice"),
    ("timeout-text", ["--bootstrap-server", SOMEWHERE, "--timeout", "x"], "not a number of seconds"),
    ("unknown-flag", ["--bootstrap-server", SOMEWHERE, "--verify"], "unrecognized arguments"),
]


@pytest.mark.parametrize("arguments, words", [pytest.param(a, w, id=i) for i, a, w in BAD_ARGUMENTS])
def test_bad_arguments(capsys, arguments, words):
    with pytest.raises(SystemExit) as exited:
        cli.main(["progress", *arguments])
    assert exited.value.code == EXIT_BAD_INPUT
    assert words in one_error_line(capsys.readouterr().err)


def test_arguments_parse():
    args = cli.build_parser().parse_args(["progress", "--bootstrap-server", "h:1", "--reassignment-json-file", "f",
                                          "--watch", "2.5", "--output", "json", "--timeout", "3"])
    assert (args.reassignment_json_file, args.watch, args.output, args.timeout) == ("f", 2.5, "json", 3.0)
    defaults = cli.build_parser().parse_args(["progress", "--bootstrap-server", "h:1"])
    assert (defaults.reassignment_json_file, defaults.watch, defaults.output, defaults.timeout) == (
        None, None, "table", 10.0)


def test_missing_command_config(tmp_path, capsys):
    code = cli.main(["progress", "--bootstrap-server", SOMEWHERE, "--command-config", str(tmp_path / "none.properties")])
    assert code == EXIT_BAD_INPUT
    assert "--command-config" in one_error_line(capsys.readouterr().err)


def test_unreachable_bootstrap_is_bounded_by_timeout(capsys):
    started = time.monotonic()
    code = cli.main(["progress", "--bootstrap-server", UNREACHABLE, "--timeout", "2"])
    elapsed = time.monotonic() - started
    assert code == EXIT_CLUSTER
    assert "cluster unreachable" in one_error_line(capsys.readouterr().err)
    assert elapsed < 6


def test_bad_file_is_reported_before_connecting(tmp_path, capsys):
    started = time.monotonic()
    code = cli.main(["progress", "--bootstrap-server", UNREACHABLE, "--timeout", "5",
                     "--reassignment-json-file", write(tmp_path, "[")])
    assert code == EXIT_BAD_INPUT and time.monotonic() - started < 1
    capsys.readouterr()


SUBPROCESS_CASES = [
    # id, arguments after `progress` (FILE is replaced by a bad file's path), exit code, words
    ("unreachable", ["--bootstrap-server", UNREACHABLE, "--timeout", "2"], EXIT_CLUSTER, "cluster unreachable"),
    ("missing-file", ["--bootstrap-server", SOMEWHERE, "--reassignment-json-file", "/nonexistent/move.json"],
     EXIT_BAD_INPUT, "No such file"),
    ("version-2", ["--bootstrap-server", SOMEWHERE, "--reassignment-json-file", "FILE"], EXIT_BAD_INPUT,
     "unsupported version 2"),
    ("usage", ["--watch", "0"], EXIT_BAD_INPUT, "must be positive"),
]


@pytest.mark.parametrize("arguments, code, words", [pytest.param(a, c, w, id=i) for i, a, c, w in SUBPROCESS_CASES])
def test_real_executable_prints_one_line_and_no_traceback(tmp_path, arguments, code, words):
    path = write(tmp_path, doc({"topic": "t", "partition": 0, "replicas": [1]}, version=2))
    started = time.monotonic()
    result = subprocess.run([str(EXECUTABLE), "progress", *[path if a == "FILE" else a for a in arguments]],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == code
    assert words in one_error_line(result.stderr)
    assert result.stdout == ""
    assert time.monotonic() - started < 8


def test_the_progress_path_never_imports_spark():
    script = ("import sys; from streaming import cli; code = cli.main(['progress', '--bootstrap-server', "
              f"'{UNREACHABLE}', '--timeout', '1']); "
              "assert code == 3, code; "
              "assert not [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')], 'spark imported'")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def moving(cluster):
    """t-0 moving from broker 1 to 2: 400 of 1000 bytes copied."""
    cluster.partitions[("t", 0)] = {"replicas": [2, 1], "isr": [1], "leader": 1}
    cluster.reassigning[("t", 0)] = ([2, 1], [2], [1])
    cluster.sizes = {("t", 0, 1): 1000, ("t", 0, 2): 400}


def done(cluster):
    """t-0 moved: on broker 2 alone."""
    cluster.partitions[("t", 0)] = {"replicas": [2], "isr": [2], "leader": 2}
    cluster.reassigning.clear()
    cluster.sizes = {("t", 0, 2): 1000}


@pytest.fixture
def fake():
    """Makes the one fake cluster (tests.fake_cluster) from plain data; every one made must end closed."""
    clusters = []

    def make(moving_now=True, fail=None, offline=()):
        cluster = FakeCluster(brokers={b: b not in offline for b in (1, 2, 3)}, fail=dict(fail or {}))
        (moving if moving_now else done)(cluster)
        clusters.append(cluster)
        return cluster

    yield make
    assert all(c.closed for c in clusters)


def on(cluster, argv):
    """`reassign-monitor ARGV` in this process, its door opening onto `cluster`."""
    return cli.main(argv, connect=lambda _args: cluster)


FAKE_RUNS = [
    # id, fake cluster, file entries (None: no file), exit code, statuses
    ("ongoing-moving", {}, None, EXIT_IN_PROGRESS, ["Behind: 600 bytes (60.0%)"]),
    ("ongoing-quiet", {"moving_now": False}, None, EXIT_OK, []),
    ("file-moving", {}, [{"topic": "t", "partition": 0, "replicas": [2]}], EXIT_IN_PROGRESS,
     ["Behind: 600 bytes (60.0%)"]),
    ("file-done", {"moving_now": False}, [{"topic": "t", "partition": 0, "replicas": [2]}], EXIT_OK, ["In sync"]),
    ("file-unknown-only", {"moving_now": False}, [{"topic": "u", "partition": 0, "replicas": [2]}], EXIT_OK,
     ["Unknown topic"]),
    ("file-empty", {}, [], EXIT_OK, []),
]


@pytest.mark.parametrize("cluster, entries, code, statuses",
                         [pytest.param(c, e, x, s, id=i) for i, c, e, x, s in FAKE_RUNS])
def test_json_report_on_a_fake_cluster(tmp_path, capsys, fake, cluster, entries, code, statuses):
    made = fake(**cluster)
    arguments = ["progress", "--bootstrap-server", SOMEWHERE, "--output", "json"]
    if entries is not None:
        arguments += ["--reassignment-json-file", write(tmp_path, doc(*entries))]
    assert on(made, arguments) == code
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert [r["status"] for r in document["replicas"]] == statuses
    assert document["in_progress"] == (code == EXIT_IN_PROGRESS)


def test_table_report_on_a_fake_cluster(capsys, fake):
    assert on(fake(), ["progress", "--bootstrap-server", SOMEWHERE]) == EXIT_IN_PROGRESS
    out = capsys.readouterr().out
    assert "Behind: 600 bytes (60.0%)" in out and "400 B / 1.0 KB" in out
    assert "Moving: 1 replica in 1 partition" in out


class CompletedAfterFirstPoll:
    """A fake cluster whose move completes once the first poll is over (at the second DescribeCluster)."""

    def __init__(self, cluster):
        self.cluster, self.polls = cluster, 0

    def describe_cluster(self):
        self.polls += 1
        if self.polls == 2:
            done(self.cluster)
        return self.cluster.describe_cluster()

    def __getattr__(self, name):
        return getattr(self.cluster, name)


def test_watch_ends_when_nothing_moves(capsys, fake):
    cluster = CompletedAfterFirstPoll(fake())
    interval_s = 0.3
    started = time.monotonic()
    code = on(cluster, ["progress", "--bootstrap-server", SOMEWHERE, "--watch", str(interval_s), "--output", "json"])
    elapsed = time.monotonic() - started
    assert code == EXIT_OK
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["in_progress"] for d in documents] == [True, False]
    assert cluster.polls == 2 and elapsed >= interval_s  # one wait of one interval between the two polls


REFUSED = [
    # id, failing call, exception, words
    ("describe-cluster-not-authorized", "describe_cluster", kafka.errors.ClusterAuthorizationFailedError(),
     "not authorized"),
    ("reassignments-not-authorized", "list_reassignments", kafka.errors.ClusterAuthorizationFailedError(),
     "ListPartitionReassignments: ClusterAuthorizationFailedError"),
    ("metadata-refused", "describe_partitions", kafka.errors.TopicAuthorizationFailedError(),
     "Metadata: TopicAuthorizationFailedError"),
]


@pytest.mark.parametrize("call, error, words", [pytest.param(c, e, w, id=i) for i, c, e, w in REFUSED])
def test_refused_requests_exit_3(capsys, fake, call, error, words):
    assert on(fake(fail={call: error}), ["progress", "--bootstrap-server", SOMEWHERE]) == EXIT_CLUSTER
    captured = capsys.readouterr()
    assert words in one_error_line(captured.err)
    assert captured.out == ""


def test_an_offline_broker_costs_no_poll_error(capsys, fake):
    assert on(fake(offline={3}), ["progress", "--bootstrap-server", SOMEWHERE, "--output", "json"]) == EXIT_IN_PROGRESS
    assert json.loads(capsys.readouterr().out)["errors"] == []


def test_a_silent_broker_is_a_warning_not_a_failure(capsys, fake):
    made = fake(fail={"describe_log_dirs": kafka.errors.KafkaTimeoutError("broker 2")})
    assert on(made, ["progress", "--bootstrap-server", SOMEWHERE, "--output", "json"]) == EXIT_IN_PROGRESS
    document = json.loads(capsys.readouterr().out)
    assert document["replicas"][0]["status"] == "Behind: unknown"
    assert {e["api"] for e in document["errors"]} == {"DescribeLogDirs"}


def test_a_reader_that_goes_away_ends_the_watch_quietly():
    """`progress --watch --output json | head -1`: once the reader has gone, the next report ends `progress` with
    exit 141 (128 + SIGPIPE, as a tool the pipe killed) and nothing on stderr - no traceback, no "bug" line."""
    script = ("import sys; from tests.fake_cluster import FakeCluster; from tests.test_cli_progress import moving; "
              "from streaming import cli; cluster = FakeCluster(); moving(cluster); "
              "sys.exit(cli.main(['progress', '--bootstrap-server', '127.0.0.1:9092', '--output', 'json', "
              "'--watch', '0.2'], connect=lambda _args: cluster))")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=ROOT)
    try:
        assert process.stdout.readline()  # the first report
        process.stdout.close()  # `head -1` is done
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert (process.returncode, stderr.decode()) == (EXIT_READER_GONE, "")
