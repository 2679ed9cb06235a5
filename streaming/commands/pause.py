"""`reassign-monitor pause --request-id ID`: stop submitting a plan's partitions. What moves keeps moving
(and its throttles are removed as each completes, by whoever advances the plan or by `verify` / `run`).
Exit 2 for an unknown request id or a plan that is done or cancelled."""

import json

from streaming.commands import flags, plan_execute
from streaming.commands import reassign_common as common
from streaming.vocabulary.errors import EXIT_OK
from streaming.vocabulary.states import PlanState


def add_arguments(parser):
    parser.add_argument("--request-id", required=True, type=flags.request_id, metavar="ID", help="the plan's request id")
    common.add_ownership_topic(parser)


def run(args, connect):

    admin, _, plan = plan_execute.set_state(args, connect, PlanState.PAUSED, (PlanState.RUNNING,))
    admin.close()
    if args.output == "json":
        print(json.dumps({"request_id": plan.request_id, "state": plan.state}))
    else:
        print(f"Plan {plan.request_id} {plan.state}: nothing more is submitted until `resume --request-id {plan.request_id}`")
    return EXIT_OK
