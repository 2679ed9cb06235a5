"""`reassign-monitor execute`: start a reassignment with KIP-179 throttles that are removed when it completes.

Order (each step only after the previous one succeeded):
1. Validate everything without changing anything: the file (streaming.vocabulary.reassignment_file), the throttle
   values, unknown topics / partitions / brokers, log dirs (absolute, present on the broker), and
   partitions already reassigning (allowed with --additional). Any problem: one line, exit 2.
2. Write the ownership record (state `pending`): the exact entries and rates this request will set, each
   prior rate it replaces, the moves, and whether auto-removal is off (streaming.control.ownership.records).
3. APPEND the throttled-replicas entries, SET the rates; read back until the cluster shows them.
4. AlterPartitionReassignments. If nothing was accepted, or step 3 failed: mark the record `aborted`,
   take out exactly what step 3 set (the janitor's own code), exit 3.
5. Apply step 3 again (APPEND and SET are idempotent). A janitor whose ownership view predates this
   request may have taken out an entry this request shares with an older finished one before the
   reassignment was registered; from now on the rules "Still reassigning" and "Broker in use"
   (docs/ownership.md) protect them whatever records a janitor has.
6. Move replicas into the named log dirs (AlterReplicaLogDirs, retried while a new replica does not exist
   yet, up to --timeout; a new replica's dir is sent before step 3, so it is created there), then mark the
   record `started` (while `pending` the janitor keeps the alter-log-dirs rate it claims).
The current assignment (for rollback) is printed before step 2 in table output; the request id at the end.
A crash between 2 and 6 leaves a `pending` record: the janitor treats it as started after
streaming.vocabulary.throttle_actions.PENDING_GRACE_MS and removes its throttles once its partitions do not move.

With --max-partitions-in-flight the file is a plan (streaming.commands.plan_execute, streaming.control.plans): step 1
is the same, then the plan is recorded and submitted a wave at a time, each wave doing steps 2-6 for its
partitions (streaming.control.submission).
"""

import sys
import time
from typing import NamedTuple

from streaming.commands import flags
from streaming.commands import plan_execute
from streaming.commands import reassign_common as common
from streaming.vocabulary import throttle_values
from streaming.vocabulary.config_keys import throttle_config_key
from streaming.vocabulary.errors import EXIT_OK, BadInput, ClusterError
from streaming.vocabulary.states import OwnershipState

def add_arguments(parser):
    parser.add_argument("--reassignment-json-file", required=True, metavar="FILE",
                        help="the moves, in kafka-reassign-partitions' format")
    parser.add_argument("--throttle", type=flags.checked(throttle_values.throttle), metavar="B/s|auto",
                        help="inter-broker replication throttle in bytes/s on every source and destination broker; "
                             "auto: starts at --throttle-min and `run --throttle auto` steers it within the bounds")
    common.add_auto_throttle_bounds(parser)
    parser.add_argument("--replica-alter-log-dirs-throttle", type=int, metavar="B/s",
                        help="throttle in bytes/s for moves between log dirs of one broker")
    parser.add_argument("--no-auto-remove-throttle", action="store_true",
                        help="keep the throttles after completion (verify or cancel of these partitions removes them)")
    parser.add_argument("--additional", action="store_true",
                        help="allow changing the target of partitions that are already reassigning")
    parser.add_argument("--dry-run", action="store_true", help="validate and show what would be set; change nothing")
    common.add_ownership_topic(parser)
    plan_execute.add_plan_arguments(parser)


def validate(file_moves, snapshot, additional, log_dirs_of):
    """Every problem with the request against the cluster, as one-line messages (empty: valid)."""
    known = common.replicas_of(snapshot)
    topics = {t for t, _ in known}
    registered = {b["broker"] for b in snapshot["brokers"]}
    ongoing = common.ongoing_of(snapshot)
    problems = []
    for m in file_moves:
        name = f"{m.topic}-{m.partition}"
        if m.topic not in topics:
            problems.append(f"unknown topic {m.topic}")
        elif (m.topic, m.partition) not in known:
            problems.append(f"unknown partition {name}")
        unknown = [b for b in m.replicas if b not in registered]
        if unknown:
            problems.append(f"{name}: unknown broker{'s' if len(unknown) > 1 else ''} {', '.join(map(str, unknown))}")
        if (m.topic, m.partition) in ongoing and not additional:
            problems.append(f"{name} is already being reassigned (use --additional to change its target)")
        for broker, log_dir in zip(m.replicas, m.log_dirs or ()):
            if log_dir == "any":
                continue
            if not log_dir.startswith("/"):
                problems.append(f"{name}: log dir {log_dir!r} for broker {broker} is not an absolute path")
            elif broker in registered and log_dir not in log_dirs_of(broker):
                problems.append(f"{name}: broker {broker} has no log dir {log_dir}")
    return list(dict.fromkeys(problems))


