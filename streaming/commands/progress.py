"""`reassign-monitor progress [--reassignment-json-file F] [--watch SECONDS]`: the one-shot report, or a
live one. Only I/O lives here (poll, print, sleep); the rows come from streaming.core.kip179 and the
rendering from streaming.core.report. Nothing on the one-shot path imports Spark, a dataframe library,
grafanalib or rich (the live view's); its start-up is measured by bench/startup.py.

Exit codes: 0 when nothing reported is still moving, 1 while something is (like `--verify`), 2 bad
input, 3 cluster unreachable or a request refused. A file that lists no partition reports nothing: 0.
"""

import time
from contextlib import nullcontext

# The report's modules (the progress core: some 15 ms, a sixth of `--help`) are imported inside the
# functions that use them: every command's parser is built on each invocation, and `--help` or a usage
# error should not wait for them.

from streaming.vocabulary import durations, reassignment_file
from streaming.commands import reassign_common as common
from streaming.vocabulary.errors import EXIT_IN_PROGRESS, EXIT_OK
from streaming.vocabulary.kafka_apis import REQUIRED_APIS

# A redraw faster than a poll can answer only repeats it; slower than a day is not watching.
WATCH_BOUNDS_S = (0.1, durations.DAY_S)
# Lines of the live view that are not replica rows: title, table rules and header, summary, warnings.
LIVE_CHROME_LINES = 9


def add_arguments(parser):
    parser.add_argument("--reassignment-json-file", metavar="FILE",
                        help="report every replica this file lists, with KIP-179 statuses "
                             "(default: every ongoing reassignment)")
    parser.add_argument("--watch", type=durations.flag(*WATCH_BOUNDS_S), metavar="SECONDS",
                        help="redraw every SECONDS until nothing moves (with --output json: one document per line)")


def _rows(admin, moves):
    """This poll's snapshot and report rows."""
    from streaming.core.kip179 import listed_replicas, ongoing_replicas

    topics = [m.topic for m in moves] if moves is not None else []
    snapshot = common.strict_poll(admin, topics, needs=REQUIRED_APIS, throttles=False)
    rows = ongoing_replicas(snapshot) if moves is None else listed_replicas(moves, snapshot)
    return snapshot, rows


def _exit_code(report):
    return EXIT_IN_PROGRESS if report.in_progress else EXIT_OK


def _once(admin, moves, source, output):
    from streaming.core.report import build, diagnose, to_json, to_text

    snapshot, rows = _rows(admin, moves)
    report = build(snapshot, diagnose(snapshot, rows), source)
    print(to_json(report) if output == "json" else to_text(report), flush=True)
    return _exit_code(report)


def _watch(admin, moves, source, output, interval_s):
    """Poll every `interval_s` (measured from the start of each poll) until nothing moves."""
    from rich.console import Console
    from rich.live import Live

    from streaming.core import history
    from streaming.core.report import PENDING_REASON_AFTER_POLLS, build, diagnose, to_json, to_table, with_history

    memory = history.empty_memory()
    live = Live(console=Console(), auto_refresh=False) if output == "table" else None
    with live if live else nullcontext():
        while True:
            started = time.monotonic()
            snapshot, rows = _rows(admin, moves)
            memory, rows = with_history(memory, rows, snapshot.ts_ms)
            rows = diagnose(snapshot, rows, PENDING_REASON_AFTER_POLLS * interval_s)
            report = build(snapshot, rows, source)
            if live:
                title = (f"{time.strftime('%H:%M:%S', time.localtime(snapshot.ts_ms / 1000))}  cluster "
                         f"{snapshot.cluster_id}  every {interval_s:g}s (Ctrl-C stops)")
                # Only what fits the terminal (worst first): rendering thousands of rows takes seconds.
                rows_that_fit = live.console.height - LIVE_CHROME_LINES - len(report.errors)
                live.update(to_table(report, title=title, max_rows=rows_that_fit), refresh=True)
            else:
                print(to_json(report), flush=True)
            if not report.in_progress:
                return _exit_code(report)
            time.sleep(max(0.0, interval_s - (time.monotonic() - started)))


def run(args, connect):
    moves = None
    if args.reassignment_json_file is not None:  # an empty path is a bad path, not "no file"
        moves = reassignment_file.load(args.reassignment_json_file, allow_empty=True)
    admin = connect(args)
    # The report loads only once the input is known good and the cluster answered.
    from streaming.core.report import FROM_FILE, ONGOING

    source = ONGOING if moves is None else FROM_FILE
    try:
        if args.watch:
            return _watch(admin, moves, source, args.output, args.watch)
        return _once(admin, moves, source, args.output)
    finally:
        admin.close()
