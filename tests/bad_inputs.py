"""The bad-input corpus as data: every case is an argv, the files it names, and the exit code the CLI owes.

Tokens in argv (and in file texts) are filled in by tests/test_bad_input.py:
    @FILE     the case's reassignment file (or fleet file)     @CONFIG  the case's --command-config file
    @TMP      a fresh directory                @BUSY    a port some other socket listens on
    @FREE     a port nothing listens on (so only the flag under test can fail a `run` case)
    @BOOT     where the case connects: UNREACHABLE unless the case needs the cluster (then the test cluster)
    @TOPIC    a real 2-partition topic on brokers 1, 2   @MOVING  a real topic whose partition 0 is reassigning
The AWS environment is the test's own (tests/aws_environment.py): no credentials but those of its one profile.
Local input problems are exit 2 and must fail before any request: their cases connect to UNREACHABLE,
so a check that is missing shows up as exit 3, not as a pass. Cluster cases run against the real
cluster, which must look the same before and after (reassignments, throttle configs, topics).
"""

import json
from dataclasses import dataclass

from streaming.vocabulary.client_config import MAX_FILE_BYTES as MAX_CONFIG_BYTES
from streaming.vocabulary.errors import EXIT_BAD_INPUT, EXIT_CLUSTER
from streaming.vocabulary.kafka_limits import INT32_MAX, LONG_MAX, TOPIC_NAME_MAX_LENGTH
from streaming.vocabulary.reassignment_file import MAX_FILE_BYTES
from tests.aws_environment import PROFILE as AWS_PROFILE

UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1: a connection attempt fails at once
SECRET = "hunter2-never-echo-me"  # a password that must never appear in any output
NEVER_CREATED = "badinput-never-created"  # the progress topic of `run` cases that must fail before creating it


# Files that are not plain text contents.
@dataclass(frozen=True)
class Special:
    kind: str  # missing, directory, sparse (a hole of `size` bytes), link-loop, dangling-link, path
    size: int = 0
    path: str = ""  # kind "path": an existing path of this machine


MISSING, DIRECTORY = Special("missing"), Special("directory")
LINK_LOOP, DANGLING = Special("link-loop"), Special("dangling-link")
DEV_ZERO, PROC_MEM = Special("path", path="/dev/zero"), Special("path", path="/proc/self/mem")  # endless; EIO


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    argv: tuple
    code: int = EXIT_BAD_INPUT
    file: object = None  # str | bytes | Special: materialized as @FILE
    config: object = None  # str | bytes | Special: materialized as @CONFIG
    cluster: bool = False  # run against the real cluster and compare it before and after
    file_name: str = "move.json"  # the file's name (names with control characters test the escaping)


def doc(*entries, version=1, **extra):
    return json.dumps({"version": version, "partitions": list(entries), **extra})


def entry(topic="t", partition=0, replicas=(1, 2), **fields):
    return {"topic": topic, "partition": partition, "replicas": list(replicas), **fields}


GOOD = doc(entry())
FILE_COMMANDS = ("progress", "execute", "verify", "cancel")  # every command that reads a reassignment file


def file_cmd(command, boot="@BOOT"):
    return (command, "--bootstrap-server", boot, "--timeout", "1", "--reassignment-json-file", "@FILE")


