"""What execute, verify and cancel share: connecting, polling strictly, the ownership store, output.

Not a subcommand (cli.COMMANDS does not list it). Imports stay light: no pyspark.
"""

import json
import sys
import time

from streaming.commands import flags
from streaming.vocabulary.defaults import OWNERSHIP_TOPIC, PROGRESS_TOPIC
from streaming.cluster.poller import strict_poll  # noqa: F401 (the commands' name for it)
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput, ClusterError
from streaming.vocabulary.kafka_limits import LONG_MAX


def add_ownership_topic(parser):
    parser.add_argument("--ownership-topic", type=flags.topic_name, default=OWNERSHIP_TOPIC, metavar="NAME",
                        help=f"compacted topic recording which throttles this tool set (default {OWNERSHIP_TOPIC})")


def add_progress_topic(parser, help_text="throttle actions are also written here as `throttle` records when the topic exists"):
    parser.add_argument("--progress-topic", type=flags.topic_name, default=PROGRESS_TOPIC, metavar="NAME", help=help_text)


def connect(args):
    """The Kafka admin door for a command's flags (cli.main's default `connect`)."""
    from streaming.cluster.admin import KafkaClusterAdmin

    return KafkaClusterAdmin(args.bootstrap_server, args.command_config, args.timeout)


def open_ledger(args, admin):
    """The ownership topic's one store (records, plans, leases), read through the command's own admin door."""
    from streaming.control.ownership.store import KafkaLedger

    return KafkaLedger(admin, args.ownership_topic)


def acting(args, admin, create=False):
    """The command's one writer (streaming.control.applier) over the ownership topic's ledger; `create`: the topic
    is created first unless it exists."""
    from streaming.control.applier import applier_of
    from streaming.control.ownership.store import ensure_ownership_topic

    if create:
        ensure_ownership_topic(applier_of(admin, log=quiet), args.ownership_topic)
    return applier_of(admin, open_ledger(args, admin), log=quiet)


def replicas_of(snapshot):
    """(topic, partition) -> replicas from the poll's metadata."""
    return {(r["topic"], r["partition"]): list(r["replicas"]) for r in snapshot["partitions"]}


def ongoing_of(snapshot):
    """(topic, partition) -> {"replicas", "adding", "removing"} of each ongoing reassignment."""
    return {(r["topic"], r["partition"]): {k: list(r[k]) for k in ("replicas", "adding", "removing")}
            for r in snapshot["reassignments"]}


def sweep_released(args, admin, partitions, dry_run=False):
    """The janitor's sweep (streaming.control.sweep) with the records moving `partitions` released (an explicit
    verify or cancel of them overrides --no-auto-remove-throttle), its actions then written to the progress topic:
    (throttle actions, note of that write or None)."""
    from streaming.control.sweep import sweep
    from streaming.vocabulary.throttle_actions import Policy

    applier = acting(args, admin)
    records = applier.ledger.records()
    policy = Policy(dry_run=dry_run, release=releasing(records, partitions))
    swept = sweep(admin, applier, records, policy)
    return swept.actions, publish_actions(args, admin, applier, swept.actions, swept.fresh.cluster_id)


def releasing(records, partitions):
    """Ids of active records moving any of `partitions`: an explicit verify/cancel of them overrides
    --no-auto-remove-throttle."""
    wanted = set(partitions)
    return frozenset(r.request_id for r in records if r.active and any((m.topic, m.partition) in wanted for m in r.moves))


def quiet(_line):
    """The janitor's log for the CLI: the command prints the actions itself."""


def action_json(action):
    return {"scope": action.scope, "name": action.name, "kind": action.kind, "action": action.action,
            "entries": list(action.entries), "value": action.value, "restored_value": action.restored_value,
            "reason": action.reason, "request_ids": list(action.request_ids)}


