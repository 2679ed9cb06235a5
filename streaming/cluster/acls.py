"""The Kafka ACLs each command needs under an authorizer, as data: the least-privilege tables of
docs/security.md and its kafka-acls.sh example are generated from here (`make docs`, docs/reference.py; a test
checks the page is current), and the secured-cluster tests grant exactly these, then prove every grant needed by
dropping it.

A `Grant` is one operation on one resource, so "drop one" is well defined. Topics named here are the
defaults (`--progress-topic`, `--ownership-topic`); `grants(command, progress_topic=..., ...)` renames
them. Describe on the progress and ownership topics is covered by Describe on Topic `*`, which every
command needs anyway (Metadata hides the topics a principal may not describe).
No consumer group appears: the ownership topic is read by assignment without a group (streaming.control.ownership.store).

The admin door (streaming.cluster.admin) words a refusal so that it names who lacked which operation on
which resource; Kafka's answer names only the error.
"""

import json
from dataclasses import dataclass, field

from streaming.vocabulary.defaults import OWNERSHIP_TOPIC, PROGRESS_TOPIC

CLUSTER, TOPIC = "Cluster", "Topic"
ANY_TOPIC = "*"
JOB_PRINCIPAL, OPERATOR_PRINCIPAL = "User:reassign-monitor", "User:reassign-operator"


@dataclass(frozen=True)
class Grant:
    resource: str  # CLUSTER | TOPIC
    name: str  # "kafka-cluster" for the cluster; a topic name or "*" (literal pattern)
    operation: str  # as kafka-acls.sh spells it: Describe, DescribeConfigs, Alter, AlterConfigs, Create, Read, Write
    why: str = field(compare=False)  # the same grant needed by two commands is one grant

    @property
    def shown(self):
        return "Cluster" if self.resource == CLUSTER else f"Topic `{self.name}`"


def _cluster(operation, why):
    return Grant(CLUSTER, "kafka-cluster", operation, why)


def _topic(name, operation, why):
    return Grant(TOPIC, name, operation, why)


def _describe(progress_topic, ownership_topic):
    return (
        _cluster("Describe", "ListPartitionReassignments and DescribeLogDirs (both authorize Describe on the Cluster)"),
        _topic(ANY_TOPIC, "Describe", "Metadata and ListOffsets of every topic (a topic the principal may not "
                                      "describe is invisible: reported as unknown)"),
    )


def _poll(progress_topic, ownership_topic):
    return _describe(progress_topic, ownership_topic) + (
        _cluster("DescribeConfigs", "broker throttle rates (DescribeConfigs of broker resources authorizes on the Cluster)"),
        _topic(ANY_TOPIC, "DescribeConfigs", "the topics' leader/follower throttled-replicas configs"),
    )


def _throttle_removal(progress_topic, ownership_topic):
    return (
        _topic(ANY_TOPIC, "AlterConfigs", "subtracting `partition:broker` entries from the topics' throttled-replicas lists"),
        _cluster("AlterConfigs", "removing or restoring broker throttle rates (broker configs authorize on the Cluster)"),
    )


def _janitor(progress_topic, ownership_topic):
    return _throttle_removal(progress_topic, ownership_topic) + (
        _topic(ownership_topic, "Write", "marking ownership records `done` once their throttles are gone"),
    )


def _monitor(progress_topic, ownership_topic):
    return _poll(progress_topic, ownership_topic) + (
        _topic(progress_topic, "Create", "creating the progress topic if absent"),
        _topic(progress_topic, "Write", "progress records (idempotent producer: Write on a topic suffices since Kafka 3.0)"),
        _topic(ownership_topic, "Create", "creating the ownership topic if absent"),
        _topic(ownership_topic, "Read", "ownership records: per-request progress, and what the janitor may remove "
                                        "(read by assignment: no consumer group)"),
    )


