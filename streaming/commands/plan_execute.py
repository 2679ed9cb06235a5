"""Plans from the CLI: `execute --max-partitions-in-flight N ...` records a plan and submits its first
wave; `--wait` (and `resume --wait`) advance it in the foreground without Spark until it is done.
Not a subcommand (cli.COMMANDS does not list it); `execute`, `resume`, `pause` and `cancel --request-id`
use it. The decisions are in streaming.control.plans; this wires them to the door, the clock and the terminal.

Resuming after the foreground executor was killed: `resume --request-id ID --wait` (a running plan
stays running; a paused one is resumed). The loop that advances a plan, under its lease, is
streaming.control.plans.foreground; this prints what it tells.
"""

import json
import sys
import time

from streaming.commands import flags
from streaming.commands import reassign_common as common
from streaming.vocabulary import byte_values
from streaming.vocabulary.errors import EXIT_CLUSTER, EXIT_OK, BadInput
from streaming.vocabulary.states import PlanState

PLAN_FLAGS = ("max_moves_per_broker", "max_bytes_in_flight", "order", "wait")
PLAN_REFUSES = {"additional": "--additional", "no_auto_remove_throttle": "--no-auto-remove-throttle",
                "dry_run": "--dry-run",
                # the job steers a request's own rates; a plan's waves are requests of their own (not steered yet)
                "throttle_min": "--throttle auto"}


def add_plan_arguments(parser):
    from streaming.control.plans.scheduler import FILE, ORDERS

    parser.add_argument("--max-partitions-in-flight", type=flags.positive_count, metavar="N",
                        help="run the file as a plan: at most N partitions reassign (or move between log dirs) at once, "
                             "the next submitted as each completes")
    parser.add_argument("--max-moves-per-broker", type=flags.positive_count, metavar="M",
                        help="plan: at most M moves per broker, as a source, a destination or between its log dirs")
    parser.add_argument("--max-bytes-in-flight", type=flags.checked(byte_values.byte_count), metavar="BYTES",
                        help="plan: at most this many bytes to copy in flight (200GB, 50MiB, ...)")
    parser.add_argument("--order", choices=ORDERS, default=None, help=f"plan: submission order (default {FILE})")
    add_wait(parser)


def add_wait(parser):
    parser.add_argument("--wait", action="store_true",
                        help="plan: advance it in the foreground until done (no Spark needed)")


def limits_of(args):
    """The plan's Limits, or None when the file is not run as a plan. BadInput for flags that need a plan or
    that a plan cannot honour (checked before anything is read or changed)."""
    from streaming.control.plans.scheduler import Limits

    if args.max_partitions_in_flight is None:
        used = [f"--{name.replace('_', '-')}" for name in PLAN_FLAGS if getattr(args, name) not in (None, False)]
        if used:
            raise BadInput(f"{used[0]} needs --max-partitions-in-flight (it runs the file as a plan)")
        return None
    refused = [flag for name, flag in PLAN_REFUSES.items() if getattr(args, name) not in (None, False)]
    if refused:
        raise BadInput(f"{refused[0]} cannot be used with --max-partitions-in-flight (a plan)")
    return Limits(args.max_partitions_in_flight, args.max_moves_per_broker, args.max_bytes_in_flight)


def record_plan(args, admin, request, limits):
    """Order the validated moves, record the plan (before anything is submitted). Returns the Plan."""
    from streaming.control.placement import logs_of
    from streaming.control.plans.step import candidate, sizes_of
    from streaming.control.ownership.plans import Plan
    from streaming.control.plans.scheduler import FILE, ordered

    snapshot = common.strict_poll(admin, [m.topic for m in request.moves])
    sizes, logs = sizes_of(snapshot), logs_of(snapshot["log_dirs"])
    by_key = {(m.topic, m.partition): m for m in request.moves}
    order = args.order or FILE
    moves = tuple(by_key[c.key] for c in ordered([candidate(m, sizes, logs) for m in request.moves], order))
    record = request.record
    plan = Plan(record.request_id, PlanState.RUNNING, record.created_ms, record.updated_ms, limits, moves, order,
                args.throttle, args.replica_alter_log_dirs_throttle)
    request.applier.record_plan(plan, with_parts=True)
    return plan


def step(args, admin, applier, request_id):
    from streaming.control.plans.step import advance_once

    return advance_once(admin, lambda topics: common.strict_poll(admin, topics), applier, request_id,
                        time.time() * 1000, args.timeout)


def advance(args, admin, applier, request_id, wait, leased=True):
    """One step, or with `wait` steps until the plan is finished (streaming.control.plans.foreground), printing
    each step that changed something. Returns the exit code. `leased=False`: cancel's step (see there)."""
    from streaming.control.ownership import leases as lease
    from streaming.control.plans import foreground
    from streaming.control.plans.partition_states import not_moved

    me = lease.holder_name(f"{args.command} --wait" if wait else args.command)
    result = foreground.advance(applier, lambda: step(args, admin, applier, request_id), request_id, me, wait,
                                Printed(args, request_id), leased)
    if result is None or not wait:
        return EXIT_OK
    unfinished = not_moved(result.counts)
    if result.plan.state == PlanState.CANCELLED or not unfinished:
        return EXIT_OK
    print(f"Plan {request_id} ended with partitions not moved: " +
          ", ".join(f"{n} {state}" for state, n in sorted(unfinished.items())), file=sys.stderr)
    return EXIT_CLUSTER


