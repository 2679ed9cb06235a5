"""`reassign-monitor progress [--reassignment-json-file F] [--watch SECONDS] | --request-id ID [--watch SECONDS]`:
the one-shot report, or a live one, or a plan's, once or live (`--request-id`; the plans running or paused follow
the one-shot table too). Only I/O lives here (poll, print, sleep); the rows come from streaming.core.kip179 and the
rendering from streaming.core.progress_report. Nothing on the one-shot path imports Spark, a dataframe library,
grafanalib or rich (the live view's); its start-up is measured by bench/startup.py.

Exit codes: 0 when nothing reported is still moving, 1 while something is (like `--verify`), 2 bad
input, 3 cluster unreachable or a request refused. A file that lists no partition reports nothing: 0.
A plan: 1 while it is running or paused, else 0; `--watch` redraws until it is neither (so it ends 0).
"""

import importlib
import json
import sys
import threading
import time
from contextlib import nullcontext

# The report's modules (the progress core: some 15 ms, a sixth of `--help`) are imported inside the
# functions that use them: every command's parser is built on each invocation, and `--help` or a usage
# error should not wait for them.

from streaming.vocabulary import durations, reassignment_file
from streaming.vocabulary.cluster_name import name_of
from streaming.commands import flags
from streaming.commands import reassign_common as common
from streaming.vocabulary.errors import EXIT_IN_PROGRESS, EXIT_OK, BadInput
from streaming.vocabulary.kafka_apis import REQUIRED_APIS
from streaming.vocabulary.states import PlanState

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
    parser.add_argument("--request-id", type=flags.request_id, metavar="ID",
                        help="report the plan with this request id (execute --max-partitions-in-flight): partitions "
                             "pending / in flight / done / failed, bytes, rate, ETA; exit 1 while it is running or "
                             "paused (with --watch: until it is neither)")
    common.add_ownership_topic(parser)


def _rows(admin, moves):
    """This poll's snapshot and report rows."""
    topics = [m.topic for m in moves] if moves is not None else []
    snapshot = common.strict_poll(admin, topics, needs=REQUIRED_APIS, throttles=False)
    from streaming.core.kip179 import listed_replicas, ongoing_replicas

    rows = ongoing_replicas(snapshot) if moves is None else listed_replicas(moves, snapshot)
    return snapshot, rows


def _cluster(args):
    """The cluster's name in the JSON document (streaming.vocabulary.cluster_name)."""
    return name_of(flags.given_cluster_name(args), args.bootstrap_server)


def _exit_code(report):
    return EXIT_IN_PROGRESS if report.in_progress else EXIT_OK


def _once(admin, moves, args):
    snapshot, rows = _rows(admin, moves)
    from streaming.core.progress_report import FROM_FILE, ONGOING, build, diagnose, to_json, to_text

    source = ONGOING if moves is None else FROM_FILE
    rows = diagnose(snapshot, rows)
    report = build(snapshot, rows, source, _cluster(args))
    print(to_json(report) if args.output == "json" else to_text(report), flush=True)
    if moves is None and args.output != "json":  # the JSON document's shape is the report's alone
        _active_plans(admin, args, snapshot, rows)
    return _exit_code(report)


def _plan_row(admin, args, request_id, snapshot, rows, ledger):
    """A plan's report row (streaming.control.plans.report) as read now, without acting on it."""
    from streaming.control.plans.step import observe
    from streaming.control.ownership.leases import holder_of
    from streaming.control.plans.report import plan_row
    from streaming.control.plans.advancer import PlanStatus

    step = observe(lambda topics: common.strict_poll(admin, topics, needs=REQUIRED_APIS, throttles=False),
                   ledger, request_id)
    lease = holder_of(ledger.leases(request_id))
    holder = lease.holder if lease is not None and lease.until_ms > snapshot.ts_ms else None
    status = PlanStatus(request_id, step.plan.state, step.counts, advanced_by=holder, plan=step.plan, seen=step)
    return plan_row(status, rows.take(rows["moving"]), snapshot.tables, snapshot.ts_ms)


def _active_plans(admin, args, snapshot, rows):
    """One line per running or paused plan after the report, when the ownership topic can be read (progress
    needs no grant on it: without one, a note says the plans are not shown)."""
    from streaming.control.plans.report import describe_plan

    try:
        ledger = common.open_ledger(args, admin)
        for request_id in [p.request_id for p in ledger.plans() if p.state in (PlanState.RUNNING, PlanState.PAUSED)]:
            print(describe_plan(_plan_row(admin, args, request_id, snapshot, rows, ledger)), flush=True)
    except Exception as error:  # reading plans is optional here: the report above stands
        print(f"Note: plans not shown ({args.ownership_topic}: {error})", file=sys.stderr, flush=True)


def _plan_exit_code(row):
    return EXIT_IN_PROGRESS if row["state"] in (PlanState.RUNNING, PlanState.PAUSED) else EXIT_OK


def _plan(admin, args):
    """`progress --request-id ID`: the plan's report; exit 1 while it is running or paused."""
    from streaming.control.plans.report import describe_plan
    from streaming.core.progress_report import diagnose

    ledger = common.open_ledger(args, admin)
    snapshot, rows = _rows(admin, None)
    row = _plan_row(admin, args, args.request_id, snapshot, diagnose(snapshot, rows), ledger)
    print(json.dumps(row, separators=(",", ":")) if args.output == "json" else describe_plan(row), flush=True)
    return _plan_exit_code(row)