# --- reassignment files: one row each, run through every command that reads a file -------------------------
BAD_FILES = [
    # id, category, file
    ("empty-text", "json-syntax", ""),
    ("whitespace", "json-syntax", "  \n\t "),
    ("not-json", "json-syntax", "{version: 1}"),
    ("truncated", "json-syntax", '{"version": 1, "partitions": ['),
    ("trailing-garbage", "json-syntax", GOOD + " x"),
    ("single-quotes", "json-syntax", "{'version': 1, 'partitions': []}"),
    ("trailing-comma", "json-syntax", '{"version": 1, "partitions": [],}'),
    ("comment", "json-syntax", '// move\n' + GOOD),
    ("utf8-bom", "json-syntax", "\ufeff" + GOOD),
    ("nul-byte", "json-syntax", GOOD[:10] + "\x00" + GOOD[10:]),
    ("deep-lists", "json-syntax", "[" * 100_000 + "]" * 100_000),
    ("deep-objects", "json-syntax", '{"a":' * 50_000 + "1" + "}" * 50_000),
    ("deep-inside-entry", "json-syntax", doc(entry(extra=None)).replace("null", "[" * 100_000 + "]" * 100_000)),
    ("top-level-list", "json-shape", "[]"),
    ("top-level-string", "json-shape", '"x"'),
    ("top-level-null", "json-shape", "null"),
    ("top-level-number", "json-shape", "1"),
    ("no-version", "json-shape", json.dumps({"partitions": [entry()]})),
    ("version-2", "json-shape", doc(entry(), version=2)),
    ("version-string", "json-shape", doc(entry(), version="1")),
    ("version-float", "json-shape", doc(entry(), version=1.0)),
    ("version-true", "json-shape", doc(entry(), version=True)),
    ("no-partitions", "json-shape", json.dumps({"version": 1})),
    ("partitions-object", "json-shape", json.dumps({"version": 1, "partitions": {}})),
    ("partitions-null", "json-shape", json.dumps({"version": 1, "partitions": None})),
    ("partitions-string", "json-shape", json.dumps({"version": 1, "partitions": "t-0"})),
    ("entry-string", "json-shape", doc("t-0")),
    ("entry-list", "json-shape", doc(["t", 0, [1]])),
    ("entry-null", "json-shape", doc(None)),
    ("no-topic", "json-shape", doc({"partition": 0, "replicas": [1]})),
    ("topic-number", "json-shape", doc(entry(topic=5))),
    ("topic-list", "json-shape", doc(entry(topic=["t"]))),
    ("topic-null", "json-shape", doc(entry(topic=None))),
    ("no-partition", "json-shape", doc({"topic": "t", "replicas": [1]})),
    ("partition-string", "json-shape", doc(entry(partition="0"))),
    ("partition-float", "json-shape", doc(entry(partition=1.5))),
    ("partition-float-integral", "json-shape", doc(entry(partition=1.0))),
    ("partition-bool", "json-shape", doc(entry(partition=True))),
    ("partition-null", "json-shape", doc(entry(partition=None))),
    ("partition-list", "json-shape", doc(entry(partition=[0]))),
    ("replicas-int", "json-shape", doc({"topic": "t", "partition": 0, "replicas": 1})),
    ("replicas-string", "json-shape", doc({"topic": "t", "partition": 0, "replicas": "1,2"})),
    ("replicas-object", "json-shape", doc({"topic": "t", "partition": 0, "replicas": {"1": 1}})),
    ("broker-string", "json-shape", doc(entry(replicas=["1"]))),
    ("broker-bool", "json-shape", doc(entry(replicas=[True]))),
    ("broker-float", "json-shape", doc(entry(replicas=[1.5]))),
    ("broker-null", "json-shape", doc(entry(replicas=[1, None]))),
    ("log-dirs-string", "json-shape", doc(entry(log_dirs="any"))),
    ("log-dirs-short", "json-shape", doc(entry(log_dirs=["any"]))),
    ("log-dirs-long", "json-shape", doc(entry(log_dirs=["any", "any", "any"]))),
    ("log-dirs-empty-string", "json-shape", doc(entry(log_dirs=["any", ""]))),
    ("log-dirs-number", "json-shape", doc(entry(log_dirs=["any", 5]))),
    ("log-dirs-relative", "json-shape", doc(entry(log_dirs=["any", "data"]))),
    ("log-dirs-empty-list", "json-shape", doc(entry(log_dirs=[]))),
    ("partition-negative", "numbers", doc(entry(partition=-1))),
    ("partition-int32-overflow", "numbers", doc(entry(partition=INT32_MAX + 1))),
    ("partition-10e30", "numbers", doc(entry(partition=10**30))),
    ("partition-5000-digits", "numbers", doc(entry(partition=0)).replace('"partition": 0', '"partition": ' + "9" * 5000)),
    ("partition-nan", "numbers", doc(entry(partition=0)).replace('"partition": 0', '"partition": NaN')),
    ("partition-infinity", "numbers", doc(entry(partition=0)).replace('"partition": 0', '"partition": Infinity')),
    ("partition-minus-infinity", "numbers", doc(entry(partition=0)).replace('"partition": 0', '"partition": -Infinity')),
    ("partition-1e400", "numbers", doc(entry(partition=0)).replace('"partition": 0', '"partition": 1e400')),
    ("partition-exponent", "numbers", doc(entry(partition=0)).replace('"partition": 0', '"partition": 1e2')),
    ("broker-negative", "numbers", doc(entry(replicas=[1, -1]))),
    ("broker-int32-overflow", "numbers", doc(entry(replicas=[1, INT32_MAX + 1]))),
    ("broker-10e30", "numbers", doc(entry(replicas=[10**30]))),
    ("broker-5000-digits", "numbers", doc(entry(replicas=[1])).replace("[1]", "[" + "1" * 5000 + "]")),
    ("broker-nan", "numbers", doc(entry(replicas=[1])).replace("[1]", "[NaN]")),
    ("version-5000-digits", "numbers", doc(entry()).replace('"version": 1', '"version": ' + "1" * 5000)),
    ("topic-100k-chars", "names", doc(entry(topic="t" * 100_000))),
    ("topic-250-chars", "names", doc(entry(topic="t" * (TOPIC_NAME_MAX_LENGTH + 1)))),
    ("topic-empty", "names", doc(entry(topic=""))),
    ("topic-dot", "names", doc(entry(topic="."))),
    ("topic-dot-dot", "names", doc(entry(topic=".."))),
    ("topic-slash", "names", doc(entry(topic="a/b"))),
    ("topic-space", "names", doc(entry(topic="a b"))),
    ("topic-colon", "names", doc(entry(topic="a:b"))),
    ("topic-unicode", "names", doc(entry(topic="tópico"))),
    ("topic-emoji", "names", doc(entry(topic="t\U0001f525"))),
    ("topic-newline-forges-a-line", "escaping", doc(entry(topic="t\nreassign-monitor execute: error: forged"))),
    ("topic-carriage-return", "escaping", doc(entry(topic="t\rforged"))),
    ("topic-ansi-escape", "escaping", doc(entry(topic="t\x1b[2Jcleared"))),
    ("topic-nul", "escaping", doc(entry(topic="t\x00u"))),
    ("topic-line-separator", "escaping", doc(entry(topic="t\u2028forged"))),
    ("topic-bidi-override", "escaping", doc(entry(topic="t\u202egnp.exe"))),
    ("duplicate-partition", "duplicates", doc(entry(), entry(replicas=(3,)))),
    ("duplicate-partition-far-apart", "duplicates", doc(entry(), *[entry(partition=p) for p in range(1, 50)], entry())),
    ("duplicate-broker", "duplicates", doc(entry(replicas=(1, 1)))),
    ("duplicate-key-version", "duplicates", '{"version": 1, "version": 2, "partitions": []}'),
    ("duplicate-key-partitions", "duplicates", '{"version": 1, "partitions": [], "partitions": ' + json.dumps([entry()]) + "}"),
    ("duplicate-key-in-entry", "duplicates", doc(entry()).replace('"partition": 0', '"partition": 0, "partition": 1')),
    ("empty-partitions", "empty", doc()),
    ("empty-replicas", "empty", doc(entry(replicas=()))),
    ("empty-object", "empty", "{}"),
    ("second-entry-bad", "json-shape", doc(entry(), entry(partition=1, replicas=[-1]))),
    ("last-of-many-bad", "json-shape", doc(*[entry(partition=p) for p in range(1000)], entry(partition=-5))),
    ("not-utf8-latin1", "files", doc(entry(topic="tópico")).encode("latin-1")),
    ("not-utf8-random", "files", b'{"version": 1, "partitions": [\xff\xfe\x80]}'),
    ("utf16", "files", GOOD.encode("utf-16")),
    ("binary", "files", bytes(range(256)) * 4),
    ("missing", "files", MISSING),
    ("directory", "files", DIRECTORY),
    ("dev-zero", "files", DEV_ZERO),
    ("unreadable-proc-mem", "files", PROC_MEM),
    ("symlink-loop", "files", LINK_LOOP),
    ("dangling-symlink", "files", DANGLING),
    ("oversized-sparse", "files", Special("sparse", size=MAX_FILE_BYTES + 1)),
    ("oversized-huge-sparse", "files", Special("sparse", size=50 * 2**30)),
]
# Rows of BAD_FILES that `cancel` accepts: it reads entries without replicas (only topic and partition matter).
CANCEL_ACCEPTS = {"broker-string", "broker-bool", "broker-float", "broker-null", "replicas-string", "replicas-object",
                  "replicas-int", "empty-replicas", "duplicate-broker", "broker-negative", "broker-int32-overflow",
                  "broker-10e30", "broker-nan", "log-dirs-string", "log-dirs-short", "log-dirs-long",
                  "log-dirs-empty-string", "log-dirs-number", "log-dirs-relative", "log-dirs-empty-list"}
# `progress` reports a file listing nothing as nothing (exit 0, documented); every other command needs a partition.
PROGRESS_ACCEPTS = {"empty-partitions"}

CASES = []
for name, category, text in BAD_FILES:
    for command in FILE_COMMANDS:
        if (command == "cancel" and name in CANCEL_ACCEPTS) or (command == "progress" and name in PROGRESS_ACCEPTS):
            continue
        CASES.append(Case(f"{command}-{name}", category, file_cmd(command), file=text))