def _log_dirs_reader(admin):
    cache = {}

    def log_dirs_of(broker):
        if broker not in cache:
            cache[broker] = admin.log_dir_paths(broker)
        return cache[broker]

    return log_dirs_of


def _throttle_lines(setting):
    from streaming.vocabulary import throttle_entries as te

    config_key = throttle_config_key
    lines = [f"topic {t}: {config_key('topic', k)} += {te.format_entries(p)}" for (t, k), p in sorted(setting.appends.items())]
    lines += [f"topic {t}: {config_key('topic', k)} already lists {te.format_entries(p)} (not ours: left alone)"
              for (t, k), p in sorted(setting.foreign.items())]
    lines += [f"topic {t}: {config_key('topic', k)} is * (left alone)" for t, k in setting.all_replicas]
    lines += [f"broker {c.broker}: {config_key('broker', c.kind)} = {c.rate}" + (f" (was {c.prior})" if c.prior is not None else "")
              for c in setting.rate_claims]
    return lines


class Request(NamedTuple):
    """Everything execute will do, decided before anything is changed."""
    moves: tuple
    log_dirs: dict
    setting: object  # streaming.control.throttles.claims.ThrottleSetting
    rollback: str  # the current assignment, in Kafka's reassignment JSON
    record: object  # the streaming.control.ownership.records.Ownership record it writes first
    applier: object  # streaming.control.applier.Applier, the one writer, over the ownership topic's ledger


def run(args, connect):
    steering = common.auto_throttle_bounds(args)
    if steering is not None:  # the job steers from the floor up
        args.throttle = steering.floor
    limits = plan_execute.limits_of(args)
    common.positive_rate("--throttle", args.throttle)
    common.positive_rate("--replica-alter-log-dirs-throttle", args.replica_alter_log_dirs_throttle)
    file_moves = _file_moves(args.reassignment_json_file)
    admin = connect(args)
    try:
        request = _request(args, admin, file_moves, steering)
        if limits is not None:  # a plan: recorded, then advanced a wave at a time (streaming.control.plans)
            return plan_execute.execute_plan(args, admin, request, limits)
        _print_plan(args, request)
        if args.dry_run:
            return EXIT_OK
        started, failed, unmoved = _carry_out(admin, request, args.timeout)
    finally:
        admin.close()
    _print_outcome(args, request, started, failed, unmoved)
    return EXIT_OK if not failed and not unmoved else ClusterError.exit_code


def _file_moves(path):
    from streaming.vocabulary.reassignment_file import load

    moves = load(path)
    if not moves:
        raise BadInput(f"--reassignment-json-file {path}: no partitions to move")
    return moves


def _request(args, admin, file_moves, steering=None):
    """Step 1: validate against the cluster, then decide the moves, throttles and ownership record."""
    from streaming.control.throttles.claims import log_dir_moves, moves_for, throttle_setting
    from streaming.control.ownership.records import Ownership, new_request_id
    from streaming.control.throttles.view import view_of
    from streaming.vocabulary.reassignment_file import to_json

    snapshot = common.strict_poll(admin, [m.topic for m in file_moves])
    problems = validate(file_moves, snapshot, args.additional, _log_dirs_reader(admin))
    if problems:
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        raise BadInput(f"{problems[0]}{more}; nothing was changed")
    moves = moves_for(file_moves, common.replicas_of(snapshot), common.ongoing_of(snapshot))
    log_dirs = log_dir_moves(moves)
    applier = common.acting(args, admin, create=not args.dry_run)
    ledger = applier.ledger
    active = [r for r in ledger.records() if r.active]
    setting = throttle_setting(moves, view_of(snapshot), active, args.throttle, log_dirs,
                               args.replica_alter_log_dirs_throttle)
    now_ms = int(time.time() * 1000)
    record = Ownership(request_id=new_request_id([r.request_id for r in ledger.records()], now_ms), state=OwnershipState.PENDING,
                       created_ms=now_ms, updated_ms=now_ms, auto_remove=not args.no_auto_remove_throttle,
                       moves=moves, entries=setting.entries, rates=setting.rate_claims,
                       steering=steering if setting.rate_claims else None)
    rollback = to_json({(m.topic, m.partition): list(m.sources) for m in moves})
    return Request(moves, log_dirs, setting, rollback, record, applier)


