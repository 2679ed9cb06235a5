"""`reassign-monitor`: the operator CLI. Each subcommand lives in streaming/commands/<name>.py with
`add_arguments(parser)` and `run(args) -> exit code`; modules load only when their command runs,
so `progress` starts without importing Spark.

Exit codes (DESIGN.md): 0 success/complete, 1 still in progress (verify), 2 bad input or usage,
3 cluster unreachable or request refused. Errors are one line on stderr; --debug shows the traceback.
"""

import argparse
import importlib
import sys
import traceback

from streaming.errors import EXIT_BAD_INPUT, EXIT_CLUSTER, MonitorError

COMMANDS = {
    "progress": "One-shot progress report of ongoing reassignments (live with --watch).",
    "execute": "Start a reassignment with replication throttles that are removed when it completes.",
    "verify": "Check completion; remove this tool's throttles for what completed.",
    "cancel": "Cancel reassignments (revert to the original replicas).",
    "run": "The streaming job: progress to a Kafka topic and Prometheus, throttle cleanup.",
    "dashboards": "Write the Grafana dashboard JSON.",
}
NO_CLUSTER = {"dashboards"}


def _module(name):
    return importlib.import_module(f"streaming.commands.{name}")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: one line, exit 2
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser(load=_module):
    parser = _Parser(prog="reassign-monitor", description="Progress, alerts and safe throttle cleanup for Kafka partition reassignments.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for name, help_text in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        if name not in NO_CLUSTER:
            sub.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
            sub.add_argument("--command-config", metavar="FILE",
                             help="client properties: security.protocol, sasl.*, ssl.* locations")
            sub.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                             help="bound on reaching the cluster (default 10)")
        sub.add_argument("--output", choices=("table", "json"), default="table")
        sub.add_argument("--debug", action="store_true", help="show tracebacks")
        load(name).add_arguments(sub)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return _module(args.command).run(args)
    except MonitorError as error:
        if args.debug:
            traceback.print_exc()
        print(f"reassign-monitor {args.command}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # the promise is one line, never a traceback, whatever broke
        if args.debug:
            traceback.print_exc()
        print(f"reassign-monitor {args.command}: error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_CLUSTER


if __name__ == "__main__":
    sys.exit(main())
