"""The fleet file's schema and parsing (streaming.vocabulary.fleet_file) on plain text, with the command line's own
parsers as its checks (streaming.commands.fleet.checks): a table of good files and what they give, a table of bad
ones and the one message each gets."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.cli import build_parser
from streaming.commands import fleet
from streaming.vocabulary import fleet_file
from streaming.vocabulary.errors import BadInput

CHECKS = fleet.checks(fleet.run_parser(build_parser()))
DIRECTORY = "/etc/fleet"
ONE = '[clusters.a]\nbootstrap-servers = "k1:9092"\n'


def parsed(text):
    return fleet_file.parse(text, DIRECTORY, CHECKS)


GOOD = [
    # id, text, cluster name, expected (bootstrap servers, command config, config key, labels, run flags)
    ("minimal", ONE, "a", ("k1:9092", None, "command-config", {}, {})),
    ("several-servers", '[clusters.a]\nbootstrap-servers = "k1:9092,[::1]:9093,10.0.0.1:9094"\n', "a",
     ("k1:9092,[::1]:9093,10.0.0.1:9094", None, "command-config", {}, {})),
    ("relative-command-config", ONE + 'command-config = "a.properties"\n', "a",
     ("k1:9092", "/etc/fleet/a.properties", "command-config", {}, {})),
    ("absolute-command-config", ONE + 'command-config = "/srv/a.properties"\n', "a",
     ("k1:9092", "/srv/a.properties", "command-config", {}, {})),
    ("profile", '[client-profiles.sasl]\ncommand-config = "sasl.properties"\n' + ONE + 'client-profile = "sasl"\n', "a",
     ("k1:9092", "/etc/fleet/sasl.properties", "client-profile sasl: command-config", {}, {})),
    ("labels", ONE + 'labels = { region = "eu-west-1", env = "prod", _tier = "" }\n', "a",
     ("k1:9092", None, "command-config", {"region": "eu-west-1", "env": "prod", "_tier": ""}, {})),
    ("run-flags", ONE + '[clusters.a.run]\ntrigger-interval = "5s"\ndry-run = true\nthrottle-cleanup = "all"\n'
                        'timeout = 30\nprogress-topic = "progress-a"\n', "a",
     ("k1:9092", None, "command-config", {},
      {"trigger-interval": "5s", "dry-run": True, "throttle-cleanup": "all", "timeout": 30, "progress-topic": "progress-a"})),
    ("second-of-two", ONE + '[clusters."b.2_x-y"]\nbootstrap-servers = "k2:9092"\n', "b.2_x-y",
     ("k2:9092", None, "command-config", {}, {})),
]


@pytest.mark.parametrize("text, name, expected", [pytest.param(t, n, e, id=i) for i, t, n, e in GOOD])
def test_good_files(text, name, expected):
    cluster = parsed(text).cluster(name)
    assert (cluster.bootstrap_servers, cluster.command_config, cluster.config_key, cluster.labels,
            cluster.run_flags) == expected
    assert cluster.name == name


def test_clusters_keep_the_files_order():
    text = "".join(f'[clusters.{n}]\nbootstrap-servers = "k:1"\n' for n in ("z", "a", "m"))
    assert list(parsed(text).clusters) == ["z", "a", "m"]


BAD = [
    # id, text, the message (whole, or its start when it ends with "...")
    ("toml-syntax", '[clusters.a]\nbootstrap-servers = "k1:9092\n', "not TOML: Illegal character '\\n' (at line 2, column 29)"),
    ("toml-bare-value", "[clusters.a]\nbootstrap-servers = k1:9092\n", "not TOML: Invalid value (at line 2, column 21)"),
    ("duplicate-cluster", ONE + '[clusters.a]\nbootstrap-servers = "k2:9092"\n',
     "cluster 'a' is defined twice (at line 3, column 12)"),
    ("duplicate-key", ONE + 'bootstrap-servers = "k2:9092"\n', "not TOML: Cannot overwrite a value (at line 3, column 30)"),
    ("empty", "", "no cluster: name at least one as [clusters.NAME]"),
    ("no-clusters-table", "[clusters]\n", "no cluster: name at least one as [clusters.NAME]"),
    ("unknown-top-key", ONE + "[cluster.b]\n", "unknown key 'cluster' at the top..."),
    ("clusters-not-tables", "clusters = 5\n", "clusters: must be tables ([clusters.NAME])"),
    ("cluster-not-a-table", "[clusters]\na = 5\n", "cluster a: must be a table ([clusters.a])"),
    ("cluster-name-space", '[clusters."a b"]\nbootstrap-servers = "k:1"\n',
     "cluster name 'a b': must be 1 to 64 ASCII letters, digits, '.', '_' or '-'"),
    ("cluster-name-newline", '[clusters."a\\nb"]\nbootstrap-servers = "k:1"\n', "cluster name 'a\\nb': must be..."),
    ("cluster-name-too-long", f'[clusters.{"a" * 65}]\nbootstrap-servers = "k:1"\n', "cluster name 'aaaa..."),
    ("cluster-unknown-key", '[clusters.a]\nbootstrap-server = "k1:9092"\n', "cluster a: unknown key 'bootstrap-server'..."),
    ("cluster-no-servers", '[clusters.a]\nlabels = {}\n', "cluster a: bootstrap-servers is missing"),
    ("servers-list", '[clusters.a]\nbootstrap-servers = ["k1:9092"]\n',
     "cluster a: bootstrap-servers: must be a string HOST:PORT[,...], as --bootstrap-server takes it"),
    ("servers-no-port", '[clusters.a]\nbootstrap-servers = "k1"\n',
     "cluster a: bootstrap-servers: 'k1' has no port: give HOST:PORT, as Kafka's tools require"),
    ("servers-bad-port", '[clusters.a]\nbootstrap-servers = "k1:9092,k2:70000"\n',
     "cluster a: bootstrap-servers: port 70000 in 'k2:70000' is not 1-65535"),
    ("servers-empty", '[clusters.a]\nbootstrap-servers = ""\n', "cluster a: bootstrap-servers: '' is not HOST:PORT"),
    ("config-and-profile", '[client-profiles.p]\ncommand-config = "p"\n' + ONE + 'command-config = "c"\nclient-profile = "p"\n',
     "cluster a: command-config and client-profile exclude each other: give one"),
    ("config-empty", ONE + 'command-config = ""\n', "cluster a: command-config: must be a non-empty string (a file)"),
    ("config-number", ONE + "command-config = 5\n", "cluster a: command-config: must be a non-empty string (a file)"),
    ("unknown-profile", '[client-profiles.p]\ncommand-config = "p"\n' + ONE + 'client-profile = "q"\n',
     "cluster a: client-profile: no profile 'q' in [client-profiles] (it has p)"),
    ("profile-without-profiles", ONE + 'client-profile = "q"\n',
     "cluster a: client-profile: no profile 'q' in [client-profiles] (it has none)"),
    ("profile-no-config", '[client-profiles.p]\n' + ONE, "client profile p: command-config is missing"),
    ("profile-unknown-key", '[client-profiles.p]\ncommand-config = "p"\nsasl-password = "x"\n' + ONE,
     "client profile p: unknown key 'sasl-password' (known: command-config)"),
    ("profile-name-bad", '[client-profiles."p/q"]\ncommand-config = "p"\n' + ONE, "client profile name 'p/q': must be..."),
    ("labels-not-table", ONE + 'labels = "eu"\n', "cluster a: labels: must be a table of strings"),
    ("label-name-dash", ONE + 'labels = { "re-gion" = "eu" }\n', "cluster a: labels: 're-gion' is not a label name..."),
    ("label-name-digit", ONE + 'labels = { 1region = "eu" }\n', "cluster a: labels: '1region' is not a label name..."),
    ("label-name-reserved-prefix", ONE + 'labels = { __name__ = "x" }\n', "cluster a: labels: '__name__' is not..."),
    ("label-cluster", ONE + 'labels = { cluster = "x" }\n', "cluster a: labels: 'cluster' is not a label name..."),
    ("label-value-number", ONE + "labels = { tier = 1 }\n", "cluster a: labels.tier: must be a string of at most 256 characters"),
    ("label-value-long", ONE + f'labels = {{ tier = "{"x" * 257}" }}\n', "cluster a: labels.tier: must be a string..."),
    ("run-not-table", ONE + 'run = "fast"\n', "cluster a: run: must be a table of flags"),
    ("run-unknown-flag", ONE + '[clusters.a.run]\ntrigger = "5s"\n', "cluster a: run: 'trigger' is not a flag a cluster may set..."),
    ("run-job-flag", ONE + "[clusters.a.run]\nmetrics-port = 9470\n",
     "cluster a: run: 'metrics-port' is not a flag a cluster may set (one of timeout, progress-topic, ..."),
    ("run-bad-duration", ONE + '[clusters.a.run]\ntrigger-interval = "25h"\n',
     "cluster a: run.trigger-interval: duration '25h' is outside 100ms .. 24h"),
    ("run-bad-duration-number", ONE + "[clusters.a.run]\ntrigger-interval = 0\n",
     "cluster a: run.trigger-interval: duration must be positive: '0'"),
    ("run-bad-choice", ONE + '[clusters.a.run]\nthrottle-cleanup = "some"\n',
     "cluster a: run.throttle-cleanup: 'some' is not one of owned, all, off"),
    ("run-bad-topic", ONE + '[clusters.a.run]\nprogress-topic = "a/b"\n',
     "cluster a: run.progress-topic: topic name 'a/b' may contain only ASCII letters, digits, '.', '_' and '-'"),
    ("run-bad-rate", ONE + '[clusters.a.run]\nthrottle-min = "1 lightyear"\n', "cluster a: run.throttle-min: ..."),
    ("run-flag-not-bool", ONE + '[clusters.a.run]\ndry-run = "yes"\n',
     "cluster a: run.dry-run: true or false (--dry-run takes no value), not 'yes'"),
    ("run-value-bool", ONE + "[clusters.a.run]\nstall-after = true\n",
     "cluster a: run.stall-after: a value, as --stall-after takes one, not true"),
    ("run-value-list", ONE + '[clusters.a.run]\nstall-after = ["5m"]\n',
     "cluster a: run.stall-after: must be a string, a number, true or false"),
    ("second-cluster-bad", ONE + '[clusters.b]\nbootstrap-servers = "k2"\n', "cluster b: bootstrap-servers: 'k2' has no port..."),
]


@pytest.mark.parametrize("text, message", [pytest.param(t, m, id=i) for i, t, m in BAD])
def test_bad_files(text, message):
    with pytest.raises(BadInput) as raised:
        parsed(text)
    if message.endswith("..."):
        assert str(raised.value).startswith(message[:-3])
    else:
        assert str(raised.value) == message


def test_an_unknown_cluster_names_the_known_ones():
    fleet_of_two = parsed(ONE + '[clusters.b]\nbootstrap-servers = "k2:9092"\n')
    with pytest.raises(BadInput, match=r"^--cluster 'c': no such cluster in the file \(it names a, b\)$"):
        fleet_of_two.cluster("c")


def test_every_flag_a_cluster_may_set_is_a_flag_of_run():
    options = {o for a in fleet.run_parser(build_parser())._actions for o in a.option_strings}
    assert {f"--{name}" for name in fleet_file.RUN_FLAGS} <= options


def test_every_key_is_parsed_from_the_one_table():
    tables = {key.table for key in fleet_file.KEYS}
    assert tables == {fleet_file.CLUSTER_TABLE, fleet_file.PROFILE_TABLE, fleet_file.RUN_TABLE}
    assert [k.name for k in fleet_file.KEYS if k.required] == [fleet_file.SERVERS, fleet_file.COMMAND_CONFIG]


# --- any document: a Fleet or one BadInput, never another exception ------------------------------------------------

def toml_value(value):
    """`value` as a TOML inline value (json's strings are TOML's basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


scalars = (st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
           | st.sampled_from(["k1:9092", "k1", "5s", "25h", "all", "some", "", "client.properties", "p"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(
    st.sampled_from(["region", "a-b", "cluster", "trigger-interval", "dry-run", "x"]), inner, max_size=2), max_leaves=4)
servers = st.sampled_from(["k1:9092", "k1:9092,[::1]:9093"]) | values
run_flags = st.dictionaries(st.sampled_from(["trigger-interval", "dry-run", "throttle-cleanup", "metrics-port"]),
                            st.sampled_from(["5s", "25h", "all", "some", True, 3]) | values, max_size=2)
cluster_tables = st.fixed_dictionaries({"bootstrap-servers": servers}, optional={
    "command-config": st.just("c.properties") | values, "client-profile": st.sampled_from(["p", "q"]) | values,
    "labels": st.dictionaries(st.sampled_from(["region", "a-b", "cluster"]), st.just("eu") | values, max_size=2) | values,
    "run": run_flags | values})
clusters = st.dictionaries(st.sampled_from(["a", "b", "c"]), cluster_tables, min_size=1, max_size=3)
profiles = st.dictionaries(st.sampled_from(["p", "q"]), st.fixed_dictionaries(
    {"command-config": st.just("p.properties") | values}), max_size=2)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(clusters=clusters, profiles=profiles)
def test_any_document_is_a_fleet_or_one_bad_input(clusters, profiles):
    document = {"clusters": clusters, "client-profiles": profiles}
    text = "".join(f"{json.dumps(section)} = {toml_value(tables)}\n" for section, tables in document.items())
    try:
        fleet_of_the_text = parsed(text)
    except BadInput as error:
        assert str(error)
        return
    for cluster in fleet_of_the_text.clusters.values():  # what a good file gives is what the flags would take
        CHECKS.servers(cluster.bootstrap_servers)
        assert set(cluster.run_flags) <= set(fleet_file.RUN_FLAGS)
        assert all(isinstance(value, str) for value in cluster.labels.values())