def _execute(progress_topic, ownership_topic):
    return _poll(progress_topic, ownership_topic) + (
        _cluster("Alter", "AlterPartitionReassignments and AlterReplicaLogDirs"),
        _cluster("AlterConfigs", "setting broker throttle rates (and restoring them if a later step is refused)"),
        _topic(ANY_TOPIC, "AlterConfigs", "appending `partition:broker` entries to the moved topics' throttled-replicas "
                                          "lists (and removing them if a later step is refused)"),
        _topic(ownership_topic, "Create", "creating the ownership topic if absent"),
        _topic(ownership_topic, "Read", "ownership records of earlier requests (prior rates, request ids)"),
        _topic(ownership_topic, "Write", "the ownership record, written before any config is altered"),
    )


def _verify(progress_topic, ownership_topic):
    return _poll(progress_topic, ownership_topic) + _throttle_removal(progress_topic, ownership_topic) + (
        _topic(ownership_topic, "Read", "which throttles this tool owns"),
        _topic(ownership_topic, "Write", "marking ownership records `done` once their throttles are gone"),
        _topic(progress_topic, "Write", "`throttle` records of the actions taken, when the progress topic exists "
                                        "(without it the command says so in a Note and still succeeds)"),
    )


def _cancel(progress_topic, ownership_topic):
    return _verify(progress_topic, ownership_topic) + (
        _cluster("Alter", "AlterPartitionReassignments (a cancel is one with no target)"),
    )


def _plan_state(progress_topic, ownership_topic):
    return (
        _topic(ownership_topic, "Read", "the plan's records (`plan:<request id>`)"),
        _topic(ownership_topic, "Write", "the plan's new state"),
    )


def _plan_step(progress_topic, ownership_topic):
    """One step of a plan (streaming.control.plans.advance): it reads the cluster as `execute` does, sweeps the throttles of
    finished partitions, submits (or, cancelled, reverts) partitions and sets each wave's throttles."""
    return _poll(progress_topic, ownership_topic) + (
        _cluster("Alter", "AlterPartitionReassignments: submitting each wave, or reverting a cancelled plan's "
                          "partitions in flight (it also implies Describe on the Cluster for ListPartitionReassignments "
                          "and DescribeLogDirs)"),
        _cluster("AlterConfigs", "setting each wave's broker throttle rates, removing or restoring them as its "
                                 "partitions finish"),
        _topic(ANY_TOPIC, "AlterConfigs", "appending each wave's `partition:broker` entries to the throttled-replicas "
                                          "lists, subtracting them as its partitions finish"),
        _topic(ownership_topic, "Read", "the plan, its waves and its advancer's lease"),
        _topic(ownership_topic, "Write", "the plan's state, each wave's ownership record (before any config is "
                                         "altered) and the lease"),
    )


def _plan_execute(progress_topic, ownership_topic):
    return _plan_step(progress_topic, ownership_topic) + (
        _topic(ownership_topic, "Create", "creating the ownership topic if absent"),
    )


# command -> (what it is, its grants as a function of the topic names)
COMMANDS = {
    "run --throttle-cleanup off": ("the streaming job, monitoring only", _monitor),
    "run": ("the streaming job with the throttle janitor (`--throttle-cleanup owned`, the default, or `all`)",
            lambda p, o: _monitor(p, o) + _janitor(p, o)),
    "progress": ("one-shot or live progress report (it reads no throttle configs)", _describe),
    "execute": ("start a throttled reassignment", _execute),
    "verify": ("completion check and throttle removal", _verify),
    "cancel": ("cancel reassignments and remove their throttles", _cancel),
    "execute --max-partitions-in-flight": ("record a plan and submit its first wave; with `--wait`, advance it "
                                           "until done", _plan_execute),
    "pause": ("`pause --request-id`: stop a plan's submissions", _plan_state),
    "resume": ("`resume --request-id [--wait]`: resume a plan and advance it one step (with `--wait`, until done)",
               _plan_step),
    "cancel --request-id": ("cancel a plan: its partitions in flight reverted, their throttles removed", _plan_step),
}
JOB_COMMANDS = ("run --throttle-cleanup off", "run")
OPERATOR_COMMANDS = ("progress", "execute", "verify", "cancel", "execute --max-partitions-in-flight", "pause", "resume",
                     "cancel --request-id")
PLAN_COMMANDS = ("execute --max-partitions-in-flight", "pause", "resume", "cancel --request-id")


