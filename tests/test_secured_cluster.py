"""Every command and the streaming job against a secured cluster (SASL_SSL, SCRAM-SHA-512, OAUTHBEARER and GSSAPI,
StandardAuthorizer), each run as a principal of each mechanism holding exactly the grants of streaming.cluster.acls
(the tables of docs/security.md "Kafka ACLs"), every grant proven needed by dropping it, connection failures named,
and no password, client secret, token or keytab key in any output channel. AWS MSK IAM's tokens reach the brokers
as OAUTHBEARER (refused here: the cluster validates OIDC tokens).

The tests run in the order they are written: first those that start no move and set no throttle, beside one job that
runs for minutes under 60 s tokens (`reauth_job`, judged by test_job_across_token_lifetimes, which says why only they
may run beside it); then, that job stopped, the tests that move partitions and set throttles."""

import base64
import json
import subprocess
import time
from dataclasses import dataclass

import pytest

from streaming.control.ownership.records import Ownership
from streaming.control.applier import applier_of
from streaming.control.ownership.store import KafkaLedger, ensure_ownership_topic
from streaming.cluster.admin import KafkaClusterAdmin
from streaming.cluster import acls
from streaming.cluster.connect_diagnosis import diagnose
from streaming.vocabulary import client_config
from streaming.vocabulary.errors import AuthenticationFailed, TlsFailed, Unreachable
from sinks.metric_names import POLL_ERRORS, THROTTLE_ACTIONS
from streaming.control.controller import LOG_PREFIX as CONTROLLER_LOG_PREFIX
from tests import aws_environment
from tests.cluster_cli import MB, cli, expect_throttles, reassigning, replicas, throttles, wait_done, write_plan
from tests.java_client_files import scram_java_form
from tests.job_process import BATCHES, CLI, JobProcess, failures_after, free_port, read_raw, sample_value
from tests.kafka_fixtures import wait_for
from tests.oidc_issuer import TOKEN_LIFETIME_S
from tests.reauth_job import REAUTH_CLIENT, REAUTH_OWN, REAUTH_RUN_S, count_reauths, reauths
from tests.secure_cluster import REAUTH_MS, topic_bytes
from streaming.vocabulary.states import OwnershipState

FAST, SLOW = 50_000_000, 100_000  # B/s: a 2 MB move done in a moment, or lasting ~20 s
# The SASL mechanisms every command and the job are proven with, as a principal of each.
SCRAM, OAUTHBEARER, GSSAPI = "SCRAM-SHA-512", client_config.OAUTHBEARER, client_config.GSSAPI
MECHANISMS = (SCRAM, OAUTHBEARER, GSSAPI)


def principal_name(mechanism, name):
    """SCRAM principals keep their names; the others are prefixed with their mechanism."""
    return name if mechanism == SCRAM else f"{_name(mechanism)}-{name}"