def _redraw(output, interval_s, frame):
    """Call `frame(rows_that_fit)` every `interval_s` (measured from the start of each call) until it says done;
    it returns (view, exit code or None). Table output redraws one live view (`rows_that_fit`: what the terminal
    holds, worst rows first: rendering thousands takes seconds); JSON (`rows_that_fit` None) prints each view
    as a line."""
    from rich.console import Console
    from rich.live import Live

    live = Live(console=Console(), auto_refresh=False) if output == "table" else None
    with live if live else nullcontext():
        while True:
            started = time.monotonic()
            view, code = frame(live.console.height - LIVE_CHROME_LINES if live else None)
            if live:
                live.update(view, refresh=True)
            else:
                print(view, flush=True)
            if code is not None:
                return code
            time.sleep(max(0.0, interval_s - (time.monotonic() - started)))


def _title(snapshot, what, interval_s):
    return (f"{time.strftime('%H:%M:%S', time.localtime(snapshot.ts_ms / 1000))}  {what}  every {interval_s:g}s "
            f"(Ctrl-C stops)")


def _watch_plan(admin, args, interval_s):
    """`progress --request-id ID --watch S`: the plan's line and its moving replicas redrawn every `interval_s`
    (with --output json: its row, one document per line) until it is neither running nor paused; then exit
    as `progress --request-id` does. Rates and ETAs come from the controller's own history, as for moves."""
    import numpy as np
    from rich.console import Group
    from rich.text import Text

    from streaming.control.ownership.store import find_plan
    from streaming.core import history
    from streaming.control.plans.report import describe_plan
    from streaming.core.progress_report import (ONGOING, PENDING_REASON_AFTER_POLLS, build, diagnose, to_table,
                                                with_history)

    ledger = common.open_ledger(args, admin)
    memory = history.empty_memory()

    def frame(rows_that_fit):
        nonlocal memory
        snapshot, rows = _rows(admin, None)
        memory, rows = with_history(memory, rows, snapshot.ts_ms)
        rows = diagnose(snapshot, rows, PENDING_REASON_AFTER_POLLS * interval_s)
        row = _plan_row(admin, args, args.request_id, snapshot, rows, ledger)
        code = _plan_exit_code(row)
        done = code if code == EXIT_OK else None
        if rows_that_fit is None:
            return json.dumps(row, separators=(",", ":")), done
        keys = {(m.topic, m.partition) for m in find_plan(ledger, args.request_id).moves}
        mine = [partition in keys for partition in zip(rows["topic"].tolist(), rows["partition"].tolist())]
        report = build(snapshot, rows.take(np.array(mine, dtype=bool).reshape(len(rows))), ONGOING)
        table = to_table(report, title=_title(snapshot, f"plan {args.request_id}", interval_s),
                         max_rows=rows_that_fit - 1 - len(report.errors))
        return Group(Text(describe_plan(row)), table), done

    return _redraw(args.output, interval_s, frame)


def _watch(admin, moves, output, interval_s, cluster):
    """Poll every `interval_s` (measured from the start of each poll) until nothing moves."""
    from streaming.core import history
    from streaming.core.progress_report import (FROM_FILE, ONGOING, PENDING_REASON_AFTER_POLLS, build, diagnose,
                                                to_json, to_table, with_history)

    source = ONGOING if moves is None else FROM_FILE
    memory = history.empty_memory()

    def frame(rows_that_fit):
        nonlocal memory
        snapshot, rows = _rows(admin, moves)
        memory, rows = with_history(memory, rows, snapshot.ts_ms)
        report = build(snapshot, diagnose(snapshot, rows, PENDING_REASON_AFTER_POLLS * interval_s), source, cluster)
        done = None if report.in_progress else _exit_code(report)
        if rows_that_fit is None:
            return to_json(report), done
        title = _title(snapshot, f"cluster {snapshot.cluster_id}", interval_s)
        return to_table(report, title=title, max_rows=rows_that_fit - len(report.errors)), done

    return _redraw(output, interval_s, frame)


def run(args, connect):
    if args.request_id is not None and args.reassignment_json_file is not None:
        raise BadInput("--request-id reports a plan: it takes no --reassignment-json-file")
    moves = None
    if args.reassignment_json_file is not None:  # an empty path is a bad path, not "no file"
        moves = reassignment_file.load(args.reassignment_json_file, allow_empty=True)
    admin = connect(args)
    # The report loads only once the input is known good and the cluster answered, on a thread while the first
    # poll waits on the network: its modules and numpy take 60-80 ms to import, the poll's round trips as long.
    threading.Thread(target=importlib.import_module, args=("streaming.core.progress_report",), daemon=True).start()
    try:
        if args.request_id is not None:
            return _watch_plan(admin, args, args.watch) if args.watch else _plan(admin, args)
        if args.watch:
            return _watch(admin, moves, args.output, args.watch, _cluster(args))
        return _once(admin, moves, args)
    finally:
        admin.close()
