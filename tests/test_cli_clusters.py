"""`--clusters FILE --cluster NAME` through the CLI, without a cluster: every command that takes --bootstrap-server
gets the named cluster's servers and client file exactly as the flags would give them; `run` gets the cluster's
flags, the command line's winning; usage problems and files the fleet file names are one line, exit 2."""

import pytest

from streaming import cli
from streaming.commands import fleet
from streaming.commands import run as run_command
from streaming.vocabulary.errors import EXIT_BAD_INPUT, EXIT_CLUSTER, Unreachable

SERVERS = "127.0.0.1:9,127.0.0.1:10"  # never contacted: the fake door stops every command
REQUEST_ID = "20261123T180000.000Z-1a2b"
SECRET = "hunter2-never-echo-me"
COMMANDS = {  # every command with --bootstrap-server but run (its own test below): the flags it needs besides
    "progress": (),
    "execute": ("--reassignment-json-file", "@MOVE", "--throttle", "1000000"),
    "verify": ("--reassignment-json-file", "@MOVE"),
    "cancel": ("--all",),
    "pause": ("--request-id", REQUEST_ID),
    "resume": ("--request-id", REQUEST_ID),
}
FLEET_ONLY = {"clusters", "cluster", "config_source", "labels"}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "move.json").write_text('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}')
    (tmp_path / "client.properties").write_text("security.protocol=PLAINTEXT\nclient.id=fleet-test\n")
    (tmp_path / "fleet.toml").write_text(f"""
[client-profiles.plain]
command-config = "client.properties"

[clusters.direct]
bootstrap-servers = "{SERVERS}"
command-config = "client.properties"

[clusters.shared]
bootstrap-servers = "{SERVERS}"
client-profile = "plain"

[clusters.bare]
bootstrap-servers = "{SERVERS}"

[clusters.direct.run]
trigger-interval = "5s"
throttle-cleanup = "all"
dry-run = true
progress-topic = "progress-direct"
""")
    return tmp_path


def filled(words, tmp_path):
    return [str(tmp_path / "move.json") if w == "@MOVE" else w for w in words]


def reached(argv):
    """(exit code, the args the command opened its door with) of `reassign-monitor ARGV`."""
    seen = []

    def door(args):
        seen.append(args)
        raise Unreachable("the test's door: stopped here")

    try:
        code = cli.main(argv, connect=door)
    except SystemExit as usage:  # argparse's own usage errors
        code = usage.code
    return code, (vars(seen[0]) if seen else None)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("name, config", [("direct", True), ("shared", True), ("bare", False)])
def test_a_cluster_of_the_file_is_its_flags(files, command, name, config, capsys):
    extra = filled(COMMANDS[command], files)
    flags = ["--bootstrap-server", SERVERS] + (["--command-config", str(files / "client.properties")] if config else [])
    code_flags, by_flags = reached([command, *flags, *extra])
    code_file, by_file = reached([command, "--clusters", str(files / "fleet.toml"), "--cluster", name, *extra])
    assert code_flags == code_file == EXIT_CLUSTER
    assert {k: v for k, v in by_file.items() if k not in FLEET_ONLY} == {k: v for k, v in by_flags.items() if k not in FLEET_ONLY}
    assert by_file["cluster"] == name and by_flags["cluster"] is None
    capsys.readouterr()


def job_config(argv, parser=None):
    parser = parser or cli.build_parser()
    return run_command.config_from(fleet.chosen(parser.parse_args(argv), argv, parser))


RUN_PRECEDENCE = [
    # id, command-line flags after `run --clusters F --cluster direct`, expected fields of the JobConfig
    ("the-files-flags", (), {"trigger_interval_s": 5.0, "throttle_cleanup": "all", "dry_run": True,
                             "progress_topic": "progress-direct"}),
    ("a-flag-wins", ("--trigger-interval", "2s"), {"trigger_interval_s": 2.0, "throttle_cleanup": "all"}),
    ("the-default-given-wins", ("--throttle-cleanup", "owned"), {"throttle_cleanup": "owned", "trigger_interval_s": 5.0}),
    ("equals-form-wins", ("--progress-topic=mine",), {"progress_topic": "mine"}),
    ("job-flags-stay-the-command-lines", ("--metrics-port", "9555"), {"metrics_port": 9555, "dry_run": True}),
]


