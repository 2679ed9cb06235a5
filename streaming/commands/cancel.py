"""`reassign-monitor cancel`: cancel ongoing reassignments (KIP-455: back to the original replicas).

Refuses (exit 2, nothing changed) without --force when an original replica's broker is not alive:
the cancel would shrink the partition to replicas that cannot serve it (KAFKA-14424).
Partitions of the file that are not reassigning are reported and skipped. After the cancel, the
throttle janitor (streaming.control.sweep, `owned` policy) removes the throttles of the cancelled moves exactly as
for completed ones - also those executed with --no-auto-remove-throttle, unless --preserve-throttles.
Exit 0 when every requested cancel was accepted, 3 when the cluster refused one.
`--request-id ID` cancels a plan (streaming.commands.plan_execute): in flight reverted, pending dropped.
"""

from streaming.commands import flags, plan_execute
from streaming.commands import reassign_common as common
from streaming.vocabulary.kafka_apis import REQUIRED_APIS
from streaming.vocabulary.errors import EXIT_CLUSTER, EXIT_OK, BadInput, ClusterError
from streaming.vocabulary.states import PlanState

CANCELLED, NOT_REASSIGNING = "cancelled", "not reassigning"
NO_REASSIGNMENT_IN_PROGRESS = "NoReassignmentInProgressError"


def add_arguments(parser):
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--reassignment-json-file", metavar="FILE", help="cancel these partitions (replicas optional)")
    which.add_argument("--all", action="store_true", help="cancel every ongoing reassignment in the cluster")
    which.add_argument("--request-id", type=flags.request_id, metavar="ID",
                       help="cancel a plan: its partitions in flight are reverted, its pending ones never submitted")
    parser.add_argument("--force", action="store_true",
                        help="cancel even where an original replica's broker is offline (KAFKA-14424)")
    parser.add_argument("--preserve-throttles", action="store_true", help="leave every throttle in place")
    common.add_ownership_topic(parser)
    common.add_progress_topic(parser)


def offline_originals(ongoing, alive, partitions):
    """(topic, partition) -> original replica brokers that are not alive."""
    out = {}
    for key in partitions:
        row = ongoing[key]
        original = [b for b in row["replicas"] if b not in set(row["adding"])]
        down = [b for b in original if b not in alive]
        if down:
            out[key] = down
    return out


def run(args, connect):
    from streaming.control.applier import applier_of
    from streaming.vocabulary.reassignment_file import load

    if args.request_id is not None:
        return _cancel_plan(args, connect)
    requested = None if args.all else [(m.topic, m.partition) for m in load(args.reassignment_json_file, require_replicas=False)]
    admin = connect(args)
    try:
        # A cancel decides on what moves and who is alive; throttle configs matter only to the cleanup after.
        snapshot = common.strict_poll(admin, [t for t, _ in requested or ()], needs=REQUIRED_APIS)
        ongoing = common.ongoing_of(snapshot)
        requested = sorted(ongoing) if requested is None else requested
        to_cancel = [key for key in requested if key in ongoing]
        offline = offline_originals(ongoing, snapshot.alive_brokers(), to_cancel)
        if offline and not args.force:
            raise BadInput(_refusal(offline))
        answers = applier_of(admin).cancel_moves(to_cancel) if to_cancel else {}
        rows = statuses(requested, ongoing, answers)
        cancelled = [key for key, status, _ in rows if status == CANCELLED]
        actions, note = ([], None) if not cancelled or args.preserve_throttles else _remove_throttles(args, admin, cancelled)
    finally:
        admin.close()
    _print(args, rows, bool(offline) and args.force, actions, note, cancelled)
    return EXIT_CLUSTER if any(status.startswith("failed") for _, status, _ in rows) else EXIT_OK


def _cancel_plan(args, connect):
    """Mark the plan cancelled first (so no advancer submits more), then one step of it: its partitions in
    flight are cancelled and the janitor removes their throttles (streaming.control.plans.step)."""
    admin, applier, plan = plan_execute.set_state(args, connect, PlanState.CANCELLED,
                                                  (PlanState.RUNNING, PlanState.PAUSED), steps=True)
    try:
        return plan_execute.advance(args, admin, applier, plan.request_id, wait=False, leased=False)
    finally:
        admin.close()


def _refusal(offline):
    first, down = next(iter(sorted(offline.items())))
    return (f"refusing to cancel {first[0]}-{first[1]}: original replica broker{'s' if len(down) > 1 else ''} "
            f"{', '.join(map(str, down))} offline" + (f" (and {len(offline) - 1} more partitions)" if len(offline) > 1 else "")
            + "; cancelling would leave the partition on brokers that cannot serve it (KAFKA-14424). "
            "Bring the brokers back or use --force; nothing was changed")


def statuses(requested, ongoing, results):
    """(partition, status, original replicas) per requested partition, from the cancel's answers."""
    rows = []
    for key in requested:
        if key not in ongoing:
            rows.append((key, NOT_REASSIGNING, None))
            continue
        error = results.get(key, "no answer")
        original = [b for b in ongoing[key]["replicas"] if b not in set(ongoing[key]["adding"])]
        if error is None:
            rows.append((key, CANCELLED, original))
        elif error == NO_REASSIGNMENT_IN_PROGRESS:
            rows.append((key, NOT_REASSIGNING, None))  # it finished between the poll and the cancel
        else:
            rows.append((key, f"failed: {error}", original))
    return rows


def _remove_throttles(args, admin, cancelled):
    """The janitor's sweep for the cancelled partitions' owners: (throttle actions, note)."""
    try:
        return common.sweep_released(args, admin, cancelled)
    except ClusterError as error:  # the cancel stands; the records in Kafka keep the removal due
        return [], (f"throttles not removed yet ({error}); `reassign-monitor run` or `verify` of these partitions "
                    "removes them once the cluster answers")


def _print(args, rows, forced, actions, note, cancelled):
    if args.output == "json":
        common.print_json({
            "partitions": [{"topic": t, "partition": p, "status": s, "original_replicas": r} for (t, p), s, r in rows],
            "forced": forced, "throttle_actions": [common.action_json(a) for a in actions],
            "throttles_preserved": args.preserve_throttles, "note": note})
        return
    common.table([(t, p, s, "" if r is None else ",".join(map(str, r))) for (t, p), s, r in rows],
                 ("TOPIC", "PARTITION", "STATUS", "REVERTS TO"))
    if not rows:
        print("No reassignment is in progress.")
    if args.preserve_throttles:
        print("Throttles: preserved (--preserve-throttles).")
    elif cancelled:
        common.print_actions(actions)
    if note:
        print(f"Note: {note}")
