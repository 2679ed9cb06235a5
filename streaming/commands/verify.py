"""`reassign-monitor verify`: per-partition completion of a reassignment file, then the throttle janitor.

Status per partition: `complete` (not reassigning, replicas equal the target), `in progress`,
`replicas differ` (not reassigning but the replica list is not the target: cancelled or replaced).
Exit 1 while any partition is in progress, else 0 (a cancelled move is not "in progress": it never
finishes). A file naming an unknown topic or partition is bad input: one line, exit 2, nothing removed.

Then the janitor (streaming.control.sweep, `owned` policy, the same code the streaming job runs) removes every
owned throttle that is due - for this file's partitions and any other finished request - restoring
prior rates. Records of this file's partitions executed with --no-auto-remove-throttle are released
too (an explicit verify asks for it), unless --preserve-throttles.
"""

import time

from streaming.commands import reassign_common as common
from streaming.vocabulary.errors import EXIT_IN_PROGRESS, EXIT_OK, BadInput

COMPLETE, IN_PROGRESS, DIFFERS, UNKNOWN_TOPIC, UNKNOWN_PARTITION = (
    "complete", "in progress", "replicas differ", "unknown topic", "unknown partition")
# Right after a move completes the controller no longer lists it while a broker's metadata may still show
# the old replica set: `replicas differ` is re-checked for this long before it is believed.
METADATA_SETTLE_S = 3.0


def add_arguments(parser):
    parser.add_argument("--reassignment-json-file", required=True, metavar="FILE",
                        help="the moves to check, in kafka-reassign-partitions' format")
    parser.add_argument("--preserve-throttles", action="store_true", help="only report; leave every throttle in place")
    parser.add_argument("--dry-run", action="store_true", help="report the throttle actions that are due; change nothing")
    common.add_ownership_topic(parser)
    common.add_progress_topic(parser)


def statuses(file_moves, snapshot):
    """[(move, status, current replicas)] for every file entry."""
    current = common.replicas_of(snapshot)
    topics = {t for t, _ in current}
    ongoing = common.ongoing_of(snapshot)
    out = []
    for m in file_moves:
        key = (m.topic, m.partition)
        if m.topic not in topics:
            out.append((m, UNKNOWN_TOPIC, None))
        elif key not in current:
            out.append((m, UNKNOWN_PARTITION, None))
        elif key in ongoing:
            out.append((m, IN_PROGRESS, current[key]))
        else:
            out.append((m, COMPLETE if tuple(current[key]) == tuple(m.replicas) else DIFFERS, current[key]))
    return out


def run(args, connect):
    from streaming.vocabulary.reassignment_file import load

    file_moves = load(args.reassignment_json_file)
    admin = connect(args)
    try:
        topics = [m.topic for m in file_moves]
        rows = statuses(file_moves, common.strict_poll(admin, topics))
        unknown = [f"unknown {'topic' if s == UNKNOWN_TOPIC else 'partition'} {m.topic}" +
                   ("" if s == UNKNOWN_TOPIC else f"-{m.partition}") for m, s, _ in rows if s in (UNKNOWN_TOPIC, UNKNOWN_PARTITION)]
        if unknown:  # bad input: said before anything is removed
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise BadInput(f"{unknown[0]}{more}; nothing was changed")
        deadline = time.monotonic() + METADATA_SETTLE_S
        while any(status == DIFFERS for _, status, _ in rows) and time.monotonic() < deadline:
            time.sleep(0.5)
            rows = statuses(file_moves, common.strict_poll(admin, topics))
        actions, note = [], None
        if not args.preserve_throttles:
            actions, note = common.sweep_released(args, admin, [(m.topic, m.partition) for m, _, _ in rows],
                                                  dry_run=args.dry_run)
    finally:
        admin.close()

    found = {status for _, status, _ in rows}
    code = EXIT_IN_PROGRESS if IN_PROGRESS in found else EXIT_OK
    if args.output == "json":
        common.print_json({
            "complete": found == {COMPLETE}, "in_progress": IN_PROGRESS in found,
            "partitions": [{"topic": m.topic, "partition": m.partition, "status": s, "target": list(m.replicas),
                            "replicas": r} for m, s, r in rows],
            "throttle_actions": [common.action_json(a) for a in actions],
            "throttles_preserved": args.preserve_throttles, "note": note})
    else:
        common.table([(m.topic, m.partition, s, ",".join(map(str, m.replicas)), "" if r is None else ",".join(map(str, r)))
                      for m, s, r in rows], ("TOPIC", "PARTITION", "STATUS", "TARGET", "REPLICAS"))
        if args.preserve_throttles:
            print("Throttles: preserved (--preserve-throttles).")
        else:
            common.print_actions(actions)
        if note:
            print(f"Note: {note}")
    return code
