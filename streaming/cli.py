"""`reassign-monitor`: the operator CLI. Each subcommand lives in streaming/commands/<name>.py with
`add_arguments(parser)` and `run(args) -> exit code`; modules load only when their command runs,
so `progress` starts without importing Spark.

Exit codes (docs/cli.md "Exit codes"): 0 success/complete, 1 still in progress (verify), 2 bad input or usage,
3 cluster unreachable or request refused, 4 a bug (one line ending "run with --debug").
Every error is exactly one line on stderr, control characters escaped (streaming.vocabulary.echo), so echoed input
cannot forge a second line; --debug adds the traceback. Flags every command shares are checked while
parsing (streaming.commands.flags) and the --command-config file is read before the command runs: bad input
never reaches the cluster.
"""

import argparse
import importlib
import os
import sys
import traceback

from streaming.commands import fleet, flags
from streaming.vocabulary import client_config, defaults
from streaming.vocabulary.echo import one_line
from streaming.vocabulary.errors import (EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED, EXIT_READER_GONE, MonitorError,
                                         bug_line)

COMMANDS = {
    "progress": "One-shot progress report of ongoing reassignments (live with --watch).",
    "execute": "Start a reassignment with replication throttles that are removed when it completes.",
    "verify": "Check completion; remove this tool's throttles for what completed.",
    "cancel": "Cancel reassignments (revert to the original replicas).",
    "pause": "Stop submitting a plan's partitions (what moves keeps moving).",
    "resume": "Submit a plan's partitions again (--wait: advance it in the foreground until done).",
    "run": "The streaming job: progress to a Kafka topic and Prometheus, throttle cleanup.",
    "dashboards": "Write the Grafana dashboard JSON.",
}
DISTRIBUTION = "kafka-reassign-monitor"
DOOR_COMMANDS = {"progress", "execute", "verify", "cancel", "pause", "resume"}  # run(args, connect): their admin is a parameter
NO_CLUSTER = {"dashboards"}
NO_OUTPUT = {"run"}  # the job prints log lines only: its outputs are the progress topic and /metrics


def _module(name):
    return importlib.import_module(f"streaming.commands.{name}")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: one line, exit 2
        self.exit(EXIT_BAD_INPUT, f"{one_line(f'{self.prog}: error: {message}')}\n")


class _Version(argparse.Action):
    """Looks the version up only when asked: importlib.metadata costs ~30 ms on every command otherwise."""

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            shown = version(DISTRIBUTION)  # pyproject.toml is its one definition
        except PackageNotFoundError:  # run from a checkout that was never installed
            shown = "unknown (not installed)"
        print(f"{parser.prog} {shown}")
        parser.exit(0)


def build_parser(load=_module):
    parser = _Parser(prog="reassign-monitor", description="Progress, alerts and safe throttle cleanup for Kafka partition reassignments.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, help_text in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        if name not in NO_CLUSTER:
            target = sub.add_mutually_exclusive_group(required=True)
            target.add_argument("--bootstrap-server", type=flags.bootstrap_servers, metavar="HOST:PORT[,...]",
                                help="brokers to connect to, each with its port (as Kafka's tools take them)")
            fleet.add_arguments(sub, target)
            sub.add_argument("--command-config", metavar="FILE",
                             help="Kafka client properties, as Kafka's tools take them: security.protocol, sasl.*, ssl.* stores")
            sub.add_argument("--timeout", type=flags.timeout, default=defaults.TIMEOUT_S, metavar="SECONDS",
                             help="bound on reaching the cluster (default 10; 500ms, 30s, 2m also work)")
        if name not in NO_OUTPUT:
            sub.add_argument("--output", choices=("table", "json"), default="table",
                             help="what to print: text or one JSON document")
        sub.add_argument("--debug", action="store_true", help="show tracebacks")
        load(name).add_arguments(sub)
    return parser


def check_shared(args):
    """What the parser cannot check alone: the client config file (and the one note about its ignored keys)."""
    if getattr(args, "command_config", None) is not None:
        note = client_config.ignored_note(client_config.read_config(args.command_config, args.config_source))
        if note:
            print(one_line(f"reassign-monitor {args.command}: note: {note}"), file=sys.stderr)


def main(argv=None, connect=None):
    """The CLI. `connect(args) -> ClusterReader` opens the door to the cluster for the commands that use
    one (DOOR_COMMANDS): the Kafka admin by default; tests pass a fake cluster made of plain data."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command not in NO_CLUSTER:
            args = fleet.chosen(args, argv, parser)  # --clusters FILE --cluster NAME: as if its flags were given
        check_shared(args)
        command = _module(args.command)
        if args.command in DOOR_COMMANDS:
            return command.run(args, connect or _module("reassign_common").connect)
        return command.run(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `progress --watch 5 --output json | head`: stop quietly, nothing more to say
        # Python flushes stdout again at exit, which would fail the same way: point it at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_READER_GONE
    except Exception as error:  # MonitorErrors are ours; anything else is a bug, still reported in one line
        if args.debug:
            traceback.print_exception(error)
        if isinstance(error, MonitorError):
            message, code = str(error), error.exit_code
        else:
            message, code = bug_line(error), EXIT_BUG
    print(one_line(f"reassign-monitor {args.command}: error: {message}"), file=sys.stderr)
    return code

if __name__ == "__main__":
    sys.exit(main())