# Kafka's authorizers (AclAuthorizer, StandardAuthorizer) imply some operations from others on the same
# resource: Describe from Read, Write, Delete or Alter; DescribeConfigs from AlterConfigs.
IMPLIED_BY = {"Describe": ("Read", "Write", "Delete", "Alter"), "DescribeConfigs": ("AlterConfigs",)}


def implied(grant, others):
    """Whether another of `others` on the same resource implies `grant` (granting it would add nothing)."""
    return any((o.resource, o.name) == (grant.resource, grant.name) and o.operation in IMPLIED_BY.get(grant.operation, ())
               for o in others)


def grants(command, progress_topic=PROGRESS_TOPIC, ownership_topic=OWNERSHIP_TOPIC):
    """The grants `command` (a key of COMMANDS) needs, each once, in definition order, without those another
    grant of the command implies: the least that works."""
    wanted = tuple(dict.fromkeys(COMMANDS[command][1](progress_topic, ownership_topic)))
    return tuple(g for g in wanted if not implied(g, wanted))


def union(commands, **topics):
    wanted = tuple(dict.fromkeys(g for command in commands for g in grants(command, **topics)))
    return tuple(g for g in wanted if not implied(g, wanted))


def job_plan_grants(**topics):
    """What a job holding `run`'s grants lacks to advance plans (a plan's step is `resume`'s)."""
    held = union(("run",), **topics)
    return tuple(g for g in union(("run", "resume"), **topics) if g not in held and not implied(g, held))


# -- the text of docs/security.md "Kafka ACLs" --


def _table(rows):
    lines = ["| resource | operation | for |", "|---|---|---|"]
    lines += [f"| {g.shown} | {g.operation} | {g.why} |" for g in rows]
    return lines


def _kafka_acls(principal_var, rows):
    by_resource = {}
    for g in rows:
        by_resource.setdefault((g.resource, g.name), []).append(g.operation)
    lines = []
    for (resource, name), operations in by_resource.items():
        target = "--cluster" if resource == CLUSTER else f"--topic '{name}'"
        ops = " ".join(f"--operation {op}" for op in operations)
        lines.append(f"kafka-acls.sh --bootstrap-server B --command-config admin.properties --add "
                     f"--allow-principal ${principal_var} {ops} {target}")
    return lines


def markdown():
    """The generated part of docs/security.md "Kafka ACLs" (Markdown; links are relative to docs/)."""
    out = ["A grant that another grant of the same command implies is left out (Kafka's authorizers imply",
           "Describe from Read, Write, Delete or Alter, and DescribeConfigs from AlterConfigs, on the same resource).",
           ""]
    for command, (what, _) in COMMANDS.items():
        out += [f"`{command}`: {what}.", ""] + _table(grants(command)) + [""]
    out += ["`--throttle auto` needs no grant beyond these: `run --throttle auto` changes the broker rates that",
            "auto requests own (Cluster AlterConfigs, as `run`'s janitor) and rewrites their ownership records with",
            "the new rate (Write on the ownership topic, as `run`); `execute --throttle auto` sets its starting rate",
            "like any throttle. The guard (`--throttle-guard-url`) is an HTTP query to Prometheus, outside Kafka's",
            "ACLs: the job needs only network access to it.", ""]
    beyond = "; ".join(f"**{g.operation} on {g.shown}**, for {g.why}" for g in job_plan_grants())
    out += ["**The job advances plans** ([plans.md](plans.md#who-advances-a-plan)) only with the grants of `resume`",
            "added to `run`'s,",
            f"that is: {beyond}. Without them the job reports each plan as not advanced and goes on; the plan",
            "waits for `resume --request-id ID --wait` or a job that holds them.", ""]
    out += ["The job's principal holds the grants of `run`, the operators' those of every other command:", "", "```",
            f"J={JOB_PRINCIPAL}", f"O={OPERATOR_PRINCIPAL}"]
    out += _kafka_acls("J", union(JOB_COMMANDS)) + _kafka_acls("O", union(OPERATOR_COMMANDS)) + ["```"]
    return "\n".join(out)



# -- the text of docs/security.md "The IAM policy" --

