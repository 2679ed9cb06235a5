"""On the secured cluster: the operator's own Java client properties file, exactly as Kafka's tools
take it, works with every command of ours. Each case writes the Java-form file (sasl.jaas.config or a key
store, a JKS or PKCS12 trust store made by the JDK's keytool, Java-only tuning keys), proves it with Kafka's
own AclCommand first, then runs progress, execute, cancel, execute and verify with it. `run` is proven with
a Java-form file by test_secured_cluster.py's job test (no Spark start of its own here)."""

import subprocess
from pathlib import Path

import pytest

from streaming.cluster import acls
from tests.cluster_cli import write_plan
from tests.java_client_files import KEY_PASSWORD, STORE_PASSWORD, mtls_java_form, scram_java_form
from tests.kafka_fixtures import ROOT
from tests.test_secured_cluster import assert_no_password, every_operator_command, moving_topic, run_cli

def operator_grants():
    """What the four operator commands need together (DescribeAcls, for Kafka's AclCommand, needs Describe
    on the Cluster: progress's grant)."""
    return tuple(dict.fromkeys(g for command in acls.OPERATOR_COMMANDS for g in acls.grants(command)))


# id: (authentication, key store type, trust store type, ssl.endpoint.identification.algorithm line)
CASES = {
    "scram-jks-truststore": ("scram", None, "JKS", ""),
    # Java's empty value: hostname verification off, the same in every command and both client libraries
    "scram-pkcs12-truststore-hostname-check-off": ("scram", None, "PKCS12", "ssl.endpoint.identification.algorithm=\n"),
    "mtls-jks-keystore-pkcs12-truststore": ("mtls", "JKS", "PKCS12", "ssl.endpoint.identification.algorithm=https\n"),
}


@pytest.mark.parametrize("case_id", list(CASES))
def test_kafka_tools_file_works_with_every_command(secure_cluster, tmp_path, case_id):
    cluster = secure_cluster
    authentication, key_kind, trust_kind, hostname_line = CASES[case_id]
    name = f"java-{case_id}"
    if authentication == "scram":
        config = scram_java_form(cluster, cluster.principal(name, operator_grants(), tmp_path), trust_kind, tmp_path,
                                 hostname_line)
        bootstrap = cluster.bootstrap
    else:
        config = mtls_java_form(cluster, name, operator_grants(), key_kind, trust_kind, tmp_path, hostname_line)
        bootstrap = cluster.mtls_bootstrap

    # Kafka's own tool takes the file first: it is the operators' file, not one written for us.
    listed = subprocess.run(["java", "-cp", f"{ROOT / 'deploy' / 'kafka' / 'lib'}/*",
                             f"-Dlog4j2.configurationFile={ROOT / 'deploy' / 'kafka' / 'log4j2.properties'}",
                             f"-Dkafka.logs.dir={tmp_path}",
                             "org.apache.kafka.tools.AclCommand", "--bootstrap-server", bootstrap, "--command-config",
                             str(config), "--list"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert f"User:{name}" in listed.stdout

    created = []  # deleted here, not by a fixture: the cluster stops right after the last test using it
    topic = moving_topic(cluster, created)
    try:
        _every_command(cluster, bootstrap, config, topic, tmp_path, listed)
    finally:
        cluster.delete_topics(created)


def _every_command(cluster, bootstrap, config, topic, tmp_path, listed):
    plan = write_plan(tmp_path / "plan.json", [(topic, 0, [2])])
    outputs = {}

    def run(command, *rest):
        code, out, err = run_cli(command, "--bootstrap-server", bootstrap, "--command-config", config, *rest)
        outputs[f"{command} stdout"], outputs[f"{command} stderr"] = out, err
        notes = [line for line in err.splitlines() if ": note: " in line]
        assert len(notes) == 1 and "request.timeout.ms" in notes[0] and "client.id" in notes[0], err
        return code, out, err

    every_operator_command(run, cluster, topic, plan)
    assert_no_password(cluster, {**outputs, "AclCommand stdout": listed.stdout, "AclCommand stderr": listed.stderr})
    assert STORE_PASSWORD not in "".join(outputs.values()) and KEY_PASSWORD not in "".join(outputs.values())