class Printed:
    """What the foreground advancer tells (streaming.control.plans.foreground.Telling), on the terminal."""

    def __init__(self, args, request_id):
        self.args, self.request_id = args, request_id

    def advanced_by(self, holder, wait):
        print(f"Plan {self.request_id} is advanced by {holder}; "
              f"{'waiting until it is finished' if wait else 'it submits the next partitions'}", flush=True)

    def finished_by_another(self, state):
        print(f"Plan {self.request_id} {state}", flush=True)

    def stepped(self, result):
        print_step(self.args, result)


def print_step(args, result):
    from streaming.control.plans.partition_states import final_refusal
    from sinks.throttle_records import describe

    plan = result.plan
    if args.output == "json":  # one line per step (JSON lines): --wait prints many
        _json_line({"request_id": plan.request_id, "state": plan.state, "partitions": result.counts,
                           "submitted": [f"{t}-{p}" for t, p in result.submitted],
                           "refused": [{"partition": f"{t}-{p}", "error": e} for (t, p), e in result.refused],
                           "cancelled": [f"{t}-{p}" for t, p in result.cancelled],
                           "left_alone": [{"partition": f"{t}-{p}", "reason": r} for (t, p), r in result.left_alone],
                           "failed": [{"partition": f"{t}-{p}", "reason": r} for (t, p), r in result.failed],
                           "throttle_actions": [common.action_json(a) for a in result.throttle_actions]})
        return
    counts = ", ".join(f"{state.replace('_', ' ')} {n}" for state, n in sorted(result.counts.items()))
    print(f"Plan {plan.request_id} {plan.state}: {counts}", flush=True)
    if result.submitted:
        print("  submitted " + ",".join(f"{t}-{p}" for t, p in result.submitted), flush=True)
    for (t, p), error in result.refused:
        if not final_refusal(error):  # a final refusal is among the failed partitions below
            print(f"  refused {t}-{p}: {error} (pending again)", flush=True)
    if result.cancelled:
        print("  cancelled " + ",".join(f"{t}-{p}" for t, p in result.cancelled), flush=True)
    for (t, p), reason in result.left_alone:
        print(f"  left alone {t}-{p}: {reason}", flush=True)
    for (t, p), reason in result.failed:
        print(f"  failed {t}-{p}: {reason}", flush=True)
    for action in result.throttle_actions:
        print(f"  throttle {describe(action)}", flush=True)


def set_state(args, connect, state, wanted_from, steps=False):
    """pause / resume / cancel of a plan: write its new state (only from a state in `wanted_from`).
    `steps`: a step follows (resume, cancel), so the cluster is read first as the step reads it - a principal
    lacking a grant the step needs is refused before the state is written (docs/security.md "Kafka ACLs").
    Returns (admin, applier, plan) with the admin open for the caller to close."""
    from streaming.control.ownership.store import find_plan
    from streaming.control.plans.step import confirm_gone

    admin = connect(args)
    try:
        applier = common.acting(args, admin)
        plan = find_plan(applier.ledger, args.request_id)
        if plan is None:
            raise BadInput(f"no plan with request id {args.request_id} in {args.ownership_topic}")
        if plan.state not in wanted_from and plan.state != state:
            raise BadInput(f"plan {plan.request_id} is {plan.state}: it cannot become {state}")
        if steps:
            confirm_gone(admin, plan, common.strict_poll(admin, sorted({m.topic for m in plan.moves})))
        if plan.state != state:
            plan = plan.with_state(state, time.time() * 1000, note=f"{args.command} by the operator")
            applier.record_plan(plan)
    except BaseException:
        admin.close()
        raise
    return admin, applier, plan


def execute_plan(args, admin, request, limits):
    """`execute` with --max-partitions-in-flight: record the plan, print its rollback JSON (the whole plan)
    and request id, submit the first wave; with --wait advance it until done."""
    plan = record_plan(args, admin, request, limits)
    if args.output == "json":
        _json_line({"request_id": plan.request_id, "rollback": json.loads(request.rollback),
                          "partitions": len(plan.moves), "order": plan.order,
                          "limits": {"max_partitions_in_flight": limits.partitions_in_flight,
                                     "max_moves_per_broker": limits.moves_per_broker,
                                     "max_bytes_in_flight": limits.bytes_in_flight}})
    else:
        print(f"Current partition replica assignment\n\n{request.rollback}\n\n"
              "Save this to use as the --reassignment-json-file option during rollback")
        print(f"Plan of {len(plan.moves)} partitions recorded, order {plan.order}, at most "
              f"{limits.partitions_in_flight} in flight" +
              (f", {limits.moves_per_broker} moves per broker" if limits.moves_per_broker else "") +
              (f", {limits.bytes_in_flight} bytes in flight" if limits.bytes_in_flight else ""))
        print(f"Request id: {plan.request_id}", flush=True)
    return advance(args, admin, common.acting(args, admin), plan.request_id, args.wait)


def _json_line(document):
    print(json.dumps(document, separators=(",", ":")), flush=True)
