"""The fleet file (`--clusters FILE`): the clusters an operator runs, in TOML, in the shape of Burrow's named
cluster sections and client profiles (docs/operations.md "Several clusters"; every key: the reference there,
rendered from KEYS below).

    [client-profiles.sasl-prod]
    command-config = "/etc/reassign-monitor/prod.properties"

    [clusters.prod-eu]
    bootstrap-servers = "kafka1.eu:9092,kafka2.eu:9092"
    client-profile = "sasl-prod"
    labels = { region = "eu-west-1" }

    [clusters.prod-eu.run]
    trigger-interval = "5s"

`parse` is pure: the file's text in, a Fleet out, or one BadInput naming the cluster (or profile) and the key.
The values the file shares with the command line are checked by the command line's own parsers, which the
caller passes (`Checks`), so the file accepts exactly what the flags accept. Paths are only joined to the file's
directory here; reading what they name is the caller's.
"""

import os
import re
import tomllib
from dataclasses import dataclass
from typing import Callable

from streaming.vocabulary.cluster_name import CLUSTER, NAME, NAME_RULE
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput

MAX_FILE_BYTES = 1024 * 1024
# A cluster's or profile's name follows streaming.vocabulary.cluster_name.NAME: a cluster's name is its `cluster`
# label and record field.
# Labels become Prometheus labels: their names follow Prometheus' rule, without its reserved `__` prefix.
LABEL_NAME = re.compile(r"(?!__)[a-zA-Z_][a-zA-Z0-9_]{0,63}")
MAX_LABEL_VALUE_LENGTH = 256
RESERVED_LABELS = frozenset({CLUSTER})  # the cluster's name is the `cluster` label

CLUSTERS, PROFILES = "clusters", "client-profiles"
SERVERS, COMMAND_CONFIG, PROFILE, LABELS, RUN = "bootstrap-servers", "command-config", "client-profile", "labels", "run"
SECTION_WORD = {CLUSTERS: "cluster", PROFILES: "client profile"}  # how messages name one table of each section
CLUSTER_TABLE, PROFILE_TABLE, RUN_TABLE = f"[{CLUSTERS}.NAME]", f"[{PROFILES}.NAME]", f"[{CLUSTERS}.NAME.{RUN}]"

# The flags of `run` a cluster may set for itself. The others are the whole job's (its Spark master, checkpoint,
# /metrics and stdout), given on the command line only.
RUN_FLAGS = ("timeout", "progress-topic", "ownership-topic", "trigger-interval", "stall-after", "rate-window",
             "throttle-cleanup", "dry-run", "throttle", "throttle-min", "throttle-max", "throttle-schedule",
             "throttle-interval", "throttle-guard-url", "throttle-guard")


@dataclass(frozen=True)
class Key:
    table: str
    name: str
    value: str
    meaning: str
    required: bool = False


KEYS = (
    Key(CLUSTER_TABLE, SERVERS, "string `HOST:PORT[,...]`",
        "the cluster's brokers, exactly as `--bootstrap-server` takes them", required=True),
    Key(CLUSTER_TABLE, COMMAND_CONFIG, "string: a file",
        "its Kafka client properties, as `--command-config` takes them; a relative path is relative to the fleet "
        f"file's directory. Not with `{PROFILE}`; with neither, plaintext without a client file"),
    Key(CLUSTER_TABLE, PROFILE, f"string: a name of `[{PROFILES}]`",
        f"the shared client profile whose `{COMMAND_CONFIG}` it uses"),
    Key(CLUSTER_TABLE, LABELS, "table of strings",
        f"labels of the cluster (Prometheus label names; not `{'`, `'.join(sorted(RESERVED_LABELS))}`, which is the "
        "cluster's name): the labels of its `kafka_reassignment_cluster_info` series"),
    Key(CLUSTER_TABLE, RUN, "table", f"this cluster's values of `run` flags: `{RUN_TABLE}` below"),
    Key(RUN_TABLE, "FLAG", "as on the command line: a string (`\"5s\"`, `\"200MB\"`) or number; `true`/`false` "
                           "for a flag without value",
        "the value `run --FLAG` would take, checked by the same parser; a flag given on the command line wins. "
        "FLAG: one of the flags below"),
    Key(PROFILE_TABLE, COMMAND_CONFIG, "string: a file",
        "Kafka client properties shared by the clusters naming this profile (relative: to the fleet file's "
        "directory)", required=True),
)


@dataclass(frozen=True)
class Checks:
    """The command line's own parsers, for the values the file shares with it; each raises BadInput saying
    what is wrong with the value."""
    servers: Callable[[str], object]  # --bootstrap-server's
    run_flag: Callable[[str, object], object]  # (flag name without --, value): run's parser of that flag


@dataclass(frozen=True)
class Cluster:
    name: str
    bootstrap_servers: str
    command_config: str | None  # the path, joined to the fleet file's directory when relative
    config_key: str  # where the file gives it, for messages: "command-config" or "client-profile NAME: command-config"
    labels: dict
    run_flags: dict  # flag name (without --) -> value as written


@dataclass(frozen=True)
class Fleet:
    clusters: dict  # name -> Cluster, in the file's order

    def cluster(self, name):
        if name not in self.clusters:
            names = ", ".join(self.clusters)
            raise BadInput(f"--cluster {shown(name)!r}: no such cluster in the file (it names {shown(names, 200)})")
        return self.clusters[name]


def keys_of(table):
    return {key.name: key for key in KEYS if key.table == table}


