"""`reassign-monitor resume --request-id ID [--wait]`: submit a plan's partitions again, and advance it
one step (with --wait: until done, in the foreground). Also how a plan continues after the foreground
executor (`execute --wait`) was killed: `resume --request-id ID --wait` reads the plan and its waves back
from the ownership topic and goes on. Exit 2 for an unknown request id or a plan done or cancelled."""

from streaming.commands import flags, plan_execute
from streaming.commands import reassign_common as common
from streaming.vocabulary.states import PlanState


def add_arguments(parser):
    parser.add_argument("--request-id", required=True, type=flags.request_id, metavar="ID", help="the plan's request id")
    plan_execute.add_wait(parser)
    common.add_ownership_topic(parser)


def run(args, connect):

    admin, applier, plan = plan_execute.set_state(args, connect, PlanState.RUNNING, (PlanState.PAUSED,), steps=True)
    try:
        return plan_execute.advance(args, admin, applier, plan.request_id, args.wait)
    finally:
        admin.close()
