"""`--clusters FILE --cluster NAME`: one cluster of a fleet file (streaming.vocabulary.fleet_file) in place of
`--bootstrap-server` and `--command-config`, for every command that takes them (docs/operations.md "Several
clusters").

The named cluster's servers and client file become the command's, exactly as if given by flags, so every rule of
the one-cluster form holds unchanged. For `run`, the cluster's `[clusters.NAME.run]` flags go in front of the
command line's, which argparse reads after them: a flag given on the command line wins.
"""

import argparse
import os

from streaming.commands import flags
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput, reading_input

# streaming.vocabulary.fleet_file (and tomllib) load only when --clusters is given: every command builds this
# parser, and the one-cluster form should not wait for them.

CONFIG_FLAG = "--command-config"  # how messages name the client file of the one-cluster form
NEEDS_CLUSTER = "--clusters needs --cluster NAME: which cluster of the file (only `run` watches them all)"


def add_arguments(parser, target):
    """--clusters into `target` (the required choice beside --bootstrap-server), --cluster into `parser`."""
    target.add_argument("--clusters", metavar="FILE",
                        help="a fleet file (TOML) naming clusters, with --cluster instead of --bootstrap-server and "
                             "--command-config (docs/operations.md \"Several clusters\")")
    parser.add_argument("--cluster", metavar="NAME", help="which cluster of --clusters FILE")
    parser.add_argument("--cluster-name", type=flags.cluster_name, metavar="NAME",
                        help="the cluster's name in the `cluster` label of every metric and the `cluster` field of "
                             "every record (default: the first address of --bootstrap-server; with --clusters, "
                             "the cluster's name in the file)")
    parser.set_defaults(config_source=CONFIG_FLAG)


def _bootstrap_servers(text):
    try:
        return flags.bootstrap_servers(text)
    except argparse.ArgumentTypeError as error:
        raise BadInput(str(error)) from None


def checks(run_parser):
    """The fleet file's checks: --bootstrap-server's parser, and `run_parser`'s parser of each flag."""
    from streaming.vocabulary import fleet_file

    return fleet_file.Checks(servers=_bootstrap_servers, run_flag=_run_flag_check(run_parser))


def _run_flag_check(run_parser):
    """(name, value) -> None, raising BadInput as `run --NAME VALUE` would refuse the value."""
    actions = {option[2:]: action for action in run_parser._actions for option in action.option_strings}

    def check(name, value):
        action = actions[name]
        if action.nargs == 0:
            if not isinstance(value, bool):
                raise BadInput(f"true or false (--{name} takes no value), not {shown(value)!r}")
            return
        if isinstance(value, bool):
            raise BadInput(f"a value, as --{name} takes one, not {str(value).lower()}")
        try:
            parsed = action.type(str(value)) if action.type else str(value)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as error:
            raise BadInput(str(error) or f"{shown(value)!r} is not a value of --{name}") from None
        if action.choices is not None and parsed not in action.choices:
            raise BadInput(f"{shown(value)!r} is not one of {', '.join(map(str, action.choices))}")

    return check


def _tokens(run_flags):
    """The command-line words of a cluster's run flags: `--name=value`, `--name` for true, nothing for false."""
    words = []
    for name, value in run_flags.items():
        if value is True:
            words.append(f"--{name}")
        elif value is not False:
            words.append(f"--{name}={value}")
    return words


def run_parser(parser):
    """The `run` subcommand's parser inside the CLI's `parser`."""
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]


def load(path, name, run_parser):
    """The cluster `name` of the fleet file at `path`; anything wrong with the file (all of it, whichever cluster
    is named) or an unknown name: one BadInput naming the file."""
    from streaming.vocabulary import fleet_file
    from streaming.vocabulary.operator_file import read_text

    with reading_input(f"--clusters {shown(path, 200)}"):
        text = read_text(path, fleet_file.MAX_FILE_BYTES)
        return fleet_file.parse(text, os.path.dirname(path), checks(run_parser)).cluster(name)


def chosen(args, argv, parser):
    """`args` for one cluster: unchanged for --bootstrap-server; for --clusters FILE --cluster NAME, the cluster's
    servers and client file in place of the flags, and for `run`, `argv` parsed again by `parser` behind the
    cluster's run flags. Usage problems and a bad file: BadInput,
    before anything connects."""
    if args.clusters is None:
        if args.cluster is not None:
            raise BadInput("--cluster names a cluster of --clusters FILE: give --clusters too")
        return args
    if args.command_config is not None:
        raise BadInput("--command-config cannot go with --clusters: the file names each cluster's client config")
    if args.cluster_name is not None:
        raise BadInput("--cluster-name cannot go with --clusters: a cluster of the file is called by its name there")
    if args.cluster is None:
        if args.command != "run":
            raise BadInput(NEEDS_CLUSTER)
        args.fleet = lambda: every_cluster(args.clusters, args, argv, parser)
        args.fleet()  # the whole file checked now, before anything starts
        return args
    return _of_cluster(args, argv, parser, load(args.clusters, args.cluster, run_parser(parser)))


def _of_cluster(args, argv, parser, cluster):
    named = f"--clusters {shown(args.clusters, 200)}: cluster {cluster.name}"
    if args.command == "run" and cluster.run_flags:
        alone = args
        args = parser.parse_args([argv[0], *_tokens(cluster.run_flags), *argv[1:]])
        _check_run_flags_together(args, alone, named)
    else:
        args = argparse.Namespace(**vars(args))
    args.cluster = cluster.name
    args.bootstrap_server, args.command_config = cluster.bootstrap_servers, cluster.command_config
    args.config_source = f"{named}: {cluster.config_key}"
    args.labels = tuple(cluster.labels.items())
    return args


def every_cluster(path, args, argv, parser):
    """`run`'s args for each cluster of the fleet file at `path` ([args], in the file's order), as `--cluster NAME`
    would make them. The file is read anew at each call (a fleet job's reload)."""
    from streaming.vocabulary import fleet_file
    from streaming.vocabulary.operator_file import read_text

    with reading_input(f"--clusters {shown(path, 200)}"):
        text = read_text(path, fleet_file.MAX_FILE_BYTES)
        fleet = fleet_file.parse(text, os.path.dirname(path), checks(run_parser(parser)))
    return [_of_cluster(args, argv, parser, cluster) for cluster in fleet.clusters.values()]


def _check_run_flags_together(args, alone, named):
    """Flags that are good one by one may not go together (--throttle-min without --throttle auto): when the
    cluster's flags make the job's flags refused, the line names the cluster; the command line's own problems
    are said by `run` as they are without a fleet file."""
    from streaming.commands.run import config_from
    from streaming.vocabulary.fleet_file import RUN

    try:
        config_from(args)
    except BadInput as error:
        try:
            config_from(alone)
        except BadInput:
            return
        raise BadInput(f"{named}: {RUN}: {error}") from None