# Each Kafka ACL as the IAM action MSK's IAM access control authorizes instead (MSK's developer guide, "Semantics of
# IAM authorization policy actions and resources": each action is "equivalent to Apache Kafka's" ACL named here).
MSK_IAM_ACTIONS = {
    (CLUSTER, "Describe"): "kafka-cluster:DescribeCluster",
    (CLUSTER, "Alter"): "kafka-cluster:AlterCluster",
    (CLUSTER, "DescribeConfigs"): "kafka-cluster:DescribeClusterDynamicConfiguration",
    (CLUSTER, "AlterConfigs"): "kafka-cluster:AlterClusterDynamicConfiguration",
    (TOPIC, "Describe"): "kafka-cluster:DescribeTopic",
    (TOPIC, "DescribeConfigs"): "kafka-cluster:DescribeTopicDynamicConfiguration",
    (TOPIC, "AlterConfigs"): "kafka-cluster:AlterTopicDynamicConfiguration",
    (TOPIC, "Create"): "kafka-cluster:CreateTopic",
    (TOPIC, "Read"): "kafka-cluster:ReadData",
    (TOPIC, "Write"): "kafka-cluster:WriteData",
}
MSK_CONNECT = "kafka-cluster:Connect"  # every principal: to connect at all
# The producers are idempotent: Kafka's authorizers take Write on the topic for it (Kafka 3.0+); MSK's IAM access
# control names its own action for Kafka's IDEMPOTENT_WRITE, which a principal that writes is given too.
MSK_IDEMPOTENT_WRITE = "kafka-cluster:WriteDataIdempotently"
CLUSTER_ARN = "arn:aws:kafka:REGION:ACCOUNT:cluster/CLUSTER_NAME/CLUSTER_UUID"
TOPIC_ARN = "arn:aws:kafka:REGION:ACCOUNT:topic/CLUSTER_NAME/CLUSTER_UUID/{name}"


def msk_iam_action(operation, resource):
    """The MSK IAM action of Kafka's `operation` on `resource` ("Cluster" or "Topic NAME"), as a refusal names it."""
    return MSK_IAM_ACTIONS.get((resource.split(" ", 1)[0], operation), f"of Kafka's {operation}")


def msk_iam_actions(commands, **topics):
    """{resource ARN pattern: IAM actions} that `commands` need under MSK's IAM access control: each grant's action,
    implied ones included (IAM implies none: WriteData does not grant DescribeTopic), Connect on the cluster, and
    WriteDataIdempotently where anything is written."""
    wanted = dict.fromkeys(g for command in commands for g in COMMANDS[command][1](
        topics.get("progress_topic", PROGRESS_TOPIC), topics.get("ownership_topic", OWNERSHIP_TOPIC)))
    found = {CLUSTER_ARN: [MSK_CONNECT]}
    for g in wanted:
        arn = CLUSTER_ARN if g.resource == CLUSTER else TOPIC_ARN.format(name=g.name)
        found.setdefault(arn, [])
        if MSK_IAM_ACTIONS[(g.resource, g.operation)] not in found[arn]:
            found[arn].append(MSK_IAM_ACTIONS[(g.resource, g.operation)])
    if any(g.operation == "Write" for g in wanted):
        found[CLUSTER_ARN].append(MSK_IDEMPOTENT_WRITE)
    return found


def _policy(commands):
    statements = [{"Effect": "Allow", "Action": actions, "Resource": arn}
                  for arn, actions in msk_iam_actions(commands).items()]
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, indent=2).splitlines()


def msk_iam_markdown():
    """The generated part of docs/security.md "The IAM policy" (Markdown)."""
    out = ["| Kafka ACL (above) | MSK IAM action |", "|---|---|"]
    out += [f"| {resource} {operation} | `{action}` |" for (resource, operation), action in MSK_IAM_ACTIONS.items()]
    out += [f"| (any) | `{MSK_CONNECT}` on the cluster, to connect at all |",
            f"| Topic Write (idempotent producer) | `{MSK_IDEMPOTENT_WRITE}` on the cluster |", ""]
    out += ["The job's role (the grants of `run`):", "", "```json"] + _policy(JOB_COMMANDS) + ["```", ""]
    out += ["The operators' role (every other command):", "", "```json"] + _policy(OPERATOR_COMMANDS) + ["```"]
    return "\n".join(out)