def _name(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def run_cli(*argv):
    """`reassign-monitor ARGV --debug` in this process: (exit code, stdout, stderr)."""
    return cli(*argv, "--debug")


def command_args(cluster, command, config, *rest):
    return (command, "--bootstrap-server", cluster.bootstrap, "--command-config", config, *rest)


def moving_topic(cluster, clean_topics, megabytes=2):
    """A one-partition topic on broker 1 holding `megabytes`, deleted after the test."""
    topic = cluster.unique_topic("sec")
    clean_topics.append(topic)
    return cluster.create_topic(topic, {0: [1]}, megabytes=megabytes)


def assert_no_password(cluster, channels):
    """`channels`: {name: text or bytes}. Every password made in this session, none in any channel."""
    for name, content in channels.items():
        data = content if isinstance(content, bytes) else content.encode()
        leaked = [p for p in cluster.passwords if p.encode() in data]
        assert not leaked, f"a password appears in {name}"


def assert_one_error_line(err, *fragments):
    lines = [line for line in err.splitlines() if line.startswith("reassign-monitor ")]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def topics(secure_cluster):
    created = []
    yield created
    secure_cluster.delete_topics(created)


def every_operator_command(run, cluster, topic, plan):
    """progress, execute (slow), cancel, execute (fast), verify of the move in `plan` (partition 0 of `topic`
    from broker 1 to 2), each through `run(command, *flags) -> (code, out, err)`, with the throttles and
    replicas each one leaves checked on the cluster."""
    code, out, err = run("progress")
    assert code == 0, err
    code, out, err = run("execute", "--reassignment-json-file", plan, "--throttle", SLOW)
    assert code == 0, err
    expect_throttles(cluster, [topic], {(topic, "leader"): frozenset({"0:1"}), (topic, "follower"): frozenset({"0:2"}),
                                        (1, "leader"): SLOW, (1, "follower"): SLOW, (2, "leader"): SLOW, (2, "follower"): SLOW})
    code, out, err = run("cancel", "--reassignment-json-file", plan)
    assert code == 0, err
    assert "cancelled" in out
    expect_throttles(cluster, [topic], {})
    assert replicas(cluster, topic, 0) == [1]

    code, out, err = run("execute", "--reassignment-json-file", plan, "--throttle", FAST)
    assert code == 0, err
    wait_done(cluster, [(topic, 0)], 60)
    code, out, err = run("verify", "--reassignment-json-file", plan)
    assert code == 0, err
    assert "complete" in out
    expect_throttles(cluster, [topic], {})
    assert replicas(cluster, topic, 0) == [2]


# -- one job for minutes under 60 s tokens, beside the tests that start no move (test_job_across_token_lifetimes) --

REAUTH_KEY = "listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms"  # deploy/local-cluster.sh


# -- every grant needed: drop it and the matching command fails with a clear line --

@dataclass(frozen=True)
class Drop:
    command: str  # the command run (a key of acls.COMMANDS)
    resource: str
    name: str
    operation: str
    exit_code: int
    says: tuple  # fragments of the one error line (or, exit 0, of stdout)
    setup: str = ""  # "no-progress-topic", "no-ownership-topic", "ownership-record", "completed-owned-move",
    #                   "job-poll" (the job's poll in-process: its calls' errors, not an exit)

    @property
    def grant(self):
        return acls.Grant(self.resource, self.name, self.operation, "")

    @property
    def moves(self):
        """Its setup moves a partition under throttles: it cannot run beside `reauth_job`."""
        return self.setup == "completed-owned-move"


C, T, P, O = acls.CLUSTER, acls.TOPIC, acls.PROGRESS_TOPIC, acls.OWNERSHIP_TOPIC
OWNERSHIP_REFUSED = ("not authorized", "User:drop-{case} lacks {operation} on Topic " + O)
DROPS = {
    "cluster-describe": Drop("progress", C, "kafka-cluster", "Describe", 3, ("not authorized", "ListPartitionReassignments")),
    # kafka-python's describe_configs drops a resource's error and answers {}: a refused DescribeConfigs would
    # look like "no throttles" (streaming/cluster/admin.py checks each resource's error code). Only the monitoring job
    # holds these grants (AlterConfigs implies them elsewhere); its poll, run here in-process, reports the error.
    "cluster-describeconfigs": Drop("run --throttle-cleanup off", C, "kafka-cluster", "DescribeConfigs", 3,
                                    ("not authorized", "lacks DescribeConfigs on Cluster"), "job-poll"),
    "topic-describeconfigs": Drop("run --throttle-cleanup off", T, "*", "DescribeConfigs", 3,
                                  ("not authorized", "lacks DescribeConfigs on Topic"), "job-poll"),
    # Metadata hides a topic the principal may not describe: Kafka itself cannot say more than "unknown".
    "topic-describe": Drop("verify", T, "*", "Describe", 2, ("{topic}", "unknown topic")),
    "progress-create": Drop("run --throttle-cleanup off", T, P, "Create", 3, ("not authorized", P), "no-progress-topic"),
    "progress-write": Drop("verify", T, P, "Write", 0, ("Note:", P, "not authorized"), "completed-owned-move"),
    "ownership-create": Drop("execute", T, O, "Create", 3, OWNERSHIP_REFUSED, "no-ownership-topic"),
    "ownership-read": Drop("verify", T, O, "Read", 3, OWNERSHIP_REFUSED, "ownership-record"),
    "ownership-write": Drop("execute", T, O, "Write", 3, OWNERSHIP_REFUSED),
    "topic-alterconfigs": Drop("execute", T, "*", "AlterConfigs", 3, ("not authorized", "{topic}")),
    # AlterConfigs implies DescribeConfigs: without it execute's first refused call reads the broker rates.
    "cluster-alterconfigs": Drop("execute", C, "kafka-cluster", "AlterConfigs", 3,
                                 ("not authorized", "lacks DescribeConfigs on Cluster")),
    # Alter implies Describe on the Cluster (execute holds no Describe of its own): the first call to fail is
    # ListPartitionReassignments, before anything was changed.
    "cluster-alter": Drop("execute", C, "kafka-cluster", "Alter", 3, ("not authorized", "lacks Describe on Cluster")),
}


def test_every_grant_is_proven():
    proven = {case.grant for case in DROPS.values()}
    assert proven == {g for command in acls.COMMANDS for g in acls.grants(command)}, \
        "a grant of streaming.cluster.acls has no drop case"
    assert all(case.grant in acls.grants(case.command) for case in DROPS.values())


def seed_ownership_record(cluster, topic):
    """A settled record in the ownership topic `topic`: reading a topic that holds one needs Read (an empty one
    is read without a Fetch)."""
    admin = KafkaClusterAdmin(cluster.bootstrap, str(cluster.admin_config))
    try:
        ensure_ownership_topic(applier_of(admin), topic)
        applier_of(admin, KafkaLedger(admin, topic)).record(
            Ownership(f"{int(time.time() * 1000)}-seed", OwnershipState.DONE, 0, 0))
    finally:
        admin.close()


def _arrange(cluster, setup, topic, tmp_path, config_of):
    if setup == "no-progress-topic":
        cluster.delete_topic_and_wait(P)
    elif setup == "no-ownership-topic":
        cluster.delete_topic_and_wait(O)
    elif setup == "ownership-record":
        seed_ownership_record(cluster, O)
    elif setup == "completed-owned-move":
        from sinks.progress_topic import CONFIG, PARTITIONS

        if P not in cluster.confluent_admin().list_topics(timeout=10).topics:
            from kafka.admin import NewTopic
            admin = cluster.admin()
            try:
                admin.create_topics([NewTopic(P, PARTITIONS, 3, topic_configs=CONFIG)])
            finally:
                admin.close()
        plan = write_plan(tmp_path / "setup.json", [(topic, 0, [2])])
        code, _, err = run_cli(*command_args(cluster, "execute", config_of("execute"), "--reassignment-json-file", plan,
                                             "--throttle", FAST))
        assert code == 0, err
        wait_done(cluster, [(topic, 0)], 60)


@pytest.mark.usefixtures("reauth_job")
@pytest.mark.parametrize("case_id", [case_id for case_id, case in DROPS.items() if not case.moves])
def test_each_grant_is_needed(secure_cluster, topics, tmp_path, case_id):
    grant_is_needed(secure_cluster, topics, tmp_path, case_id)


def grant_is_needed(cluster, topics, tmp_path, case_id):
    case = DROPS[case_id]
    kept = [g for g in acls.grants(case.command) if g != case.grant]
    config = cluster.principal(f"drop-{case_id}", kept, tmp_path)
    topic = moving_topic(cluster, topics, megabytes=1)
    _arrange(cluster, case.setup, topic, tmp_path,
             lambda command: cluster.principal(f"setup-{case_id}", acls.grants(command), tmp_path))
    plan = write_plan(tmp_path / "plan.json", [(topic, 0, [2])])
    rest = {"progress": (), "verify": ("--reassignment-json-file", plan),
            "execute": ("--reassignment-json-file", plan, "--throttle", SLOW)}
    if case.setup == "job-poll":
        code, out, err = _job_poll(cluster, config)
    elif case.command.startswith("run"):
        code, out, err = _run_job_until_exit(cluster, config, tmp_path, case.command.split()[1:])
    else:
        code, out, err = run_cli(*command_args(cluster, case.command, config, *rest[case.command]))
    assert code == case.exit_code, (out, err)
    says = [f.format(case=case_id, operation=case.operation, topic=topic) for f in case.says]
    if case.exit_code == 3:
        line = assert_one_error_line(err, *says)
        assert len(line) < 400, line
    else:  # a report, not a failure: the table or the note says it
        assert all(f in out + err for f in says), (out, err)
    if case.command == "execute":  # a refused execute leaves nothing behind: no move, no throttle
        assert (topic, 0) not in reassigning(cluster)
        expect_throttles(cluster, [topic], {})
    assert_no_password(cluster, {"stdout": out, "stderr": err})


def _job_poll(cluster, config):
    """The streaming job's poll (what its source runs every batch), in this process: (3 and the failed call's
    message when a call failed, else 0; "" stdout)."""
    from streaming.cluster.admin import KafkaClusterAdmin
    from streaming.cluster.poller import poll

    admin = KafkaClusterAdmin(cluster.bootstrap, str(config), 10.0)
    try:
        errors = poll(admin, all_partitions=True).errors
    finally:
        admin.close()
    return (3 if errors else 0), "", "".join(f"reassign-monitor run: error: {e.message}\n" for e in errors)


def _run_job_until_exit(cluster, config, tmp_path, flags, timeout_s=120):
    result = subprocess.run([CLI, "run", "--bootstrap-server", cluster.bootstrap, "--command-config", str(config),
                             "--checkpoint-location", str(tmp_path / "checkpoint"), "--metrics-port", str(free_port()),
                             "--metrics-address", "127.0.0.1", "--debug", *flags],
                            capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout, result.stderr


# -- the plan commands: each with exactly its grants works; each grant dropped, it fails and writes nothing --

PLAN, RESUME, CANCEL_PLAN = "execute --max-partitions-in-flight", "resume", "cancel --request-id"
# The plans here live in an ownership topic of their own: the job's test (default topic) must not find them.
PLAN_OWN = "sec-plan-ownership"
PLAN_OWNERSHIP_REFUSED = ("not authorized", "User:drop-{case} lacks {operation} on Topic " + PLAN_OWN)
# The first refusal of a step's read (streaming.control.plans.step) is its first call whose grant an absent one implies.
LIST_REFUSED = ("not authorized", "lacks Describe on Cluster")  # Alter implies it: ListPartitionReassignments
BROKER_CONFIGS_REFUSED = ("not authorized", "lacks DescribeConfigs on Cluster")  # Cluster AlterConfigs implies it
TOPIC_CONFIGS_REFUSED = ("not authorized", "lacks DescribeConfigs on Topic")  # Topic AlterConfigs implies it
HIDDEN_TOPIC = ("not authorized", "lacks Describe on Topic {topic}")  # asked by name: never taken for deleted
PLAN_DROPS = {
    "plan-topic-describe": Drop(PLAN, T, "*", "Describe", 2, ("{topic}", "unknown topic")),
    "plan-cluster-alter": Drop(PLAN, C, "kafka-cluster", "Alter", 3, LIST_REFUSED),
    "plan-cluster-alterconfigs": Drop(PLAN, C, "kafka-cluster", "AlterConfigs", 3, BROKER_CONFIGS_REFUSED),
    "plan-topic-alterconfigs": Drop(PLAN, T, "*", "AlterConfigs", 3, TOPIC_CONFIGS_REFUSED),
    # An empty ownership topic is read without a Fetch (nothing to read): a record makes the read need Read.
    "plan-ownership-read": Drop(PLAN, T, PLAN_OWN, "Read", 3, PLAN_OWNERSHIP_REFUSED, "ownership-record"),
    "plan-ownership-write": Drop(PLAN, T, PLAN_OWN, "Write", 3, PLAN_OWNERSHIP_REFUSED),
    "plan-ownership-create": Drop(PLAN, T, PLAN_OWN, "Create", 3, PLAN_OWNERSHIP_REFUSED, "no-ownership-topic"),
    "pause-ownership-read": Drop("pause", T, PLAN_OWN, "Read", 3, PLAN_OWNERSHIP_REFUSED),
    "pause-ownership-write": Drop("pause", T, PLAN_OWN, "Write", 3, PLAN_OWNERSHIP_REFUSED),
    **{f"{prefix}-{case}": Drop(command, resource, name, operation, 3, says)
       for prefix, command in (("resume", RESUME), ("cancel-plan", CANCEL_PLAN))
       for case, resource, name, operation, says in (
           ("topic-describe", T, "*", "Describe", HIDDEN_TOPIC),
           ("cluster-alter", C, "kafka-cluster", "Alter", LIST_REFUSED),
           ("cluster-alterconfigs", C, "kafka-cluster", "AlterConfigs", BROKER_CONFIGS_REFUSED),
           ("topic-alterconfigs", T, "*", "AlterConfigs", TOPIC_CONFIGS_REFUSED),
           ("ownership-read", T, PLAN_OWN, "Read", PLAN_OWNERSHIP_REFUSED),
           ("ownership-write", T, PLAN_OWN, "Write", PLAN_OWNERSHIP_REFUSED))},
}


def test_every_plan_grant_is_proven():
    for command in acls.PLAN_COMMANDS:
        proven = {case.grant for case in PLAN_DROPS.values() if case.command == command}
        assert proven == set(acls.grants(command, ownership_topic=PLAN_OWN)), f"a grant of {command} has no drop case"


def plan_argv(cluster, command, config, request_id=None, plan=None):
    first = command.split()[0]
    rest = {PLAN: ("--reassignment-json-file", plan, "--throttle", FAST, "--max-partitions-in-flight", 1),
            "pause": ("--request-id", request_id), RESUME: ("--request-id", request_id),
            CANCEL_PLAN: ("--request-id", request_id)}[command]
    return command_args(cluster, first, config, "--ownership-topic", PLAN_OWN, *rest)


def plan_picture(cluster, topic):
    """What a plan command may change: every plan and wave in the ownership topic (state, moves), what
    reassigns, the replicas of `topic`'s partitions, and the throttles."""
    from streaming.control.ownership.store import KafkaLedger

    admin = KafkaClusterAdmin(cluster.bootstrap, str(cluster.admin_config))
    try:
        names = cluster.confluent_admin().list_topics(timeout=10).topics
        plans = sorted((p.request_id, p.state) for p in KafkaLedger(admin, PLAN_OWN).plans()) \
            if PLAN_OWN in names else []
        waves = sorted((r.request_id, r.state, r.moves) for r in KafkaLedger(admin, PLAN_OWN).records()) \
            if PLAN_OWN in names else []
    finally:
        admin.close()
    return (plans, waves, sorted(reassigning(cluster)), [replicas(cluster, topic, p) for p in (0, 1)],
            throttles(cluster, [topic]))


def _arrange_plan(cluster, setup):
    if setup == "no-ownership-topic":
        names = cluster.confluent_admin().list_topics(timeout=10).topics
        if PLAN_OWN in names:
            cluster.delete_topic_and_wait(PLAN_OWN)
    elif setup == "ownership-record":
        seed_ownership_record(cluster, PLAN_OWN)


@pytest.mark.usefixtures("reauth_job")
@pytest.mark.parametrize("case_id", [case_id for case_id, case in PLAN_DROPS.items() if case.command == PLAN])
def test_each_plan_grant_is_needed(secure_cluster, topics, tmp_path, case_id):
    plan_grant_is_needed(secure_cluster, topics, None, tmp_path, case_id)


def plan_grant_is_needed(cluster, topics, standing_plans, tmp_path, case_id):
    """`standing_plans`: the fixture, for the cases acting on a plan (all but the plan's execute)."""
    case = PLAN_DROPS[case_id]
    kept = [g for g in acls.grants(case.command, ownership_topic=PLAN_OWN) if g != case.grant]
    config = cluster.principal(f"drop-{case_id}", kept, tmp_path)
    if case.command == PLAN:
        topic, request_id = moving_topic(cluster, topics, megabytes=0.05), None
        file = write_plan(tmp_path / "plan.json", [(topic, 0, [2])])
        _arrange_plan(cluster, case.setup)
    else:  # a paused plan for resume (it would write `running`), a running one for pause and cancel
        topic, request_id = standing_plans("paused" if case.command == RESUME else "running")
        file = None
    before = plan_picture(cluster, topic)
    code, out, err = run_cli(*plan_argv(cluster, case.command, config, request_id, file))
    assert code == case.exit_code, (out, err)
    says = [f.format(case=case_id, operation=case.operation, topic=topic) for f in case.says]
    line = assert_one_error_line(err, *says)
    assert len(line) < 400, line
    assert plan_picture(cluster, topic) == before  # nothing written: no plan, state, wave, move or throttle
    assert_no_password(cluster, {"stdout": out, "stderr": err})


# -- connection failures: each named, within the timeout --

def _config_variant(cluster, tmp_path, name, change):
    base = cluster.principal(f"conn-{name}", acls.grants("progress"), tmp_path)
    lines = dict(line.split("=", 1) for line in base.read_text().splitlines())
    lines.update(change(cluster, tmp_path))
    path = tmp_path / f"{name}-variant.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items() if v is not None))
    return path


def _other_ca(_cluster, tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other",
                    "-keyout", str(tmp_path / "other.key"), "-out", str(tmp_path / "other.pem")],
                   check=True, capture_output=True)
    return {"ssl.ca.location": str(tmp_path / "other.pem")}


FAILURES = {  # id: (config change, bootstrap port offset, expected class, fragments of its message)
    "wrong-password": (lambda c, t: {"sasl.password": "not-the-password"}, 1, AuthenticationFailed,
                       ("conn-wrong-password", "SCRAM-SHA-512")),
    "wrong-mechanism": (lambda c, t: {"sasl.mechanism": "SCRAM-SHA-256"}, 1, AuthenticationFailed,
                        ("conn-wrong-mechanism", "SCRAM-SHA-256")),
    "untrusted-ca": (_other_ca, 1, TlsFailed, ("other.pem",)),
    "plaintext-against-tls": (lambda c, t: {"security.protocol": "SASL_PLAINTEXT", "ssl.ca.location": None}, 1,
                              TlsFailed, ("expects TLS", "SASL_PLAINTEXT")),
    "nothing-listening": (lambda c, t: {}, 99, Unreachable, ("no broker accepted a connection",)),
    # The mutual-TLS listener (BASE+11) without a client certificate: TLS 1.3 says so only after the handshake.
    "mtls-without-client-certificate": (lambda c, t: {"security.protocol": "SSL", "sasl.mechanism": None,
                                                      "sasl.username": None, "sasl.password": None}, 11, TlsFailed,
                                        ("requires a client certificate", "ssl.keystore.location")),
}
TIMEOUT_S = 4.0


@pytest.mark.usefixtures("reauth_job")
@pytest.mark.parametrize("case_id", list(FAILURES))
def test_connection_failure_is_named(secure_cluster, tmp_path, case_id):
    change, port_offset, expected, fragments = FAILURES[case_id]
    config = _config_variant(secure_cluster, tmp_path, case_id, change)
    bootstrap = f"127.0.0.1:{secure_cluster.base_port + port_offset}"
    started = time.monotonic()
    found = diagnose(bootstrap, client_config.read_config(config), TIMEOUT_S)
    assert time.monotonic() - started < TIMEOUT_S + 1
    assert type(found) is expected, found
    assert all(f in str(found) for f in fragments), str(found)
    assert_no_password(secure_cluster, {"diagnosis": str(found)})


@pytest.mark.usefixtures("reauth_job")
@pytest.mark.parametrize("case_id", list(FAILURES))
def test_cli_names_connection_failure(secure_cluster, tmp_path, case_id):
    """The CLI says the same as diagnose, in one line, exit 3, within the timeout (plus start-up)."""
    change, port_offset, expected, fragments = FAILURES[case_id]
    config = _config_variant(secure_cluster, tmp_path, case_id, change)
    started = time.monotonic()
    code, out, err = run_cli("progress", "--bootstrap-server", f"127.0.0.1:{secure_cluster.base_port + port_offset}",
                             "--command-config", config, "--timeout", TIMEOUT_S)
    assert time.monotonic() - started < 2 * TIMEOUT_S + 2
    assert code == 3, err
    assert_one_error_line(err, *fragments)
    assert_no_password(secure_cluster, {"stdout": out, "stderr": err})


# -- OAUTHBEARER: a token endpoint that refuses, cannot be reached or is not trusted, each named --

TOKEN_ENDPOINT_FAILURES = {  # id: (change to the principal's file text, fragments of the one error line)
    "wrong-client-secret": (lambda text, c, secret: text.replace(secret, "not-the-secret"),
                            ("refused the client credentials of client oauth-conn-wrong-client-secret", "HTTP 401",
                             "invalid_client")),
    "token-endpoint-unreachable": (lambda text, c, secret: text.replace(c.issuer.token_url,
                                                                        f"https://127.0.0.1:{free_port()}/token"),
                                   ("token endpoint https://127.0.0.1:", "unreachable")),
    "token-endpoint-untrusted": (lambda text, c, secret: text.replace(str(c.issuer.ca_pem), str(c.dir / "tls" / "ca.pem")),
                                 ("TLS handshake with the token endpoint", "not trusted by the token endpoint's trust "
                                  "store")),
}


def assert_progress_refused(secure_cluster, config, fragments):
    """`progress` with `config` fails in one line holding `fragments`, within two timeouts, exit 3, no secret out."""
    started = time.monotonic()
    code, out, err = run_cli("progress", "--bootstrap-server", secure_cluster.bootstrap, "--command-config", config,
                             "--timeout", TIMEOUT_S)
    assert time.monotonic() - started < 2 * TIMEOUT_S + 2
    assert code == 3, err
    assert_one_error_line(err, *fragments)
    assert_no_password(secure_cluster, {"stdout": out, "stderr": err})


@pytest.mark.usefixtures("reauth_job")
@pytest.mark.parametrize("case_id", list(TOKEN_ENDPOINT_FAILURES))
def test_cli_names_token_endpoint_failure(secure_cluster, tmp_path, case_id):
    change, fragments = TOKEN_ENDPOINT_FAILURES[case_id]
    name = f"oauth-conn-{case_id}"
    config = secure_cluster.principal(name, acls.grants("progress"), tmp_path, OAUTHBEARER)
    config.write_text(change(config.read_text(), secure_cluster, secure_cluster.issuer.clients[name]))
    assert_progress_refused(secure_cluster, config, fragments)


# -- AWS MSK IAM: its tokens go out as OAUTHBEARER --

MSK_IAM_FILE = ("security.protocol=SASL_SSL\nsasl.mechanism=AWS_MSK_IAM\nsasl.client.callback.handler.class="
                "software.amazon.msk.auth.iam.IAMClientCallbackHandler\nsasl.jaas.config=software.amazon.msk.auth.iam."
                f'IAMLoginModule required awsProfileName="{aws_environment.PROFILE}";\naws.region=us-east-1\n')
# The default --timeout: the connection's diagnosis gets what the first bootstrap leaves of it, and librdkafka named the
# broker's refusal of an OAUTHBEARER token only after about 2 s (measured; with --timeout 4 it had 1.2 s).
MSK_IAM_TIMEOUT_S = "10"


@pytest.mark.usefixtures("reauth_job")
def test_msk_iam_token_reaches_the_broker_as_oauthbearer(secure_cluster, tmp_path, monkeypatch):
    """A token AWS's signer made (the fixed example keys of tests/aws_environment.py) goes to the brokers as an
    OAUTHBEARER token from a file of the Java-only AWS_MSK_IAM form (the OAUTHBEARER form is read into the same
    settings: tests/test_client_config.py). This cluster's OIDC validator refuses it (a presigned URL is no JWT): said
    in one line, exit 3, naming the AWS identity, with no token or key in any output. There is no MSK here: that MSK
    accepts such tokens is AWS's signer's promise (tests/test_msk_iam.py checks the token itself)."""
    aws_environment.isolate(monkeypatch, tmp_path / "aws")
    config = tmp_path / "msk.properties"
    config.write_text(MSK_IAM_FILE + f"ssl.ca.location={secure_cluster.dir / 'tls' / 'ca.pem'}\n")
    code, out, err = run_cli("progress", "--bootstrap-server", secure_cluster.bootstrap, "--command-config", config,
                             "--timeout", MSK_IAM_TIMEOUT_S)
    assert code == 3, err
    assert_one_error_line(err, f"authentication as the AWS identity of AWS profile {aws_environment.PROFILE} with "
                               f"AWS MSK IAM (as OAUTHBEARER) refused by", "SASL authentication error")
    signed_url = base64.urlsafe_b64encode(b"https://kafka.us-east-1.amazonaws.com/").decode()[:24]
    for leak in (aws_environment.SECRET_KEY, "X-Amz-Signature", signed_url):
        assert leak not in out + err, leak


# -- GSSAPI: a keytab the KDC no longer takes and an expired principal, each named (the other refusals of the KDC:
# tests/test_kerberos_login.py) --

KERBEROS_FAILURES = {  # id: (what is done to the principal, fragments of the one error line)
    "keytab-of-an-old-key": (lambda cluster, name: cluster.kdc.new_key(name),
                             ("Kerberos login as kerberos-conn-keytab-of-an-old-key@", "failed")),
    "expired-principal": (None, ("Kerberos login as kerberos-conn-expired-principal@", "expired")),
}


@pytest.mark.usefixtures("reauth_job")
@pytest.mark.parametrize("case_id", list(KERBEROS_FAILURES))
def test_cli_names_kerberos_failure(secure_cluster, tmp_path, case_id):
    change, fragments = KERBEROS_FAILURES[case_id]
    name = f"kerberos-conn-{case_id}"
    config = secure_cluster.kerberos_principal(name, acls.grants("progress"), tmp_path,
                                               expires="2001-01-01" if change is None else None)
    if change is not None:
        change(secure_cluster, name)
    assert_progress_refused(secure_cluster, config, fragments)


def replica_records(cluster, progress_topic, topic):
    """{key: [record, ...]} of the replica records of `topic` in the progress topic, in batch order, a replayed batch's
    record superseding the earlier one (docs/records.md "When records are written")."""
    by_key = {}
    for key, value in read_raw(cluster.settings(), progress_topic):
        record = json.loads(value)
        if record["kind"] == "replica" and record["topic"] == topic:
            by_key.setdefault(key.decode(), {})[record["batch_id"]] = record
    return {key: [batches[b] for b in sorted(batches)] for key, batches in by_key.items()}


def completed(records):
    """`records` (replica_records) when every replica's last record is COMPLETED, else None."""
    return records if records and all(r[-1]["state"] == "COMPLETED" for r in records.values()) else None


def lost_records(records):
    """What the records of one replica's move lack: a batch between its first and last, a transition whose record
    does not say it, a COMPLETED that is not the last record or not the only one."""
    batches = [r["batch_id"] for r in records]
    lost = [f"batch {b}" for b in range(batches[0], batches[-1]) if b not in batches]
    lost += [f"{a['state']} -> {b['state']} unsaid ({b['message']!r})" for a, b in zip(records, records[1:])
             if a["state"] != b["state"] and b["message"] != f"{a['state']} -> {b['state']}"]
    states = [r["state"] for r in records]
    if states[-1] != "COMPLETED" or states.count("COMPLETED") != 1:
        lost.append(f"states {states}")
    return lost


def test_job_across_token_lifetimes(secure_cluster, reauth_job, topics, tmp_path):
    """Tokens that live 60 s and brokers that end every OAUTHBEARER session with its token unless it re-authenticates
    (`connections.max.reauth.ms` 60 s): the job (`reauth_job`: an OAUTHBEARER principal holding exactly `run`'s
    grants) runs five minutes, idle at first (no Spark batch while nothing moves, its driver looking every second),
    then with a throttled move of its own lasting to their end at least, that it drives to completion. It polls
    without one failed poll or failed call of its controller (its log), writes every transition of the move to its
    progress topic with COMPLETED once, and its janitor removes the move's throttles. The tokens it was issued and the
    brokers' re-authentications (their JMX counts) say the five minutes spanned that many sessions.

    The job is started by the suite's background warm-up as soon as the secured cluster is up (tests/reauth_job.py),
    so its five minutes and its Spark start pass while other tests run, and on the secured cluster only tests that
    start no move and set no throttle may run beside it: a job at `--throttle-cleanup owned`
    removes at completion what any `execute` recorded in its ownership topic set (docs/ownership.md "Policy") and
    adopts the throttles that appear with a move recorded anywhere else (docs/ownership.md "Adoption"), so beside a
    test that moves partitions it would take that test's throttles away, whichever ownership topic the test used; and
    while its own move runs, its rates are on the brokers that every throttle check reads. So the tests beside it
    declare it (conftest RUN_TOGETHER keeps every other test out of its lifetime), and its own move comes after them.
    Its ownership topic is its own: the refusal cases beside it delete and seed the default one."""
    cluster, run, job = secure_cluster, reauth_job, reauth_job.job
    topics.extend([job.progress_topic, REAUTH_OWN])
    for node in (1, 2, 3):  # the brokers end every OAUTHBEARER session when its token expires
        assert f"{REAUTH_KEY}={REAUTH_MS}\n" in (cluster.dir / f"node{node}" / "node.properties").read_text()
    execute = cluster.principal("oauth-reauth-operator", acls.grants("execute", ownership_topic=REAUTH_OWN), tmp_path,
                                OAUTHBEARER)
    try:
        job.wait_first_batch()
        # A move lasting about to the end of the job's REAUTH_RUN_S (at SLOW), so that Spark's batches poll it in
        # flight across the last token lifetimes.
        remaining_s = max(0.0, REAUTH_RUN_S - (time.monotonic() - run.started_s))
        topic = moving_topic(cluster, topics, megabytes=max(2, round(remaining_s * SLOW / MB)))
        plan = write_plan(tmp_path / "plan.json", [(topic, 0, [2])])
        before = throttles(cluster, [topic])
        code, out, err = run_cli(*command_args(cluster, "execute", execute, "--reassignment-json-file", plan,
                                               "--throttle", SLOW, "--ownership-topic", REAUTH_OWN))
        assert code == 0, err
        wait_done(cluster, [(topic, 0)], 3 * remaining_s + 120)
        expect_throttles(cluster, [topic], before, timeout_s=60)  # the job's janitor removed its own
        wait_for(lambda: job.metric(THROTTLE_ACTIONS.name, action="removed"), 30, message="removals counted")
        wait_for(lambda: time.monotonic() - run.started_s >= REAUTH_RUN_S, REAUTH_RUN_S, interval_s=1,
                 message=f"the job's {REAUTH_RUN_S} s")
        records = wait_for(lambda: completed(replica_records(cluster, job.progress_topic, topic)), 60,
                           message="the batch reporting the move COMPLETED")
        ran_s = time.monotonic() - run.started_s
        lived = job.process.poll() is None  # one run throughout, never restarted
        reauthenticated, failed_reauths = (now - then for now, then in zip(reauths(count_reauths(cluster)),
                                                                           reauths(run.reauths_then)))
        samples, metrics = job.samples(), _metrics_text(job)
    finally:
        job.stop()
    log = job.log()
    polls = sample_value(samples, BATCHES)
    # /metrics counts a request retried within a poll with the failed ones (once 1 in 25 batches at a load of 25,
    # the poll itself answered): a figure; a failed poll or controller call is in the log.
    failed_or_retried = sum(value for (name, _), value in samples.items() if name == POLL_ERRORS.name)
    tokens = cluster.issuer.issued_to(REAUTH_CLIENT)
    print(f"\nREAUTH FIGURES job run {ran_s:.0f} s under {TOKEN_LIFETIME_S} s tokens: {tokens} tokens issued to it, "
          f"{reauthenticated} re-authentications on the brokers ({failed_reauths} failed), {polls:.0f} Spark batches, "
          f"{failed_or_retried:.0f} requests failed or retried, {sum(map(len, records.values()))} replica records", flush=True)
    assert lived, log[-3000:]
    failed = [line for line in log.splitlines()
              if "poll failed" in line or (line.startswith(CONTROLLER_LOG_PREFIX) and " failed: " in line)]
    assert not failures_after(log, -1) and not failed, failed or log[-3000:]
    assert "not authorized" not in log.lower(), log[-3000:]
    assert not sample_value(samples, THROTTLE_ACTIONS.name, action="failed"), metrics
    assert tokens >= ran_s // TOKEN_LIFETIME_S  # a token for every lifetime the run spanned (the driver's alone)
    assert reauthenticated > 0 and failed_reauths == 0  # sessions kept by re-authentication, not reconnection
    assert records and all(not lost_records(r) for r in records.values()), \
        {key: lost_records(r) for key, r in records.items()}
    assert_job_leaks_nothing(cluster, job, run.directory / "checkpoint", REAUTH_OWN, metrics,
                             {"execute stdout": out, "execute stderr": err})


# -- after the long job: the tests that move partitions and set throttles --

# -- every command as a principal with exactly its grants --

@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_commands_under_exact_acls(secure_cluster, topics, tmp_path, mechanism):
    cluster = secure_cluster
    config = {c: cluster.principal(principal_name(mechanism, f"exact-{_name(c)}"), acls.grants(c), tmp_path, mechanism)
              for c in acls.OPERATOR_COMMANDS if c not in acls.PLAN_COMMANDS}
    topic = moving_topic(cluster, topics)
    plan = write_plan(tmp_path / "plan.json", [(topic, 0, [2])])
    outputs = {}

    def run(command, *rest):
        code, out, err = run_cli(*command_args(cluster, command, config[command], *rest))
        outputs[f"{command} stdout"], outputs[f"{command} stderr"] = out, err
        return code, out, err

    every_operator_command(run, cluster, topic, plan)
    assert_no_password(cluster, outputs)


@pytest.mark.parametrize("case_id", [case_id for case_id, case in DROPS.items() if case.moves])
def test_each_grant_is_needed_after_a_move(secure_cluster, topics, tmp_path, case_id):
    grant_is_needed(secure_cluster, topics, tmp_path, case_id)


@pytest.fixture(scope="module")
def standing_plans(secure_cluster, tmp_path_factory):
    """Plans the drop cases act on without changing them: `plan(state)` -> (topic, request id) of a plan of two
    tiny partitions, one in flight at most, started by the super user (partition 0 moved, 1 pending: no advancer
    runs here), left `running` or made `paused`. Made again when the ownership topic was deleted meanwhile."""
    made, created, directory = {}, [], tmp_path_factory.mktemp("standing-plans")

    def plan(state):
        from streaming.control.ownership.store import KafkaLedger, find_plan

        if state in made:
            admin = KafkaClusterAdmin(secure_cluster.bootstrap, str(secure_cluster.admin_config))
            try:
                names = secure_cluster.confluent_admin().list_topics(timeout=10).topics
                alive = PLAN_OWN in names and find_plan(KafkaLedger(admin, PLAN_OWN), made[state][1]) is not None
            finally:
                admin.close()
            if alive:
                return made[state]
        topic = secure_cluster.unique_topic(f"sec-{state}")
        created.append(topic)
        secure_cluster.create_topic(topic, {0: [1], 1: [1]}, megabytes=0.05)
        file = write_plan(directory / f"{topic}.json", [(topic, 0, [2]), (topic, 1, [2])])
        code, out, err = run_cli(*plan_argv(secure_cluster, PLAN, secure_cluster.admin_config, plan=file))
        assert code == 0, err
        request_id = next(line.split()[-1] for line in out.splitlines() if line.startswith("Request id: "))
        wait_done(secure_cluster, [(topic, 0)], 60)
        if state == "paused":
            code, _, err = run_cli(*plan_argv(secure_cluster, "pause", secure_cluster.admin_config, request_id))
            assert code == 0, err
        made[state] = (topic, request_id)
        return made[state]

    yield plan
    if not secure_cluster.started_here:  # else the session stopped it after its last test: nothing is left
        secure_cluster.delete_topics(created + [PLAN_OWN])


@pytest.mark.parametrize("case_id", [case_id for case_id, case in PLAN_DROPS.items() if case.command != PLAN])
def test_each_plan_grant_is_needed_on_a_standing_plan(secure_cluster, topics, standing_plans, tmp_path, case_id):
    plan_grant_is_needed(secure_cluster, topics, standing_plans, tmp_path, case_id)


def test_plan_commands_under_exact_acls(secure_cluster, topics, tmp_path):
    """Each plan command as a principal with exactly its grants: execute a plan of two partitions (one in flight),
    pause it, resume it (its second partition submitted), execute another and cancel it."""
    cluster = secure_cluster
    config = {c: cluster.principal(f"exact-{_name(c)}", acls.grants(c, ownership_topic=PLAN_OWN), tmp_path)
              for c in acls.PLAN_COMMANDS}
    topic = cluster.unique_topic("sec-plan-exact")
    topics.append(topic)
    cluster.create_topic(topic, {0: [1], 1: [1]}, megabytes=0.5)
    file = write_plan(tmp_path / "plan.json", [(topic, 0, [2]), (topic, 1, [2])])
    outputs = {}

    def run(command, request_id=None, plan=None):
        code, out, err = run_cli(*plan_argv(cluster, command, config[command], request_id, plan))
        outputs[f"{command} stdout"], outputs[f"{command} stderr"] = out, err
        assert code == 0, err
        return out

    out = run(PLAN, plan=file)
    request_id = next(line.split()[-1] for line in out.splitlines() if line.startswith("Request id: "))
    assert f"submitted {topic}-0" in out
    assert "paused" in run("pause", request_id)
    wait_done(cluster, [(topic, 0)], 60)
    assert f"submitted {topic}-1" in run(RESUME, request_id)
    wait_done(cluster, [(topic, 1)], 60)
    expect_throttles(cluster, [topic], {(topic, "leader"): frozenset({"1:1"}), (topic, "follower"): frozenset({"1:2"}),
                                        (1, "leader"): FAST, (1, "follower"): FAST, (2, "leader"): FAST,
                                        (2, "follower"): FAST})  # no advancer stepped since: the last wave's stay
    assert f"Plan {request_id} cancelled" in run(CANCEL_PLAN, request_id)
    expect_throttles(cluster, [topic], {})  # the cancel's step swept them
    assert [replicas(cluster, topic, p) for p in (0, 1)] == [[2], [2]]
    assert_no_password(cluster, outputs)


# -- the streaming job, janitor included, with exactly the grants of `run`, from a Java-form client file (OAUTHBEARER:
# test_job_across_token_lifetimes) --

@pytest.mark.parametrize("mechanism", (SCRAM, GSSAPI))
def test_job_under_exact_acls_removes_throttles_and_leaks_no_password(secure_cluster, topics, tmp_path, mechanism):
    cluster = secure_cluster
    topic = moving_topic(cluster, topics)
    execute = cluster.principal(principal_name(mechanism, "job-operator"), acls.grants("execute"), tmp_path, mechanism)
    job = JobProcess(cluster.bootstrap, tmp_path / "checkpoint", tmp_path / "job.log", "--trigger-interval", "2s",
                     "--debug")
    # The job takes the operator's Java-form file: SCRAM in sasl.jaas.config with a JKS trust store, read (through
    # keytool) by the driver and by each executor's poll; or GSSAPI, each process logging in from the keytab
    # (kafka-python's producer in place of librdkafka's).
    monitor = cluster.principal(principal_name(mechanism, "job-monitor"),
                                acls.grants("run", progress_topic=job.progress_topic), tmp_path, mechanism)
    job_config = scram_java_form(cluster, monitor, "JKS", tmp_path) if mechanism == SCRAM else monitor
    job.args += ["--command-config", str(job_config)]
    topics.append(job.progress_topic)
    job.start()
    try:
        job.wait_first_batch()  # FIRST_POLL_S: TEST_FIRST_POLL_S raises it on a loaded machine
        plan = write_plan(tmp_path / "plan.json", [(topic, 0, [2])])
        # Broker rates set before (the standing plans' waves: no advancer runs them here) are restored, not deleted.
        before = throttles(cluster, [topic])
        code, out, err = run_cli(*command_args(cluster, "execute", execute, "--reassignment-json-file", plan,
                                               "--throttle", 2 * MB))
        assert code == 0, err
        wait_done(cluster, [(topic, 0)], 60)
        expect_throttles(cluster, [topic], before, timeout_s=60)  # the job's janitor removed its own
        wait_for(lambda: job.metric("kafka_reassignment_throttle_actions_total", action="removed"), 30,
                 message="removals counted")
        metrics = _metrics_text(job)
        log = job.log()
        if mechanism == SCRAM:  # what a job without Alter does with a plan is the same for every mechanism
            _plan_not_advanced_by_a_job_without_alter(cluster, topics, execute, job, tmp_path)
    finally:
        job.stop()
    assert "not authorized" not in log.lower(), log[-3000:]  # before the plan: nothing refused
    assert_job_leaks_nothing(cluster, job, tmp_path / "checkpoint", acls.OWNERSHIP_TOPIC, metrics,
                             {"execute stdout": out, "execute stderr": err})


def assert_job_leaks_nothing(cluster, job, checkpoint_dir, ownership_topic, metrics, outputs):
    """No secret of this session in the stopped job's log, its progress topic (which holds its throttle records), the
    ownership topic, its /metrics text, its checkpoint or `outputs` ({name: text}); none of them empty but stderr."""
    progress = topic_bytes(cluster, job.progress_topic)
    assert b'"kind":"throttle"' in progress.replace(b" ", b"")
    checkpoint = b"".join(p.read_bytes() for p in checkpoint_dir.rglob("*") if p.is_file())
    channels = {**outputs, "job log (stdout and stderr, --debug)": job.log(), "progress topic": progress,
                "ownership topic": topic_bytes(cluster, ownership_topic), "/metrics": metrics, "checkpoint": checkpoint}
    empty = [k for k, v in channels.items() if not v and "stderr" not in k]  # a grep of nothing proves nothing
    assert not empty, empty
    assert_no_password(cluster, channels)


def _plan_not_advanced_by_a_job_without_alter(cluster, topics, execute, job, tmp_path):
    """A plan of two partitions, one in flight at most, started by the operator: the job (`run`'s grants, no
    Alter on the Cluster) cannot submit the second; it reports the plan as not advanced and goes on, and the
    operator's cancel ends the plan."""
    topic = cluster.unique_topic("sec-plan")
    topics.append(topic)
    cluster.create_topic(topic, {0: [1], 1: [1]}, megabytes=0.5)
    before, rates_before = len(job.log()), throttles(cluster, [topic])  # the standing plans' rates stay
    plan = write_plan(tmp_path / "plan2.json", [(topic, 0, [2]), (topic, 1, [2])])
    code, out, err = run_cli(*command_args(cluster, "execute", execute, "--reassignment-json-file", plan,
                                           "--throttle", FAST, "--max-partitions-in-flight", 1))
    assert code == 0, err
    request_id = next(line.split()[-1] for line in out.splitlines() if line.startswith("Request id: "))

    def refused():
        lines = [line for line in job.log()[before:].splitlines() if f"plan {request_id}" in line and "not advanced" in line]
        return lines and lines[0]

    line = wait_for(refused, 60, message="the job reporting the plan not advanced")
    assert "not authorized" in line.lower() or "authorization" in line.lower(), line
    assert job.process.poll() is None  # the job goes on
    assert replicas(cluster, topic, 1) == [1]  # the second partition was never submitted
    code, out, err = run_cli(*command_args(cluster, "cancel", execute, "--request-id", request_id))
    assert code == 0 and f"Plan {request_id} cancelled" in out, err
    expect_throttles(cluster, [topic], rates_before, timeout_s=60)


def _metrics_text(job):
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics", timeout=5) as response:
        return response.read().decode()