@pytest.mark.parametrize("extra, expected", [pytest.param(e, x, id=i) for i, e, x in RUN_PRECEDENCE])
def test_run_takes_the_clusters_flags_and_the_command_line_wins(files, extra, expected):
    config = job_config(["run", "--clusters", str(files / "fleet.toml"), "--cluster", "direct", *extra])
    assert {field: getattr(config, field) for field in expected} == expected
    assert (config.bootstrap, config.command_config, config.cluster_name) == (SERVERS, str(files / "client.properties"),
                                                                              "direct")
    assert config.cluster == f"cluster direct ({SERVERS})"


def test_run_of_a_cluster_is_run_with_its_flags(files):
    by_file = job_config(["run", "--clusters", str(files / "fleet.toml"), "--cluster", "direct"])
    by_flags = job_config(["run", "--bootstrap-server", SERVERS, "--command-config", str(files / "client.properties"),
                           "--trigger-interval", "5s", "--throttle-cleanup", "all", "--dry-run",
                           "--progress-topic", "progress-direct"])
    assert by_file == by_flags.__class__(**{**vars(by_flags), "cluster_name": "direct"})


CLUSTER_NAMES = [
    # id, argv, the JobConfig's cluster_label: the `cluster` of every metric and record
    ("the-file-s-name", ("run", "--clusters", "@FLEET", "--cluster", "direct"), "direct"),
    ("the-flag", ("run", "--bootstrap-server", SERVERS, "--cluster-name", "prod-eu.1"), "prod-eu.1"),
    ("the-first-address", ("run", "--bootstrap-server", SERVERS), SERVERS.split(",")[0]),
]


@pytest.mark.parametrize("argv, label", [pytest.param(a, label, id=i) for i, a, label in CLUSTER_NAMES])
def test_the_cluster_s_name_in_metrics_and_records(files, argv, label):
    assert job_config([word.replace("@FLEET", str(files / "fleet.toml")) for word in argv]).cluster_label == label


USAGE = [
    # id, argv, the error line after "reassign-monitor COMMAND: error: "
    ("no-cluster", ("progress", "--clusters", "@FLEET"), fleet.NEEDS_CLUSTER),
    ("cluster-without-clusters", ("progress", "--bootstrap-server", SERVERS, "--cluster", "direct"),
     "--cluster names a cluster of --clusters FILE: give --clusters too"),
    ("command-config-with-clusters", ("cancel", "--all", "--clusters", "@FLEET", "--cluster", "direct", "--command-config", "x"),
     "--command-config cannot go with --clusters: the file names each cluster's client config"),
    ("cluster-name-with-clusters", ("run", "--clusters", "@FLEET", "--cluster", "direct", "--cluster-name", "x"),
     "--cluster-name cannot go with --clusters: a cluster of the file is called by its name there"),
    ("bad-cluster-name", ("progress", "--bootstrap-server", SERVERS, "--cluster-name", "prod eu"),
     "argument --cluster-name: 'prod eu' is not a cluster name: 1 to 64 ASCII letters, digits, '.', '_' or '-'"),
    ("both-forms", ("progress", "--clusters", "@FLEET", "--bootstrap-server", SERVERS),
     "argument --bootstrap-server: not allowed with argument --clusters"),
    ("neither-form", ("verify", "--reassignment-json-file", "x"), "one of the arguments --bootstrap-server --clusters is required"),
    ("unknown-cluster", ("progress", "--clusters", "@FLEET", "--cluster", "nope"),
     "--clusters @FLEET: --cluster 'nope': no such cluster in the file (it names direct, shared, bare)"),
    ("missing-file", ("progress", "--clusters", "@DIR/none.toml", "--cluster", "a"),
     "--clusters @DIR/none.toml: No such file or directory"),
    ("a-directory", ("run", "--clusters", "@DIR", "--cluster", "a"), "--clusters @DIR: Is a directory"),
]


@pytest.mark.parametrize("argv, line", [pytest.param(a, line, id=i) for i, a, line in USAGE])
def test_usage_is_one_line_exit_2(files, argv, line, capsys):
    def fill(text):
        return text.replace("@FLEET", str(files / "fleet.toml")).replace("@DIR", str(files))

    code, seen = reached([fill(word) for word in argv])
    err = capsys.readouterr().err
    assert (code, seen) == (EXIT_BAD_INPUT, None)
    assert err == f"reassign-monitor {argv[0]}: error: {fill(line)}\n"