def print_actions(actions, out=None):
    from sinks.throttle_records import describe

    out = out or sys.stdout
    if not actions:
        print("Throttles: nothing to remove.", file=out)
    for action in actions:
        print(f"Throttle {describe(action)}", file=out)


def print_json(document, out=None):
    print(json.dumps(document, indent=2), file=out or sys.stdout)


def table(rows, headers, out=None):
    out = out or sys.stdout
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    print("  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip(), file=out)
    for row in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip(), file=out)


def publish_actions(args, admin, applier, actions, cluster_id):
    """Best effort: the `throttle` records of the janitor's actions to the progress topic, when it exists (written
    through `applier`, the one writer)."""
    if not actions:
        return None
    from sinks.records import encode
    from sinks.throttle_records import throttle_record
    from streaming.vocabulary.cluster_name import name_of

    ts_ms = int(time.time() * 1000)
    outputs = [throttle_record(action, ts_ms, -1, cluster_id, cluster=name_of(flags.given_cluster_name(args), args.bootstrap_server)) for action in actions]

    try:
        if not admin.topic_exists(args.progress_topic):
            return f"progress topic {args.progress_topic} does not exist: throttle records not written"
        applier.publish(args.progress_topic, [(key, encode(value)) for key, value in outputs], args.timeout)
    except ClusterError as error:  # reporting must not turn a successful cleanup into a failure
        return f"throttle records not written to {args.progress_topic}: {error}"
    return None


def positive_rate(name, value):
    """A throttle rate in bytes/s: positive, and a Java long, which is what the broker stores it as (a
    larger one would be refused only after the topic throttles were appended)."""
    if value is not None and not 0 < value <= LONG_MAX:
        raise BadInput(f"{name} must be a number of bytes per second from 1 to {LONG_MAX}, not {shown(value, 30)}")
    return value


def add_auto_throttle_bounds(parser):
    """--throttle-min/--throttle-max/--throttle-schedule: the bounds of `--throttle auto` (execute and run)."""
    from streaming.vocabulary import byte_values
    from streaming.vocabulary import throttle_values as tv

    parser.add_argument("--throttle-min", type=flags.checked(byte_values.byte_rate), metavar="RATE",
                        help="with --throttle auto: the lowest rate (and the starting one), e.g. 1MB")
    parser.add_argument("--throttle-max", type=flags.checked(byte_values.byte_rate), metavar="RATE",
                        help="with --throttle auto: the highest rate, e.g. 200MB")
    parser.add_argument("--throttle-schedule", type=flags.checked(tv.schedule), metavar="HH:MM-HH:MM=RATE[,...]",
                        help="with --throttle auto: ceilings by time of day (UTC), e.g. 22:00-06:00=200MB")


def auto_throttle_bounds(args):
    """The Steering bounds of `--throttle auto` (None without it); BadInput for bounds without auto, a missing
    or inverted bound, or a schedule ceiling outside them."""
    from streaming.control.ownership.records import Steering
    from streaming.vocabulary.throttle_values import AUTO

    given = [f for f, v in (("--throttle-min", args.throttle_min), ("--throttle-max", args.throttle_max),
                            ("--throttle-schedule", args.throttle_schedule)) if v is not None]
    if args.throttle != AUTO:
        if given:
            raise BadInput(f"{given[0]} needs --throttle auto")
        return None
    if args.throttle_min is None or args.throttle_max is None:
        raise BadInput("--throttle auto needs --throttle-min and --throttle-max")
    if args.throttle_min > args.throttle_max:
        raise BadInput(f"--throttle-min {args.throttle_min} is above --throttle-max {args.throttle_max}")
    for start, end, ceiling in args.throttle_schedule or ():
        if not args.throttle_min <= ceiling <= args.throttle_max:
            raise BadInput(f"--throttle-schedule ceiling {ceiling} is outside --throttle-min .. --throttle-max")
    return Steering(args.throttle_min, args.throttle_max, tuple(args.throttle_schedule or ()))