# Paths that are themselves the problem (their names are echoed: escaping and bounding).
for name, file_name in [("path-newline", "a\nreassign-monitor progress: error: forged.json"),
                        ("path-escape-sequence", "a\x1b[31mred.json"), ("path-tab", "a\tb.json"),
                        ("path-line-separator", "a\u2028b.json")]:
    CASES.append(Case(f"progress-{name}", "escaping", file_cmd("progress"), file=MISSING, file_name=file_name))
CASES += [
    Case("progress-path-too-long", "files", ("progress", "--bootstrap-server", UNREACHABLE, "--reassignment-json-file",
                                             "/tmp/" + "x" * 5000)),
    Case("progress-path-component-too-long", "files", ("progress", "--bootstrap-server", UNREACHABLE,
                                                       "--reassignment-json-file", "/tmp/" + "x/" * 3000 + "f")),
    Case("progress-path-through-a-file", "files", ("progress", "--bootstrap-server", UNREACHABLE,
                                                   "--reassignment-json-file", "/etc/hostname/move.json")),
    Case("progress-path-empty", "files", ("progress", "--bootstrap-server", UNREACHABLE, "--reassignment-json-file", "")),
]

# --- --command-config ------------------------------------------------------------------------------------
OAUTH_HANDLER_LINE = "sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n"
OAUTH_ENDPOINT_LINE = "sasl.oauthbearer.token.endpoint.url=https://127.0.0.1:1/token\n"
# A good OAUTHBEARER file whose token endpoint nothing serves (port 1): exit 3 once everything else is checked.
OAUTH_LINES = ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n" + OAUTH_HANDLER_LINE + OAUTH_ENDPOINT_LINE
               + "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
               f'clientId="c" clientSecret="{SECRET}" scope="kafka";\n')
MSK_IAM_LINES = ("security.protocol=SASL_SSL\nsasl.mechanism=AWS_MSK_IAM\nsasl.jaas.config=software.amazon.msk.auth.iam."
                 "IAMLoginModule required;\nsasl.client.callback.handler.class=software.amazon.msk.auth.iam."
                 "IAMClientCallbackHandler\n")
MSK_OAUTH_LINES = ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config=org.apache.kafka.common."
                   "security.oauthbearer.OAuthBearerLoginModule required;\nsasl.login.callback.handler.class="
                   "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n")
GSSAPI_LINES = ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.kerberos.service.name=kafka\nsasl.jaas.config="
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab=\"/etc/k.keytab\" "
                f"principal=\"{SECRET}@EXAMPLE.COM\";\n")