CLIENT_FILES = [
    # id, the cluster's keys naming its client file, how the line names it
    ("direct", 'command-config = "client.properties"', "cluster a: command-config @DIR/client.properties"),
    ("profile", 'client-profile = "p"', "cluster a: client-profile p: command-config @DIR/client.properties"),
]
BAD_CLIENT_FILES = [
    # id, the client file's text (None: absent), the end of the line
    ("missing", None, "No such file or directory"),
    ("unknown-key", f"sasl.pasword={SECRET}\n", "line 1: unsupported key 'sasl.pasword'..."),
    ("bad-protocol", "security.protocol=PLAINTEXTT\n", "line 1: security.protocol..."),
]


@pytest.mark.parametrize("keys, named", [pytest.param(k, n, id=i) for i, k, n in CLIENT_FILES])
@pytest.mark.parametrize("text, problem", [pytest.param(t, p, id=i) for i, t, p in BAD_CLIENT_FILES])
@pytest.mark.parametrize("command", ["progress", "run"])
def test_a_bad_client_file_names_the_fleet_file_and_cluster(tmp_path, keys, named, text, problem, command, capsys):
    if text is not None:
        (tmp_path / "client.properties").write_text(text)
    (tmp_path / "fleet.toml").write_text('[client-profiles.p]\ncommand-config = "client.properties"\n'
                                         f'[clusters.a]\nbootstrap-servers = "{SERVERS}"\n{keys}\n')
    code, seen = reached([command, "--clusters", str(tmp_path / "fleet.toml"), "--cluster", "a"])
    err = capsys.readouterr().err
    assert (code, seen) == (EXIT_BAD_INPUT, None)
    start = f"reassign-monitor {command}: error: --clusters {tmp_path}/fleet.toml: {named.replace('@DIR', str(tmp_path))}: "
    assert err.startswith(start) and err.count("\n") == 1 and SECRET not in err, err
    rest = err[len(start):].rstrip("\n")
    assert rest.startswith(problem[:-3]) if problem.endswith("...") else rest == problem, rest


TOGETHER = [
    # id, the cluster's run flags, the command line's, the error line after "reassign-monitor run: error: "
    ("the-files-bound-without-auto", 'throttle-min = "1MB"', (),
     "@CLUSTER: run: --throttle-min needs --throttle auto"),
    ("the-files-auto-with-a-dry-run-given", 'throttle = "auto"\nthrottle-min = "1MB"\nthrottle-max = "10MB"', ("--dry-run",),
     "@CLUSTER: run: --throttle auto changes rates and restores them at completion: it needs --throttle-cleanup owned "
     "and no --dry-run"),
    ("the-command-lines-own-problem", 'trigger-interval = "5s"', ("--throttle-min", "1MB"),
     "--throttle-min needs --throttle auto"),
    ("good-together", 'throttle = "auto"\nthrottle-max = "10MB"', ("--throttle-min", "1MB"), None),
]


@pytest.mark.parametrize("flags, extra, line", [pytest.param(f, e, line, id=i) for i, f, e, line in TOGETHER])
def test_run_flags_that_do_not_go_together(tmp_path, flags, extra, line, capsys, monkeypatch):
    path = tmp_path / "fleet.toml"
    path.write_text(f'[clusters.a]\nbootstrap-servers = "{SERVERS}"\n[clusters.a.run]\n{flags}\n')
    started = []

    def preflight(config):  # run's checks before Spark: reached only with flags that go together
        started.append(config)
        raise Unreachable("the test's preflight: stopped here")

    monkeypatch.setattr(run_command, "preflight", preflight)
    code, _ = reached(["run", "--clusters", str(path), "--cluster", "a", *extra])
    err = capsys.readouterr().err
    if line is None:
        assert code == EXIT_CLUSTER and started[0].steering is not None, err
    else:
        assert (code, started) == (EXIT_BAD_INPUT, [])
        assert err == f"reassign-monitor run: error: {line.replace('@CLUSTER', f'--clusters {path}: cluster a')}\n"