def _carry_out(admin, request, timeout_s):
    """Steps 2-6 of the module docstring (streaming.control.submission). Returns (started, refused, unmoved log
    dirs)."""
    from streaming.control.submission import NotStarted, submit

    applier = request.applier
    try:
        submitted = submit(admin, applier, request.record, request.setting, timeout_s, time.time() * 1000)
    except NotStarted as error:
        _print_rolled_back(error.rolled_back)
        raise
    if submitted.rolled_back is not None:
        _print_rolled_back(submitted.rolled_back)
        raise ClusterError("no partition reassignment was accepted: " +
                           ", ".join(f"{m.topic}-{m.partition}: {e}" for m, e in submitted.refused) +
                           f"; {submitted.rolled_back.summary()}")
    if submitted.note is not None:
        raise ClusterError(f"reassignment started (request {request.record.request_id}) but {submitted.note}")
    return list(submitted.started), list(submitted.refused), list(submitted.unplaced)


def _print_plan(args, request):
    if args.output != "table":
        if args.dry_run:
            common.print_json(_document(request, [], [], [], dry_run=True))
        return
    print(f"Current partition replica assignment\n\n{request.rollback}\n\n"
          "Save this to use as the --reassignment-json-file option during rollback")
    for line in _throttle_lines(request.setting):
        print(("Would set " if args.dry_run else "Throttle ") + line)
    if args.dry_run:
        print(f"Dry run: nothing was changed; would start {', '.join(f'{m.topic}-{m.partition}' for m in request.moves)}")


def _print_outcome(args, request, started, failed, unmoved):
    if args.output != "table":
        common.print_json(_document(request, started, failed, unmoved, dry_run=False))
        return
    print(f"Successfully started partition reassignment{'s' if len(started) > 1 else ''} for "
          f"{','.join(f'{m.topic}-{m.partition}' for m in started)}")
    for m, error in failed:
        print(f"Error: {m.topic}-{m.partition} was not started: {error}", file=sys.stderr)
    for replica, error in unmoved:
        print(f"Error: log dir move of {replica} not started: {error}", file=sys.stderr)
    removal = ("kept (--no-auto-remove-throttle): verify or cancel of these partitions removes them"
               if args.no_auto_remove_throttle else "removed automatically as each move completes (run or verify)")
    if request.setting.entries or request.setting.rate_claims:
        print(f"Throttles: {removal}")
    print(f"Request id: {request.record.request_id}")


def _print_rolled_back(rolled_back):
    """What taking a request's throttles out again did, a line each (stderr)."""
    from sinks.throttle_records import describe
    from streaming.vocabulary.throttle_actions import FAILED

    for action in rolled_back.actions:
        print(f"Rolled back: {describe(action)}" if action.action != FAILED else
              f"Not rolled back: {describe(action)}", file=sys.stderr)


def _document(request, started, failed, unmoved, dry_run):
    import json

    from streaming.vocabulary import throttle_entries as te

    record, rollback, setting = request.record, request.rollback, request.setting
    return {
        "request_id": None if dry_run else record.request_id, "dry_run": dry_run,
        "throttle_auto": None if record.steering is None else {
            "min": record.steering.floor, "max": record.steering.ceiling,
            "schedule": [list(w) for w in record.steering.schedule]},
        "rollback": json.loads(rollback), "auto_remove_throttle": record.auto_remove,
        "started": [f"{m.topic}-{m.partition}" for m in started],
        "failed": [{"partition": f"{m.topic}-{m.partition}", "error": e} for m, e in failed],
        "log_dir_moves_failed": [{"replica": r, "error": e} for r, e in unmoved],
        "throttles": {
            "topics": [{"topic": t, "kind": k, "appended": te.entry_strings(p)} for (t, k), p in sorted(setting.appends.items())],
            "foreign_left_alone": [{"topic": t, "kind": k, "entries": te.entry_strings(p)} for (t, k), p in sorted(setting.foreign.items())],
            "all_replicas_left_alone": [{"topic": t, "kind": k} for t, k in setting.all_replicas],
            "brokers": [{"broker": c.broker, "kind": c.kind, "rate": c.rate, "prior": c.prior} for c in setting.rate_claims],
        },
    }