BAD_CONFIGS = [
    # id, file (each must be refused without echoing SECRET)
    ("missing", MISSING),
    ("directory", DIRECTORY),
    ("dev-zero", DEV_ZERO),
    ("oversized", Special("sparse", size=MAX_CONFIG_BYTES + 1)),
    ("not-utf8", b"sasl.password=" + SECRET.encode() + b"\xff\xfe\n"),
    ("not-utf8-latin1-password", f"sasl.mechanism=PLAIN\nsasl.username=u\nsasl.password={SECRET}é\n".encode("latin-1")),
    ("no-equals", f"sasl.password {SECRET}\n"),
    ("colon-separator", f"sasl.password: {SECRET}\n"),
    ("empty-key", f"={SECRET}\n"),
    ("unknown-key", f"sasl.oauthbearer.jwt.retriever.class={SECRET}\n"),
    ("jaas-without-username", f"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password=\"{SECRET}\";\n"),
    ("jaas-unquoted-number", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                             "org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=1234;\n"),
    ("jaas-kerberos", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                      f"com.sun.security.auth.module.Krb5LoginModule required keyTab=\"/k\" principal=\"{SECRET}\";\n"),
    # GSSAPI (docs/security.md "GSSAPI (Kerberos)"): every problem of the file said before any ticket is asked for
    ("gssapi-keytab-not-a-keytab", GSSAPI_LINES.replace("/etc/k.keytab", "/etc/passwd")),
    ("gssapi-keytab-is-a-directory", GSSAPI_LINES.replace("/etc/k.keytab", "/etc")),
    ("gssapi-without-service-name", GSSAPI_LINES.replace("sasl.kerberos.service.name=kafka\n", "")),
    ("gssapi-service-names-differ", GSSAPI_LINES.replace("useKeyTab=true", "serviceName=\"other\" useKeyTab=true")),
    ("gssapi-would-prompt", GSSAPI_LINES.replace("useKeyTab=true keyTab=\"/etc/k.keytab\" ", "")),
    ("gssapi-with-password", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.kerberos.service.name=kafka\n"
                             f"sasl.username=u\nsasl.password={SECRET}\n"),
    ("jaas-and-password", f"sasl.mechanism=PLAIN\nsasl.password={SECRET}\nsasl.jaas.config="
                          f"org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"{SECRET}\";\n"),
    ("unknown-key-typo", f"sasl.pasword={SECRET}\n"),
    ("truststore-missing", "ssl.truststore.location=/etc/kafka/truststore.jks\n"),
    ("truststore-not-a-store", "ssl.truststore.location=/etc/passwd\nssl.truststore.password=" + SECRET + "\n"),
    ("truststore-bad-type", "ssl.truststore.location=/etc/passwd\nssl.truststore.type=BKS\n"),
    ("hostname-verification-unknown", "security.protocol=SSL\nssl.endpoint.identification.algorithm=ldap\n"),
    ("key-with-newline-escape", "security.protocol=PLAINTEXT\nbad\x1bkey=1\n"),
    ("duplicate-key", f"sasl.password={SECRET}\nsasl.password={SECRET}2\n"),
    ("bad-protocol", "security.protocol=PLAINTEXTT\n"),
    ("bad-protocol-lowercase", "security.protocol=sasl_ssl\n"),
    ("bad-mechanism", f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM\nsasl.username=u\nsasl.password={SECRET}\n"),
    ("mechanism-without-password", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\n"),
    ("sasl-without-mechanism", f"security.protocol=SASL_SSL\nsasl.username=u\nsasl.password={SECRET}\n"),
    ("ca-file-missing", "security.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem\n"),
    ("ca-file-is-directory", "security.protocol=SSL\nssl.ca.location=/etc\n"),
    # A CA file that is not PEM is a local problem (exit 2 before any request), not "TLS settings unusable".
    ("ca-file-not-pem", "security.protocol=SSL\nssl.ca.location=/etc/passwd\n"),
    ("certificate-not-pem", "security.protocol=SSL\nssl.certificate.location=/etc/passwd\nssl.key.location=/etc/passwd\n"),
    ("binary", bytes(range(256))),
    # OAUTHBEARER (docs/security.md "OAUTHBEARER (OIDC)"): every problem of the file said before any token request
    ("oauth-key-without-oauthbearer", f"sasl.mechanism=PLAIN\nsasl.username=u\nsasl.password={SECRET}\n"
                                      "sasl.oauthbearer.token.endpoint.url=https://idp.example/token\n"),
    ("oauth-without-login-handler", OAUTH_LINES.replace(OAUTH_HANDLER_LINE, "")),
    ("oauth-unknown-login-handler", OAUTH_LINES.replace(OAUTH_HANDLER_LINE, "sasl.login.callback.handler.class="
                                                        "com.example.MyHandler\n")),
    ("oauth-without-token-endpoint", OAUTH_LINES.replace(OAUTH_ENDPOINT_LINE, "")),
    ("oauth-token-endpoint-not-a-url", OAUTH_LINES.replace(OAUTH_ENDPOINT_LINE, "sasl.oauthbearer.token.endpoint.url="
                                                           f"{SECRET}\n")),
    ("oauth-without-client-secret", OAUTH_LINES.replace(f' clientSecret="{SECRET}"', "")),
    ("oauth-client-secret-twice", OAUTH_LINES + f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n"),
    ("oauth-unsecured-login", OAUTH_LINES.replace('clientId="c"', f'unsecuredLoginStringClaim_sub="{SECRET}"')),
    ("oauth-token-endpoint-trust-store-missing", OAUTH_LINES.replace(
        ";", f' ssl.truststore.location="/nonexistent/{SECRET}.pem" ssl.truststore.type="PEM";')),
    ("oauth-with-sasl-password", OAUTH_LINES + f"sasl.password={SECRET}\n"),
    ("oauth-module-with-scram", OAUTH_LINES.replace("sasl.mechanism=OAUTHBEARER", "sasl.mechanism=SCRAM-SHA-512")),
    ("oauth-refresh-factor-out-of-range", OAUTH_LINES + "sasl.login.refresh.window.factor=0.2\n"),
    # AWS MSK IAM (docs/security.md "AWS MSK IAM"), both documented forms, in the AWS environment of
    # tests/aws_environment.py (no credentials but its profile's; 127.0.0.1 names no region)
    ("msk-iam-no-region", MSK_IAM_LINES),
    ("msk-iam-oauthbearer-no-region", MSK_OAUTH_LINES),
    ("msk-iam-region-not-a-region", MSK_IAM_LINES + f"aws.region={SECRET}\n"),
    ("msk-iam-no-credentials", MSK_IAM_LINES + "aws.region=us-east-1\n"),
    ("msk-iam-oauthbearer-no-credentials", MSK_OAUTH_LINES + "aws.region=us-east-1\n"),
    ("msk-iam-unknown-profile", MSK_IAM_LINES.replace("required;", 'required awsProfileName="no-such-profile";')
     + "aws.region=us-east-1\n"),
    ("msk-iam-mixed-forms", MSK_IAM_LINES.replace("IAMClientCallbackHandler", "IAMOAuthBearerLoginCallbackHandler")),
    ("msk-iam-oauthbearer-with-client-secret", MSK_OAUTH_LINES.replace("required;", f'required clientId="c" '
                                                                                  f'clientSecret="{SECRET}";')),
    ("msk-iam-plaintext", MSK_IAM_LINES.replace("SASL_SSL", "SASL_PLAINTEXT") + "aws.region=us-east-1\n"),
    ("gssapi", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.kerberos.service.name=kafka\nsasl.jaas.config="
               "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab=\"/etc/k.keytab\" "
               f"principal=\"{SECRET}@EXAMPLE.COM\";\n"),
]
CONFIG_COMMANDS = ("progress", "execute", "verify", "cancel", "run")


def config_argv(command):
    extra = {"execute": ("--reassignment-json-file", "@FILE"), "verify": ("--reassignment-json-file", "@FILE"),
             "cancel": ("--all",), "run": ("--checkpoint-location", "@TMP/cp", "--metrics-port", "@FREE")}.get(command, ())
    return (command, "--bootstrap-server", UNREACHABLE, "--timeout", "1", "--command-config", "@CONFIG", *extra)


for name, text in BAD_CONFIGS:
    for command in CONFIG_COMMANDS:
        CASES.append(Case(f"{command}-config-{name}", "command-config", config_argv(command), file=GOOD, config=text))

# --- shared flags: --bootstrap-server, --timeout, --output -----------------------------------------------
BAD_BOOTSTRAPS = ["", ",", ":9092", "host:", "host:0", "host:65536", "host:99999999999999999999", "host:-1",
                  "host:port", "host:9092:1", "a b:9092", "h\u00f6st:9092", "kafka\n:9092", "::1:9092", "[::1]:0",
                  "[zz]:9092", "h:1,", ",h:1", "h:1,,h:2", "x" * 300 + ":9092", ",".join(["h:1"] * 101),
                  "h:１２",
                  "127.0.0.1", "kafka-1:9092,kafka-2"]  # issue 16: no port is refused, as Kafka's tools refuse it
for i, value in enumerate(BAD_BOOTSTRAPS):
    for command in ("progress", "cancel", "run", "execute"):
        extra = {"cancel": ("--all",), "execute": ("--reassignment-json-file", "@FILE")}.get(command, ())
        CASES.append(Case(f"{command}-bootstrap-{i}", "bootstrap", (command, "--bootstrap-server", value, *extra),
                          file=GOOD if command == "execute" else None))

BAD_DURATIONS = ["inf", "-inf", "nan", "0", "-1", "0s", "1e309", "1e3", "", " ", "x", "10d", "1.2.3", "99999999999999999999",
                 "5000000h", "10ss", "0.0000001", "+", "٣"]
for value in BAD_DURATIONS:
    CASES.append(Case(f"progress-timeout-{value!r}", "duration",
                      ("progress", "--bootstrap-server", UNREACHABLE, "--timeout", value)))
for value in ["inf", "nan", "0", "-1", "1e3", "x", "0.01", "2d"]:
    CASES.append(Case(f"progress-watch-{value!r}", "duration",
                      ("progress", "--bootstrap-server", UNREACHABLE, "--watch", value)))
for flag in ("--trigger-interval", "--stall-after", "--rate-window"):
    for value in ["inf", "nan", "0", "-1", "1e3", "x", "30d", "1ms"]:
        CASES.append(Case(f"run{flag}-{value!r}", "duration", ("run", "--bootstrap-server", UNREACHABLE,
                                                                "--metrics-port", "@FREE", flag, value)))

for command in ("progress", "execute", "verify", "cancel", "run", "dashboards"):
    for value in ("xml", "", "TABLE", "json\n"):
        target = ("--out", "@TMP/d") if command == "dashboards" else ("--bootstrap-server", UNREACHABLE)
        CASES.append(Case(f"{command}-output-{value!r}", "output", (command, *target, "--output", value)))
CASES += [
    Case("dashboards-out-is-a-file", "output", ("dashboards", "--out", "/etc/hostname")),
    Case("dashboards-out-under-a-file", "output", ("dashboards", "--out", "/etc/hostname/dashboards")),
    Case("dashboards-out-unwritable", "output", ("dashboards", "--out", "/proc/dashboards")),
    Case("dashboards-out-too-long", "output", ("dashboards", "--out", "/tmp/" + "d" * 5000)),
    Case("dashboards-out-missing", "usage", ("dashboards",)),
    Case("dashboards-out-nul", "output", ("dashboards", "--out", "/tmp/a\x00b")),  # in-process only: argv has no NUL
    Case("progress-path-nul", "files", ("progress", "--bootstrap-server", UNREACHABLE, "--reassignment-json-file", "/tmp/a\x00b")),
]

# --- run: its own flags, port and checkpoint (all before Spark or any topic) -------------------------------
RUN = ("run", "--bootstrap-server", UNREACHABLE, "--timeout", "1", "--metrics-port", "@FREE", "--checkpoint-location", "@TMP/cp")
CASES += [Case(f"run-metrics-port-{v}", "port", (*RUN, "--metrics-port", v))
          for v in ("0", "-1", "65536", "99999999999999999999999", "abc", "", "80.5", "9" * 5000)]
CASES += [
    Case("run-metrics-port-taken", "port", (*RUN, "--metrics-port", "@BUSY")),
    Case("run-metrics-address-bad", "port", (*RUN, "--metrics-address", "999.1.1.1")),
    Case("run-metrics-address-not-local", "port", (*RUN, "--metrics-address", "192.0.2.1")),
    Case("run-metrics-address-garbage", "port", (*RUN, "--metrics-address", "not an address\n")),
    Case("run-checkpoint-is-a-file", "checkpoint", (*RUN[:-2], "--checkpoint-location", "/etc/hostname")),
    Case("run-checkpoint-under-a-file", "checkpoint", (*RUN[:-2], "--checkpoint-location", "/etc/hostname/cp")),
    Case("run-checkpoint-file-uri-to-a-file", "checkpoint", (*RUN[:-2], "--checkpoint-location", "file:///etc/hostname")),
    Case("run-checkpoint-unwritable", "checkpoint", (*RUN[:-2], "--checkpoint-location", "/proc/cp")),
    Case("run-checkpoint-too-long", "checkpoint", (*RUN[:-2], "--checkpoint-location", "/tmp/" + "c" * 5000)),
    Case("run-checkpoint-nul", "checkpoint", (*RUN[:-2], "--checkpoint-location", "/tmp/a\x00b")),
    Case("run-checkpoint-empty", "checkpoint", (*RUN[:-2], "--checkpoint-location", "")),
    Case("run-checkpoint-dangling-link", "checkpoint", (*RUN[:-2], "--checkpoint-location", "@FILE"), file=DANGLING),
    Case("run-checkpoint-link-loop", "checkpoint", (*RUN[:-2], "--checkpoint-location", "@FILE/cp"), file=LINK_LOOP),
    Case("run-master-bad", "run-flags", (*RUN, "--master", "spork://x")),
    Case("run-master-local-zero", "run-flags", (*RUN, "--master", "local[0]")),
    Case("run-master-local-text", "run-flags", (*RUN, "--master", "local[many]")),
    Case("run-master-newline", "run-flags", (*RUN, "--master", "local\n[*]")),
    Case("run-progress-topic-bad", "run-flags", (*RUN, "--progress-topic", "a/b")),
    Case("run-progress-topic-long", "run-flags", (*RUN, "--progress-topic", "p" * 300)),
    Case("run-progress-topic-dot", "run-flags", (*RUN, "--progress-topic", ".")),
    Case("run-throttle-cleanup-bad", "run-flags", (*RUN, "--throttle-cleanup", "some")),
    Case("run-metrics-detail-bad", "run-flags", (*RUN, "--metrics-detail", "broker")),
]

# --- execute's throttles, and flags naming topics ---------------------------------------------------------
EXECUTE = ("execute", "--bootstrap-server", "@BOOT", "--timeout", "5", "--reassignment-json-file", "@FILE")
MOVE_TOPIC = doc(entry("@TOPIC", 0, (2, 3)))
for flag in ("--throttle", "--replica-alter-log-dirs-throttle"):
    for value in ("0", "-1", str(LONG_MAX + 1), str(10**30), "9" * 5000, "abc", "1e6", "1.5", ""):
        CASES.append(Case(f"execute{flag}-{value[:30]}", "throttle", (*EXECUTE, flag, value), file=MOVE_TOPIC,
                          cluster=True))
for command in ("execute", "verify", "cancel"):
    for value in ("a/b", "", ".", "o" * 300):
        extra = ("--all",) if command == "cancel" else ("--reassignment-json-file", "@FILE")
        CASES.append(Case(f"{command}-ownership-topic-{value[:10]!r}", "topic-flags",
                          (command, "--bootstrap-server", "@BOOT", "--timeout", "5", *extra, "--ownership-topic", value),
                          file=MOVE_TOPIC, cluster=True))
CASES.append(Case("verify-progress-topic-bad", "topic-flags",
                  ("verify", "--bootstrap-server", "@BOOT", "--reassignment-json-file", "@FILE", "--progress-topic", "x y"),
                  file=MOVE_TOPIC, cluster=True))

# --- plans: execute's limits, pause / resume / cancel --request-id ------------------------------------------
PLAN_EXECUTE = ("execute", "--bootstrap-server", UNREACHABLE, "--timeout", "1", "--reassignment-json-file", "@FILE")
for flag, values in (("--max-partitions-in-flight", ("0", "-1", "abc", "1e3", "1.5", "", str(INT32_MAX + 1), "9" * 5000)),
                     ("--max-moves-per-broker", ("0", "-3", "x", str(INT32_MAX + 1))),
                     ("--max-bytes-in-flight", ("0", "-1", "1.5GB", "10PB", "x", "GB", str(LONG_MAX + 1), "9" * 5000, "1 GB")),
                     ("--order", ("random", "", "SMALLEST"))):
    for value in values:
        extra = () if flag == "--max-partitions-in-flight" else ("--max-partitions-in-flight", "5")
        CASES.append(Case(f"execute{flag}-{value[:20]!r}", "plan", (*PLAN_EXECUTE, *extra, flag, value), file=GOOD))
for extra in (("--max-moves-per-broker", "3"), ("--max-bytes-in-flight", "1GB"), ("--order", "file"), ("--wait",)):
    CASES.append(Case(f"execute{extra[0]}-without-a-plan", "plan", (*PLAN_EXECUTE, *extra), file=GOOD))
for extra in (("--additional",), ("--no-auto-remove-throttle",), ("--dry-run",)):
    CASES.append(Case(f"execute-plan-with{extra[0]}", "plan", (*PLAN_EXECUTE, "--max-partitions-in-flight", "5", *extra),
                      file=GOOD))
for command in ("pause", "resume", "cancel", "progress"):
    for value in ("", "x", "20261123T180000.000Z-ABCD", "20261123T180000Z-abcd", "20261123T180000.000Z-abcd\n"):
        CASES.append(Case(f"{command}-request-id-{value!r}", "plan",
                          (command, "--bootstrap-server", UNREACHABLE, "--request-id", value)))
    CASES.append(Case(f"{command}-unknown-request-id", "plan", (command, "--bootstrap-server", "@BOOT", "--timeout", "5",
                                                                "--request-id", "20200101T000000.000Z-0000",
                                                                "--ownership-topic", NEVER_CREATED), cluster=True))
CASES += [Case("progress-request-id-with-a-file", "plan", ("progress", "--bootstrap-server", UNREACHABLE, "--request-id",
                                                          "20261123T180000.000Z-abcd", "--reassignment-json-file", "@FILE"),
               file=GOOD),
          Case("progress-request-id-watch-0", "plan", ("progress", "--bootstrap-server", UNREACHABLE, "--request-id",
                                                      "20261123T180000.000Z-abcd", "--watch", "0"))]
CASES += [Case("pause-without-request-id", "usage", ("pause", "--bootstrap-server", UNREACHABLE)),
          Case("cancel-request-id-and-all", "usage", ("cancel", "--bootstrap-server", UNREACHABLE, "--all",
                                                      "--request-id", "20261123T180000.000Z-abcd"))]

# --- usage ---------------------------------------------------------------------------------------------------
CASES += [
    Case("no-command", "usage", ()),
    Case("unknown-command", "usage", ("reassign",)),
    Case("unknown-command-newline", "usage", ("reassign\nreassign-monitor: error: forged",)),
    Case("unknown-flag", "usage", ("progress", "--bootstrap-server", UNREACHABLE, "--verify")),
    Case("unknown-flag-newline", "usage", ("progress", "--bootstrap-server", UNREACHABLE, "--x\nforged")),
    Case("stray-argument-escape", "usage", ("progress", "--bootstrap-server", UNREACHABLE, "\x1b[2J")),
    Case("missing-bootstrap", "usage", ("progress",)),
    Case("execute-missing-file", "usage", ("execute", "--bootstrap-server", UNREACHABLE)),
    Case("cancel-file-and-all", "usage", ("cancel", "--bootstrap-server", UNREACHABLE, "--all",
                                          "--reassignment-json-file", "@FILE"), file=GOOD),
    Case("cancel-neither", "usage", ("cancel", "--bootstrap-server", UNREACHABLE)),
    Case("flag-without-value", "usage", ("progress", "--bootstrap-server")),
]

# --- needs the cluster: unknown ids (exit 2), and what the cluster refuses or cannot answer (exit 3) ---------
CASES += [
    Case("execute-unknown-topic", "unknown-ids", EXECUTE, file=doc(entry("no-such-topic-badinput", 0, (1, 2))), cluster=True),
    Case("execute-unknown-partition", "unknown-ids", EXECUTE, file=doc(entry("@TOPIC", 99, (1, 2))), cluster=True),
    Case("execute-unknown-broker", "unknown-ids", EXECUTE, file=doc(entry("@TOPIC", 0, (1, 99))), cluster=True),
    Case("execute-broker-int32-max", "unknown-ids", EXECUTE, file=doc(entry("@TOPIC", 0, (1, INT32_MAX))), cluster=True),
    Case("execute-partition-int32-max", "unknown-ids", EXECUTE, file=doc(entry("@TOPIC", INT32_MAX, (1, 2))), cluster=True),
    Case("execute-absent-log-dir", "unknown-ids", EXECUTE,
         file=doc(entry("@TOPIC", 0, (2, 3), log_dirs=["any", "/no/such/dir"])), cluster=True),
    Case("execute-plan-absent-log-dir", "unknown-ids", (*EXECUTE, "--max-partitions-in-flight", "5"),
         file=doc(entry("@TOPIC", 0, (2, 3), log_dirs=["any", "/no/such/dir"])), cluster=True),
    Case("execute-already-reassigning", "unknown-ids", EXECUTE, file=doc(entry("@MOVING", 0, (1, 2))), cluster=True),
    Case("execute-one-good-one-unknown", "unknown-ids", (*EXECUTE, "--throttle", "1000000"),
         file=doc(entry("@TOPIC", 0, (2, 3)), entry("@TOPIC", 1, (2, 42))), cluster=True),
    Case("verify-unknown-topic", "unknown-ids", file_cmd("verify"), file=doc(entry("no-such-topic-badinput", 0, (1,))),
         cluster=True),
    Case("verify-unknown-partition", "unknown-ids", file_cmd("verify"), file=doc(entry("@TOPIC", 7, (1,))), cluster=True),
    Case("progress-timeout-zero-on-cluster", "duration", ("progress", "--bootstrap-server", "@BOOT", "--timeout", "0"),
         cluster=True),
    Case("run-port-taken-on-cluster", "port", ("run", "--bootstrap-server", "@BOOT", "--checkpoint-location", "@TMP/cp",
                                               "--metrics-port", "@BUSY", "--progress-topic", NEVER_CREATED),
         cluster=True),
    Case("run-checkpoint-file-on-cluster", "checkpoint", ("run", "--bootstrap-server", "@BOOT", "--checkpoint-location",
                                                          "/etc/hostname", "--progress-topic", NEVER_CREATED),
         cluster=True),
    Case("execute-throttle-over-long-on-cluster", "throttle", (*EXECUTE, "--throttle", str(LONG_MAX + 1)),
         file=MOVE_TOPIC, cluster=True),
    # The cluster's refusal or absence: exit 3, still one line.
    Case("progress-unreachable", "cluster", ("progress", "--bootstrap-server", UNREACHABLE, "--timeout", "1"),
         code=EXIT_CLUSTER),
    Case("execute-unreachable", "cluster", file_cmd("execute", UNREACHABLE), file=GOOD, code=EXIT_CLUSTER),
    Case("verify-unreachable", "cluster", file_cmd("verify", UNREACHABLE), file=GOOD, code=EXIT_CLUSTER),
    Case("cancel-unreachable", "cluster", ("cancel", "--bootstrap-server", UNREACHABLE, "--timeout", "1", "--all"),
         code=EXIT_CLUSTER),
    Case("run-unreachable", "cluster", ("run", "--bootstrap-server", UNREACHABLE, "--timeout", "1",
                                        "--checkpoint-location", "@TMP/cp", "--metrics-port", "@FREE"), code=EXIT_CLUSTER),
    Case("progress-unresolvable-host", "cluster", ("progress", "--bootstrap-server", "no-such-host.invalid:9092",
                                                   "--timeout", "1"), code=EXIT_CLUSTER),
    Case("progress-tls-against-plaintext", "cluster", ("progress", "--bootstrap-server", "@BOOT", "--timeout", "2",
                                                       "--command-config", "@CONFIG"),
         config="security.protocol=SSL\nssl.ca.location=/etc/ssl/certs/ca-certificates.crt\n", code=EXIT_CLUSTER,
         cluster=True),
    # OAUTHBEARER: the token endpoint cannot be reached (nothing listens on port 1), said before any broker is asked.
    Case("progress-oauth-token-endpoint-unreachable", "cluster", ("progress", "--bootstrap-server", UNREACHABLE,
                                                                  "--timeout", "1", "--command-config", "@CONFIG"),
         config=OAUTH_LINES, code=EXIT_CLUSTER),
    # AWS MSK IAM: a token signed offline with the test environment's profile, then no broker answers.
    Case("progress-msk-iam-unreachable", "cluster", ("progress", "--bootstrap-server", UNREACHABLE, "--timeout", "1",
                                                     "--command-config", "@CONFIG"),
         config=MSK_IAM_LINES.replace("required;", f'required awsProfileName="{AWS_PROFILE}";') + "aws.region=us-east-1\n",
         code=EXIT_CLUSTER),
    Case("cancel-sasl-against-plaintext", "cluster", ("cancel", "--bootstrap-server", "@BOOT", "--timeout", "2", "--all",
                                                      "--command-config", "@CONFIG"),
         config=f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password={SECRET}\n",
         code=EXIT_CLUSTER, cluster=True),
]
# An empty ssl.endpoint.identification.algorithm (Java's "no hostname verification") is given to both
# client libraries alike, so every command answers the same: here TLS spoken to the plaintext test cluster, exit 3
# at connecting, before anything changed (execute used to fail mid-way on librdkafka's "_INVALID_ARG").
for command, extra in (("progress", ()), ("execute", ("--reassignment-json-file", "@FILE", "--throttle", "1000000")),
                       ("verify", ("--reassignment-json-file", "@FILE")), ("cancel", ("--all",))):
    CASES.append(Case(f"{command}-hostname-verification-off-tls-against-plaintext", "cluster",
                      (command, "--bootstrap-server", "@BOOT", "--timeout", "2", "--command-config", "@CONFIG", *extra),
                      file=MOVE_TOPIC, config="security.protocol=SSL\nssl.ca.location=/etc/ssl/certs/ca-certificates.crt\n"
                                              "ssl.endpoint.identification.algorithm=\n", code=EXIT_CLUSTER, cluster=True))

# --- --clusters FILE --cluster NAME: fleet files (docs/operations.md "Several clusters") -------------------------
# The file is @FILE (fleet.toml); its relative paths start from the case's directory, where @CONFIG is written as
# client.properties. Every cluster's servers are @BOOT, so a check that is missing shows up as exit 3.
FLEET = '[clusters.a]\nbootstrap-servers = "@BOOT"\n'
FLEET_PROFILE = '[client-profiles.p]\ncommand-config = "client.properties"\n'
BAD_FLEETS = [
    # id, category, fleet file, client file (None: none)
    ("toml-syntax", "fleet-file", '[clusters.a]\nbootstrap-servers = "@BOOT\n', None),
    ("toml-bare-value", "fleet-file", "[clusters.a]\nbootstrap-servers = @BOOT\n", None),
    ("duplicate-cluster", "fleet-file", FLEET + FLEET, None),
    ("empty", "fleet-file", "", None),
    ("unknown-top-key", "fleet-file", FLEET + "[cluster.b]\n", None),
    ("unknown-key", "fleet-file", FLEET + 'bootstrap-server = "@BOOT"\n', None),
    ("no-bootstrap-servers", "fleet-file", '[clusters.a]\nlabels = { region = "eu" }\n', None),
    ("bootstrap-servers-no-port", "fleet-file", '[clusters.a]\nbootstrap-servers = "127.0.0.1"\n', None),
    ("bootstrap-servers-list", "fleet-file", '[clusters.a]\nbootstrap-servers = ["@BOOT"]\n', None),
    ("config-and-profile", "fleet-file", FLEET_PROFILE + FLEET + 'client-profile = "p"\ncommand-config = "c"\n', None),
    ("unknown-profile", "fleet-file", FLEET_PROFILE + FLEET + 'client-profile = "q"\n', None),
    ("profile-without-config", "fleet-file", "[client-profiles.p]\n" + FLEET, None),
    ("label-name", "fleet-file", FLEET + 'labels = { "a-b" = "x" }\n', None),
    ("label-cluster", "fleet-file", FLEET + 'labels = { cluster = "x" }\n', None),
    ("run-unknown-flag", "fleet-file", FLEET + '[clusters.a.run]\ntrigger = "5s"\n', None),
    ("run-job-wide-flag", "fleet-file", FLEET + "[clusters.a.run]\nmetrics-port = 9470\n", None),
    ("run-bad-duration", "fleet-file", FLEET + '[clusters.a.run]\ntrigger-interval = "25h"\n', None),
    ("run-nan-duration", "fleet-file", FLEET + "[clusters.a.run]\nstall-after = nan\n", None),
    ("run-bad-choice", "fleet-file", FLEET + '[clusters.a.run]\nthrottle-cleanup = "some"\n', None),
    ("run-bad-topic", "fleet-file", FLEET + '[clusters.a.run]\nprogress-topic = "a/b"\n', None),
    ("run-flag-not-bool", "fleet-file", FLEET + '[clusters.a.run]\ndry-run = "yes"\n', None),
    ("run-value-table", "fleet-file", FLEET + "[clusters.a.run.throttle-min]\nrate = 1\n", None),
    ("second-cluster-bad", "fleet-file", FLEET + '[clusters.b]\nbootstrap-servers = "h:0"\n', None),
    ("command-config-missing", "fleet-file", FLEET + 'command-config = "absent.properties"\n', None),
    ("command-config-directory", "fleet-file", FLEET + 'command-config = "."\n', None),
    ("command-config-bad", "fleet-file", FLEET + 'command-config = "client.properties"\n', f"sasl.pasword={SECRET}\n"),
    ("profile-config-bad", "fleet-file", FLEET_PROFILE + FLEET + 'client-profile = "p"\n',
     f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM\nsasl.username=u\nsasl.password={SECRET}\n"),
    ("cluster-name-newline", "escaping", '[clusters."a\\nreassign-monitor run: error: forged"]\nbootstrap-servers = "@BOOT"\n',
     None),
    ("label-name-escape", "escaping", FLEET + 'labels = { "a\\u001b[2J" = "x" }\n', None),
    ("not-utf8", "files", FLEET.encode() + b"# \xff\xfe\n", None),
    ("binary", "files", bytes(range(256)), None),
    ("missing", "files", MISSING, None),
    ("directory", "files", DIRECTORY, None),
    ("dev-zero", "files", DEV_ZERO, None),
    ("oversized", "files", Special("sparse", size=2**20 + 1), None),
]
FLEET_COMMANDS = ("progress", "cancel", "run")


def fleet_argv(command, cluster="a"):
    extra = {"cancel": ("--all",), "run": ("--checkpoint-location", "@TMP/cp", "--metrics-port", "@FREE")}.get(command, ())
    return (command, "--clusters", "@FILE", "--cluster", cluster, "--timeout", "1", *extra)


for name, category, text, client in BAD_FLEETS:
    for command in FLEET_COMMANDS:
        CASES.append(Case(f"{command}-fleet-{name}", category, fleet_argv(command), file=text, config=client,
                          file_name="fleet.toml"))
for command in FLEET_COMMANDS:
    CASES += [
        Case(f"{command}-fleet-unknown-cluster", "fleet-file", fleet_argv(command, "b"), file=FLEET, file_name="fleet.toml"),
        Case(f"{command}-fleet-cluster-without-clusters", "usage",
             (command, "--bootstrap-server", UNREACHABLE, "--cluster", "a")),
        Case(f"{command}-fleet-with-command-config", "usage", (*fleet_argv(command), "--command-config", "@CONFIG"),
             file=FLEET, config="security.protocol=PLAINTEXT\n", file_name="fleet.toml"),
        Case(f"{command}-fleet-with-bootstrap-server", "usage", (*fleet_argv(command), "--bootstrap-server", UNREACHABLE),
             file=FLEET, file_name="fleet.toml"),
        # The named cluster does not answer: exit 3, as with --bootstrap-server.
        Case(f"{command}-fleet-unreachable", "cluster", fleet_argv(command), file=FLEET, file_name="fleet.toml",
             code=EXIT_CLUSTER),
    ]
CASES += [
    Case("progress-fleet-without-cluster", "usage", ("progress", "--clusters", "@FILE"), file=FLEET, file_name="fleet.toml"),
]
# The fleet job (`run --clusters FILE`, every cluster in one job): a bad file is refused before anything starts, as for
# one cluster of it.
FLEET_JOB_ARGV = ("run", "--clusters", "@FILE", "--timeout", "1", "--checkpoint-location", "@TMP/cp", "--metrics-port",
                  "@FREE")
CASES += [Case(f"run-fleet-job-{name}", category, FLEET_JOB_ARGV, file=text, config=client, file_name="fleet.toml")
          for name, category, text, client in BAD_FLEETS]

IDS = [case.id for case in CASES]
assert len(IDS) == len(set(IDS)), "case ids are unique"

# --- --throttle auto: its bounds, schedule and guard; local problems, refused before any request ---
AUTO_EXECUTE = ("execute", "--bootstrap-server", UNREACHABLE, "--timeout", "1", "--reassignment-json-file", "@FILE")
AUTO_FILE = doc(entry("t", 0, (1, 2)))
AUTO_BOUNDS = ("--throttle", "auto", "--throttle-min", "1MB", "--throttle-max", "10MB")
for command, base in (("execute", AUTO_EXECUTE), ("run", RUN)):
    for name, extra in (
            ("auto-without-bounds", ("--throttle", "auto")),
            ("auto-without-max", ("--throttle", "auto", "--throttle-min", "1MB")),
            ("min-without-auto", ("--throttle-min", "1MB")),
            ("schedule-without-auto", ("--throttle-schedule", "22:00-06:00=5MB")),
            ("min-above-max", ("--throttle", "auto", "--throttle-min", "20MB", "--throttle-max", "10MB")),
            ("schedule-ceiling-above-max", (*AUTO_BOUNDS, "--throttle-schedule", "22:00-06:00=50MB")),
            ("schedule-ceiling-below-min", (*AUTO_BOUNDS, "--throttle-schedule", "22:00-06:00=10KB")),
            ("schedule-hour-25", (*AUTO_BOUNDS, "--throttle-schedule", "25:00-06:00=5MB")),
            ("schedule-empty-window", (*AUTO_BOUNDS, "--throttle-schedule", "22:00-22:00=5MB")),
            ("schedule-no-rate", (*AUTO_BOUNDS, "--throttle-schedule", "22:00-06:00")),
            ("schedule-garbage", (*AUTO_BOUNDS, "--throttle-schedule", "nights\n=5MB")),
            ("schedule-second-window-bad", (*AUTO_BOUNDS, "--throttle-schedule", "22:00-06:00=5MB,x")),
            *((f"min-{value[:20]}", ("--throttle", "auto", "--throttle-min", value, "--throttle-max", "10MB"))
              for value in ("0", "-1MB", "1.5MB", "1TB", "abc", "", "9" * 5000, str(LONG_MAX + 1)))):
        CASES.append(Case(f"{command}-throttle-{name}", "throttle-auto", (*base, *extra),
                          file=AUTO_FILE if command == "execute" else None))
CASES += [
    Case("run-throttle-not-auto", "throttle-auto", (*RUN, "--throttle", "5MB")),
    Case("run-throttle-guard-without-url", "throttle-auto", (*RUN, *AUTO_BOUNDS, "--throttle-guard", "up == 0")),
    Case("run-throttle-guard-url-without-guard", "throttle-auto",
         (*RUN, *AUTO_BOUNDS, "--throttle-guard-url", "http://127.0.0.1:9090")),
    Case("run-throttle-guard-without-auto", "throttle-auto",
         (*RUN, "--throttle-guard-url", "http://127.0.0.1:9090", "--throttle-guard", "up == 0")),
    Case("run-throttle-guard-url-ftp", "throttle-auto",
         (*RUN, *AUTO_BOUNDS, "--throttle-guard-url", "ftp://prometheus:9090", "--throttle-guard", "up")),
    Case("run-throttle-guard-url-port", "throttle-auto",
         (*RUN, *AUTO_BOUNDS, "--throttle-guard-url", "http://prometheus:99999", "--throttle-guard", "up")),
    Case("run-throttle-guard-empty", "throttle-auto",
         (*RUN, *AUTO_BOUNDS, "--throttle-guard-url", "http://127.0.0.1:9090", "--throttle-guard", " ")),
    Case("run-throttle-auto-dry-run", "throttle-auto", (*RUN, *AUTO_BOUNDS, "--dry-run")),
    Case("run-throttle-auto-cleanup-off", "throttle-auto", (*RUN, *AUTO_BOUNDS, "--throttle-cleanup", "off")),
    Case("run-throttle-interval-zero", "throttle-auto", (*RUN, *AUTO_BOUNDS, "--throttle-interval", "0")),
]