# tomllib's words for a table declared twice: for a cluster, said as such.
_TWICE = re.compile(rf"Cannot declare \('{CLUSTERS}', '(.*)'\) twice (\(at line \d+, column \d+\))")


def _toml(text):
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        twice = _TWICE.fullmatch(str(error))
        if twice:
            raise BadInput(f"cluster {shown(twice.group(1))!r} is defined twice {twice.group(2)}") from None
        raise BadInput(f"not TOML: {error}") from None


def _known_keys(table, where, allowed):
    unknown = [key for key in table if key not in allowed]
    if unknown:
        raise BadInput(f"{where}: unknown key {shown(unknown[0])!r} (known: {', '.join(allowed)})")
    missing = [key.name for key in allowed.values() if key.required and key.name not in table]
    if missing:
        raise BadInput(f"{where}: {missing[0]} is missing")


def _named_tables(document, section):
    tables = document.get(section, {})
    if not isinstance(tables, dict):
        raise BadInput(f"{section}: must be tables ([{section}.NAME])")
    for name, table in tables.items():
        if not NAME.fullmatch(name):
            raise BadInput(f"{SECTION_WORD[section]} name {shown(name)!r}: must be {NAME_RULE}")
        if not isinstance(table, dict):
            raise BadInput(f"{SECTION_WORD[section]} {name}: must be a table ([{section}.{name}])")
    return tables


def _path(value, directory, where):
    if not isinstance(value, str) or not value:
        raise BadInput(f"{where}: must be a non-empty string (a file)")
    return os.path.join(directory, value)


def _checked(check, *values, where):
    try:
        return check(*values)
    except BadInput as error:
        raise BadInput(f"{where}: {error}") from None


def _labels(labels, where):
    if not isinstance(labels, dict):
        raise BadInput(f"{where}: must be a table of strings")
    for name, value in labels.items():
        if not LABEL_NAME.fullmatch(name) or name in RESERVED_LABELS:
            raise BadInput(f"{where}: {shown(name)!r} is not a label name (letters, digits and '_', not starting with "
                           f"a digit or '__'; {', '.join(sorted(RESERVED_LABELS))} is the cluster's name)")
        if not isinstance(value, str) or len(value) > MAX_LABEL_VALUE_LENGTH:
            raise BadInput(f"{where}.{name}: must be a string of at most {MAX_LABEL_VALUE_LENGTH} characters")
    return dict(labels)


def _run_flags(flags, where, check):
    if not isinstance(flags, dict):
        raise BadInput(f"{where}: must be a table of flags")
    for name, value in flags.items():
        if name not in RUN_FLAGS:
            raise BadInput(f"{where}: {shown(name)!r} is not a flag a cluster may set (one of {', '.join(RUN_FLAGS)}; "
                           "the others are the whole job's: give them on the command line)")
        if not isinstance(value, (str, int, float, bool)):
            raise BadInput(f"{where}.{name}: must be a string, a number, true or false")
        _checked(check, name, value, where=f"{where}.{name}")
    return dict(flags)


def _cluster(name, table, profiles, directory, checks):
    where = f"{SECTION_WORD[CLUSTERS]} {name}"
    _known_keys(table, where, keys_of(CLUSTER_TABLE))
    servers = table[SERVERS]
    if not isinstance(servers, str):
        raise BadInput(f"{where}: {SERVERS}: must be a string HOST:PORT[,...], as --bootstrap-server takes it")
    _checked(checks.servers, servers, where=f"{where}: {SERVERS}")
    if COMMAND_CONFIG in table and PROFILE in table:
        raise BadInput(f"{where}: {COMMAND_CONFIG} and {PROFILE} exclude each other: give one")
    command_config, config_key = None, COMMAND_CONFIG
    if COMMAND_CONFIG in table:
        command_config = _path(table[COMMAND_CONFIG], directory, f"{where}: {COMMAND_CONFIG}")
    elif PROFILE in table:
        profile = table[PROFILE]
        if not isinstance(profile, str) or profile not in profiles:
            known = ", ".join(profiles) or "none"
            raise BadInput(f"{where}: {PROFILE}: no profile {shown(profile)!r} in [{PROFILES}] (it has {shown(known, 200)})")
        command_config, config_key = profiles[profile], f"{PROFILE} {profile}: {COMMAND_CONFIG}"
    return Cluster(name=name, bootstrap_servers=servers, command_config=command_config, config_key=config_key,
                   labels=_labels(table.get(LABELS, {}), f"{where}: {LABELS}"),
                   run_flags=_run_flags(table.get(RUN, {}), f"{where}: {RUN}", checks.run_flag))


def parse(text, directory, checks):
    """The Fleet of a fleet file's `text`; `directory`: the file's, which relative paths start from. One
    BadInput for the first problem, naming the cluster (or profile) and the key."""
    document = _toml(text)
    unknown = [key for key in document if key not in (CLUSTERS, PROFILES)]
    if unknown:
        raise BadInput(f"unknown key {shown(unknown[0])!r} at the top (known: [{CLUSTERS}.NAME], [{PROFILES}.NAME])")
    profiles = {}
    for name, table in _named_tables(document, PROFILES).items():
        where = f"{SECTION_WORD[PROFILES]} {name}"
        _known_keys(table, where, keys_of(PROFILE_TABLE))
        profiles[name] = _path(table[COMMAND_CONFIG], directory, f"{where}: {COMMAND_CONFIG}")
    clusters = _named_tables(document, CLUSTERS)
    if not clusters:
        raise BadInput(f"no cluster: name at least one as [{CLUSTERS}.NAME]")
    return Fleet({name: _cluster(name, table, profiles, directory, checks) for name, table in clusters.items()})
