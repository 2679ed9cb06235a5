"""`--clusters FILE --cluster NAME` against the real clusters: a move executed, reported, verified and cancelled
through a fleet file on the shared cluster, each answer the one `--bootstrap-server` gives; `run`'s checks before
Spark pass for a cluster of the file; on the secured cluster, a client profile's file is what logs in (the same
report as `--command-config`; a wrong password in it refused). No job is started: the job's configuration
from a fleet file is tests/test_cli_clusters.py's."""

import json
import socket

import pytest

from streaming import cli as cli_module
from streaming.commands import fleet
from streaming.commands import run as run_command
from streaming.vocabulary.errors import EXIT_CLUSTER, EXIT_IN_PROGRESS, EXIT_OK
from tests.cluster_cli import cli, expect_throttles, ownership_topic, reassigning, replicas, wait_done, write_plan
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

L, F = "leader", "follower"
# bytes/s: slow enough that the move (MEGABYTES) is still copying when it is cancelled, seconds later (Kafka lets
# about 1 MB per quota window through however low the throttle: some 40 s for 4 MB).
RATE = 100_000
MEGABYTES = 4
UNREACHABLE = "127.0.0.1:1"


def fleet_file(tmp_path, clusters, profiles=""):
    path = tmp_path / "fleet.toml"
    path.write_text(profiles + "".join(f'[clusters.{name}]\nbootstrap-servers = "{servers}"\n{extra}\n'
                                       for name, servers, extra in clusters))
    return str(path)


def mine(document, topic):
    return sorted((r["topic"], r["partition"], r["broker"]) for r in document["replicas"] if r["topic"] == topic)


def test_a_move_through_a_fleet_file_is_the_move_through_flags(cluster, clean, tmp_path):
    topic = cluster.create_topic(cluster.unique_topic("fleet"), {0: [1]}, megabytes=MEGABYTES)
    own = ownership_topic()
    clean += [topic, own]
    path = fleet_file(tmp_path, [("elsewhere", UNREACHABLE, ""), ("shared", cluster.bootstrap, "")])
    by_file = ["--clusters", path, "--cluster", "shared", "--ownership-topic", own]
    by_flags = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    plan = write_plan(tmp_path / "move.json", [(topic, 0, [2])])

    code, out, err = cli("execute", *by_file, "--reassignment-json-file", plan, "--throttle", RATE, "--output", "json")
    assert code == EXIT_OK, err
    assert json.loads(out)["started"] == [f"{topic}-0"]
    expect_throttles(cluster, [topic], {(topic, L): frozenset({"0:1"}), (topic, F): frozenset({"0:2"}),
                                        (1, L): RATE, (1, F): RATE, (2, L): RATE, (2, F): RATE})

    reports = {form: cli("progress", *words, "--output", "json") for form, words in (("file", by_file), ("flags", by_flags))}
    verifies = {form: cli("verify", *words, "--reassignment-json-file", plan, "--output", "json")
                for form, words in (("file", by_file), ("flags", by_flags))}
    assert (topic, 0) in reassigning(cluster), "the move ended before it was reported: the checks below prove nothing"
    assert {form: code for form, (code, _, _) in reports.items()} == {"file": EXIT_IN_PROGRESS, "flags": EXIT_IN_PROGRESS}
    assert mine(json.loads(reports["file"][1]), topic) == mine(json.loads(reports["flags"][1]), topic) == [(topic, 0, 2)]
    assert verifies["file"] == verifies["flags"]
    assert verifies["file"][0] == EXIT_IN_PROGRESS and json.loads(verifies["file"][1])["partitions"][0]["status"] == "in progress"

    code, out, err = cli("cancel", *by_file, "--reassignment-json-file", plan, "--output", "json")
    assert code == EXIT_OK, err
    assert [(p["status"], p["original_replicas"]) for p in json.loads(out)["partitions"]] == [("cancelled", [1])]
    wait_done(cluster, [(topic, 0)])
    wait_for(lambda: replicas(cluster, topic, 0) == [1], 15, message="the partition back on broker 1")
    expect_throttles(cluster, [topic], {})


def free_port():
    with socket.socket() as probe:
        probe.bind(("0.0.0.0", 0))
        return probe.getsockname()[1]


def test_runs_checks_before_spark_pass_for_a_cluster_of_the_file(cluster, tmp_path):
    path = fleet_file(tmp_path, [("shared", cluster.bootstrap, '[clusters.shared.run]\ntrigger-interval = "3s"')])
    argv = ["run", "--clusters", path, "--cluster", "shared", "--checkpoint-location", str(tmp_path / "cp"),
            "--metrics-port", str(free_port())]
    parser = cli_module.build_parser()
    config = run_command.config_from(fleet.chosen(parser.parse_args(argv), argv, parser))
    assert (config.bootstrap, config.cluster_name, config.trigger_interval_s) == (cluster.bootstrap, "shared", 3.0)
    run_command.preflight(config)  # the checkpoint, the port, Java, and one DescribeCluster of the named cluster


def test_a_client_profile_is_what_logs_in_to_the_secured_cluster(secure_cluster, tmp_path):
    wrong = tmp_path / "wrong.properties"
    admin_text = secure_cluster.admin_config.read_text()
    password = secure_cluster.password(secure_cluster.admin_config)
    wrong.write_text(admin_text.replace(password, "not-the-password"))
    profiles = (f'[client-profiles.admin]\ncommand-config = "{secure_cluster.admin_config}"\n'
                f'[client-profiles.wrong]\ncommand-config = "{wrong}"\n')
    path = fleet_file(tmp_path, [("secured", secure_cluster.bootstrap, 'client-profile = "admin"'),
                                 ("refused", secure_cluster.bootstrap, 'client-profile = "wrong"')], profiles)

    by_file = cli("progress", "--clusters", path, "--cluster", "secured", "--output", "json")
    by_flags = cli("progress", "--bootstrap-server", secure_cluster.bootstrap, "--command-config",
                   secure_cluster.admin_config, "--output", "json")
    assert by_file[0] == by_flags[0] in (EXIT_OK, EXIT_IN_PROGRESS), (by_file[2], by_flags[2])
    assert json.loads(by_file[1])["cluster_id"] == json.loads(by_flags[1])["cluster_id"] != ""

    # The wrong profile's password is what the cluster refuses, as it refuses it given with --command-config
    # (tests/test_secured_cluster.py); its tail names the broker that answered and how long it took: not compared.
    # The refusal is said once the connection's diagnosis has its answer, near the timeout: 10 s, not the 4 s there, as
    # this test is the first of its part, beside every part's start (at a load of 25, 4 s left the diagnosis no
    # verdict on the authentication).
    refused = cli("progress", "--clusters", path, "--cluster", "refused", "--timeout", "10")
    refusal = (f"reassign-monitor progress: error: authentication as user admin with SCRAM-SHA-512 refused by "
               f"{secure_cluster.bootstrap}: ")
    code, out, err = refused
    assert (code, out, err[:len(refusal)], err.count("\n")) == (EXIT_CLUSTER, "", refusal, 1), err
    for _, shown_out, shown_err in (by_file, by_flags, refused):
        assert not [p for p in secure_cluster.passwords if p in shown_out + shown_err]
