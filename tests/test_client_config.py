"""The --command-config reader on plain files: Java's JAAS and Properties syntax as tables of cases, the
trust and key stores (PEM, PKCS12, JKS made by the JDK's own keytool, as operators make them), and the
same settings handed to both client libraries. The secured cluster proves them with real handshakes
(tests/test_secured_cluster.py)."""

import ssl
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from streaming.vocabulary import client_config, jaas
from streaming.vocabulary.errors import BadInput
from tests.kafka_fixtures import ROOT

SECRET = "s3cr3t-never-echo"
SCRAM = jaas.SCRAM_MODULE
PLAIN = jaas.PLAIN_MODULE

# id: (sasl.jaas.config value as Java's JaasConfig receives it, (username, password) or the fragment of the refusal)
JAAS_CASES = {
    "scram-quoted": (f'{SCRAM} required username="u" password="p";', ("u", "p")),
    "plain-quoted": (f'{PLAIN} required username="alice" password="pw";', ("alice", "pw")),
    "single-quotes": (f"{SCRAM} required username='u' password='p q';", ("u", "p q")),
    "bare-words": (f"{SCRAM} required username=u password=p-1_$;", ("u", "p-1_$")),
    "flag-case": (f'{SCRAM} REQUIRED username="u" password="p";', ("u", "p")),
    "escaped-quote": (f'{SCRAM} required username="u" password="a\\"b";', ("u", 'a"b')),
    "escaped-backslash": (f'{SCRAM} required username="u" password="a\\\\b";', ("u", "a\\b")),
    "escape-n-and-other": (f'{SCRAM} required username="u" password="a\\nb\\qc";', ("u", "a\nbqc")),
    "octal-escape": (f'{SCRAM} required username="u" password="\\101\\0601";', ("u", "A01")),
    "other-quote-inside": (f"{SCRAM} required username=\"u\" password=\"it's\";", ("u", "it's")),
    "comments": (f'{SCRAM} /* c */ required // line\n username="u" password="p";', ("u", "p")),
    "extra-option": (f'{SCRAM} required username="u" password="p" tokenauth="false";', ("u", "p")),
    "unicode-word": (f"{SCRAM} required username=jos\u00e9 password=p;", ("jos\u00e9", "p")),
    "word-with-digits-dots-dashes": (f"{SCRAM} required username=u1.a-b password=x9.-;", ("u1.a-b", "x9.-")),
    "dash-start-value": (f"{SCRAM} required username=u password=-abc;", "no value for option 'password'"),
    "lone-slash-comments-out": (f"{SCRAM} required username=u password=/abc;", "no value for option 'password'"),
    "no-semicolon": (f'{SCRAM} required username="u" password="p"', "not terminated by a semicolon"),
    "two-modules": (f'{SCRAM} required username="u" password="p"; {PLAIN} required username="u" password="p";',
                    "more than one login module"),
    "no-flag": (f'{SCRAM} username="u" password="p";', "control flag"),
    "bad-flag": (f'{SCRAM} mandatory username="u" password="p";', "control flag"),
    "number-value": (f'{SCRAM} required username="u" password=123;', "no value for option 'password'"),
    "at-sign-value": (f'{SCRAM} required username="u" password=p@ss;', "expected key=value"),
    "delegation-token": (f'{SCRAM} required username="id" password="hmac" tokenauth="true";', "tokenauth=true"),
    "missing-password": (f'{SCRAM} required username="u";', "needs password"),
    "missing-both": (f"{SCRAM} required;", "needs username and password"),
    "empty": ("", "is empty"),
    "oauth-unsecured": (f'{jaas.OAUTHBEARER_MODULE} required unsecuredLoginStringClaim_sub="{SECRET}";',
                        "unsecured OAUTHBEARER tokens"),
    "oauth-unknown-option": (f'{jaas.OAUTHBEARER_MODULE} required clientId="c" {SECRET}="x";',
                             "option (an option) is not supported"),
    "msk-iam-unknown-option": (f'{jaas.MSK_IAM_MODULE} required awsProfileName="p" {SECRET}="x";',
                               "IAMLoginModule option (an option) is not supported"),
    "msk-iam-role-keys": (f'{jaas.MSK_IAM_MODULE} required awsRoleArn="arn:aws:iam::123456789012:role/r" '
                          f'awsRoleAccessKeyId="AKIA" awsRoleSecretAccessKey="{SECRET}";',
                          "awsRoleAccessKeyId is not supported: keep AWS keys out of this file"),
    "kerberos-keytab-without-principal": (f'{jaas.KERBEROS_MODULE} required useKeyTab=true keyTab="/k";',
                                          "useKeyTab=true needs principal"),
    "kerberos-would-prompt": (f'{jaas.KERBEROS_MODULE} required principal="{SECRET}";', "would prompt for a password"),
    "kerberos-unknown-option": (f'{jaas.KERBEROS_MODULE} required useTicketCache=true {SECRET}="x";',
                                "option (an option) is not supported"),
    "kerberos-flag-not-boolean": (f'{jaas.KERBEROS_MODULE} required useKeyTab="{SECRET}";', "must be true or false"),
    "kerberos-keytab-without-use": (f'{jaas.KERBEROS_MODULE} required useTicketCache=true keyTab="/k";',
                                    "'keyTab' needs useKeyTab=true"),
    "secret-as-module": (f'{SECRET}LoginModul required username="u" password="p";', "an unknown login module"),
}


@pytest.mark.parametrize("case_id", list(JAAS_CASES))
def test_jaas_as_java_reads_it(case_id):
    text, expected = JAAS_CASES[case_id]
    if isinstance(expected, tuple):
        login = jaas.parse(text)
        assert (login.username, login.password) == expected
    else:
        with pytest.raises(BadInput) as refused:
            jaas.parse(text)
        assert expected in str(refused.value)
        assert SECRET not in str(refused.value)


# Refusals of syntax, which Java's parser must refuse too (the others are ours: a module or option we cannot use).
SYNTAX_REFUSALS = ("not terminated", "no value for option", "expected key=value", "control flag", "is empty",
                   "more than one login module")
JAVA_PASSWORDS = ["plain", 'qu"ote', "back\\slash", "it's", "tab\there", "\u00e9t\u00e9", "semi;colon", "a=b", "/*x*/"]


def _java_reads(texts):
    """What Kafka's own client JAAS parsing reads from each text: (module, username, password) or None."""
    import base64

    lines = "".join(base64.b64encode(t.encode()).decode() + "\n" for t in texts)
    done = subprocess.run(["java", "-cp", str(ROOT / "deploy" / "kafka" / "lib" / "*"), str(Path(__file__).parent / "java" / "JaasProbe.java")],
                          input=lines, capture_output=True, text=True, timeout=300, check=True)
    found = []
    for line in done.stdout.splitlines():
        fields = line.split()
        found.append(None if fields[0] == "ERROR" else tuple(base64.b64decode(f).decode() for f in fields[1:]))
    assert len(found) == len(texts), done.stderr[-2000:]
    return found


def test_java_reads_every_case_as_we_do():
    """Differential: the table's values, and operators' quoted passwords, through Kafka's own parser."""
    texts = [text for text, _ in JAAS_CASES.values()]
    texts += [f'{SCRAM} required username="u" password="{p}";' for p in JAVA_PASSWORDS]
    for text, java in zip(texts, _java_reads(texts)):
        try:
            ours = jaas.parse(text)
        except BadInput as refused:
            if any(fragment in str(refused) for fragment in SYNTAX_REFUSALS):
                assert java is None, (text, java, str(refused))
            continue
        assert java == (ours.module, ours.username, ours.password), text


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=40))
def test_any_password_survives_java_quoting(password):
    """Quoted as an operator escapes it for Java (backslash before backslash and quote), any password reads back."""
    quoted = password.replace("\\", "\\\\").replace('"', '\\"')
    assert jaas.parse(f'{SCRAM} required username="u" password="{quoted}";').password == password


# -- the file: Properties syntax, key handling, refusals naming key and line --

def config(tmp_path, text, name="client.properties"):
    path = tmp_path / name
    path.write_text(text)
    return client_config.read_config(str(path))


def refusal(tmp_path, text):
    with pytest.raises(BadInput) as refused:
        config(tmp_path, text)
    message = str(refused.value)
    assert SECRET not in message
    return message


def test_the_issue_file_with_a_continued_jaas_line(tmp_path, stores):
    found = config(tmp_path, "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                             f"sasl.jaas.config={SCRAM} required \\\n    username=\"u\" \\\n    password=\"{SECRET}\";\n"
                             f"ssl.truststore.location={stores['trust_jks']}\nssl.truststore.password=changeit\n")
    assert found.settings["sasl.username"] == "u" and found.settings["sasl.password"] == SECRET
    assert found.settings["ssl.ca.pem"] == stores["ca-text"]
    assert found.trust_origin == f"ssl.truststore.location {stores['trust_jks']}"


def test_properties_escapes_apply_before_jaas(tmp_path):
    # In the file `\\\"` is Properties' `\"` after unescaping, which JAAS reads as a quote.
    found = config(tmp_path, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                             f'sasl.jaas.config={PLAIN} required username="u\\u00e9" password="a\\\\\\"b";\n')
    assert (found.settings["sasl.username"], found.settings["sasl.password"]) == ("u\u00e9", 'a"b')


REFUSALS = {  # id: (file text, fragments of the message)
    "jaas-and-username": (f'sasl.mechanism=PLAIN\nsasl.username=u\nsasl.jaas.config={PLAIN} required username="u" '
                          f'password="{SECRET}";\n', ("line 3", "both give the credentials")),
    "jaas-gssapi": ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=com.sun.security.auth.module."
                    f"Krb5LoginModule required useTicketCache=true principal=\"{SECRET}\";\n",
                    ("line 3", "Krb5LoginModule does not fit sasl.mechanism PLAIN")),
    "mechanism-gssapi": ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n", ("needs sasl.jaas.config with Krb5LoginModule",)),
    "mechanism-msk-iam-without-client-handler": ("security.protocol=SASL_SSL\nsasl.mechanism=AWS_MSK_IAM\nsasl.jaas.config="
                                                 "software.amazon.msk.auth.iam.IAMLoginModule required;\n",
                                                 ("needs sasl.client.callback.handler.class=software.amazon.msk.auth."
                                                  "iam.IAMClientCallbackHandler",)),
    "msk-iam-oauthbearer-form-without-jaas": ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
                                              "sasl.login.callback.handler.class=software.amazon.msk.auth.iam."
                                              "IAMOAuthBearerLoginCallbackHandler\n",
                                              ("sasl.mechanism OAUTHBEARER needs sasl.jaas.config with "
                                               "OAuthBearerLoginModule",)),
    "hostname-ldaps": ("ssl.endpoint.identification.algorithm=ldaps\n", ("line 1", "must be https")),
    "unknown-key": (f"ssl.cipher.suites={SECRET}\n", ("line 1", "'ssl.cipher.suites'")),
    "two-trusts": ("ssl.ca.location=/etc/hostname\nssl.truststore.location=/etc/hostname\n", ("line 2", "keep one")),
    "store-type": ("ssl.truststore.location=/etc/hostname\nssl.truststore.type=BKS\n", ("line 2", "JKS, PKCS12, PEM")),
    "ca-not-pem": ("security.protocol=SSL\nssl.ca.location=/etc/passwd\n", ("line 2", "ssl.ca.location holds no PEM certificate")),
    "truststore-not-a-store": ("ssl.truststore.location=/etc/passwd\n", ("line 1", "neither a JKS, a PKCS12 nor a PEM")),
    "key-without-certificate": ("ssl.key.location=/etc/passwd\n", ("line 1", "needs ssl.certificate.location")),
    "bad-unicode-escape": (f"sasl.password={SECRET}\\u12\n", ("line 1", "\\uXXXX")),
}


@pytest.mark.parametrize("case_id", list(REFUSALS))
def test_refusals_name_key_and_line_never_a_value(tmp_path, case_id):
    text, fragments = REFUSALS[case_id]
    message = refusal(tmp_path, text)
    assert all(f in message for f in fragments), message


def test_java_only_keys_are_ignored_in_one_note(tmp_path):
    found = config(tmp_path, "request.timeout.ms=30000\nsecurity.protocol=PLAINTEXT\nclient.id=ops\nretries=3\n")
    assert found.settings == {"security.protocol": "PLAINTEXT"}
    note = client_config.ignored_note(found)
    assert note.count("\n") == 0
    assert "request.timeout.ms (line 1)" in note and "client.id (line 3)" in note and "retries (line 4)" in note


HOSTNAME = {  # value in the file: (librdkafka's setting, kafka-python's SSLContext.check_hostname)
    None: (None, True), "": ("none", False), "https": ("https", True), "HTTPS": ("https", True), "none": ("none", False)}


@pytest.mark.parametrize("value", list(HOSTNAME), ids=lambda v: "absent" if v is None else (v or "empty"))
def test_hostname_verification_is_the_same_in_both_libraries(tmp_path, stores, value):
    line = "" if value is None else f"ssl.endpoint.identification.algorithm={value}\n"
    found = config(tmp_path, f"security.protocol=SSL\nssl.ca.location={stores['ca_pem']}\n{line}")
    librdkafka, python = HOSTNAME[value]
    assert client_config.confluent_settings(found, "b:1").get("ssl.endpoint.identification.algorithm") == librdkafka
    assert client_config.kafka_python_settings(found)["ssl_context"].check_hostname is python


# -- stores: every form gives the same PEM to both libraries --

def _run(*argv, env=None):
    subprocess.run(argv, check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A CA, a client certificate signed by it, and the stores operators make of them with openssl and keytool."""
    d = tmp_path_factory.mktemp("stores")
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
         "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))
    _run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=client", "-keyout", str(d / "client.key"),
         "-out", str(d / "client.csr"))
    _run("openssl", "x509", "-req", "-in", str(d / "client.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
         "-CAcreateserial", "-days", "2", "-out", str(d / "client.crt"))
    _run("openssl", "pkcs8", "-topk8", "-in", str(d / "client.key"), "-out", str(d / "client.enc.key"),
         "-passout", "pass:keypass")
    (d / "keystore.pem").write_text((d / "client.enc.key").read_text() + (d / "client.crt").read_text())
    for kind, name in (("JKS", "trust.jks"), ("PKCS12", "trust.p12")):
        _run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", str(d / "ca.pem"), "-keystore",
             str(d / name), "-storetype", kind, "-storepass", "changeit")
    _run("openssl", "pkcs12", "-export", "-in", str(d / "client.crt"), "-inkey", str(d / "client.key"), "-certfile",
         str(d / "ca.pem"), "-name", "client", "-out", str(d / "key.p12"), "-passout", "pass:storepw")
    _run("keytool", "-importkeystore", "-noprompt", "-srckeystore", str(d / "key.p12"), "-srcstoretype", "PKCS12",
         "-srcstorepass", "storepw", "-destkeystore", str(d / "key.jks"), "-deststoretype", "JKS",
         "-deststorepass", "storepw", "-destkeypass", "keypass")
    found = {name.replace(".", "_"): str(d / name) for name in ("ca.pem", "trust.jks", "trust.p12", "key.p12", "key.jks", "keystore.pem",
                                              "client.crt", "client.key", "client.enc.key")}
    found["ca-text"] = client_config.read_config(_write(d / "ca.properties", f"ssl.ca.location={d / 'ca.pem'}\n")) \
        .settings["ssl.ca.pem"]
    return found


def _write(path, text):
    Path(path).write_text(text)
    return str(path)


TRUSTS = {  # id: lines naming the trusted certificates
    "pem-ca-location": "ssl.ca.location={ca_pem}",
    "jks": "ssl.truststore.location={trust_jks}\nssl.truststore.password=changeit",
    "jks-no-password": "ssl.truststore.location={trust_jks}",
    "pkcs12": "ssl.truststore.location={trust_p12}\nssl.truststore.type=PKCS12\nssl.truststore.password=changeit",
    "pkcs12-declared-jks": "ssl.truststore.location={trust_p12}\nssl.truststore.password=changeit",
    "pem-truststore": "ssl.truststore.location={ca_pem}\nssl.truststore.type=PEM",
}


@pytest.mark.parametrize("case_id", list(TRUSTS))
def test_every_trust_store_gives_the_ca(tmp_path, stores, case_id):
    found = config(tmp_path, "security.protocol=SSL\n" + TRUSTS[case_id].format(**stores) + "\n")
    assert found.settings["ssl.ca.pem"] == stores["ca-text"]
    assert client_config.confluent_settings(found, "b:1")["ssl.ca.pem"] == stores["ca-text"]


IDENTITIES = {  # id: lines naming the client certificate and key
    "pkcs12": "ssl.keystore.location={key_p12}\nssl.keystore.type=PKCS12\nssl.keystore.password=storepw",
    "jks-key-password": "ssl.keystore.location={key_jks}\nssl.keystore.password=storepw\nssl.key.password=keypass",
    "pem-keystore": "ssl.keystore.location={keystore_pem}\nssl.keystore.type=PEM\nssl.key.password=keypass",
    "pem-locations": "ssl.certificate.location={client_crt}\nssl.key.location={client_key}",
    "pem-locations-clear-key-with-password": "ssl.certificate.location={client_crt}\nssl.key.location={client_key}\n"
                                             "ssl.key.password=unused",
    "pem-locations-encrypted": "ssl.certificate.location={client_crt}\nssl.key.location={client_enc_key}\n"
                               "ssl.key.password=keypass",
}


@pytest.mark.parametrize("case_id", list(IDENTITIES))
def test_every_key_store_gives_the_client_identity(tmp_path, stores, case_id):
    found = config(tmp_path, f"security.protocol=SSL\nssl.ca.location={stores['ca_pem']}\n"
                             + IDENTITIES[case_id].format(**stores) + "\n")
    settings = client_config.confluent_settings(found, "b:1")
    assert "CN=client" in _subject(settings["ssl.certificate.pem"])
    assert "ENCRYPTED PRIVATE KEY" in settings["ssl.key.pem"]  # never in clear, even in memory
    assert isinstance(client_config.kafka_python_settings(found)["ssl_context"], ssl.SSLContext)
    assert not list(Path(tmp_path).glob("reassign-monitor-*"))


STORE_REFUSALS = {  # id: (lines, fragments)
    "jks-wrong-password": ("ssl.truststore.location={trust_jks}\nssl.truststore.password=" + SECRET,
                           ("line 2", "cannot be read as JKS with ssl.truststore.password")),
    "pkcs12-wrong-password": ("ssl.keystore.location={key_p12}\nssl.keystore.password=" + SECRET,
                              ("line 2", "cannot be read as PKCS12")),
    "keystore-without-key": ("ssl.keystore.location={trust_p12}\nssl.keystore.password=changeit",
                             ("line 2", "holds no private key")),
    "pem-declared-jks": ("ssl.truststore.location={ca_pem}", ("line 2", "type=PEM")),
    "encrypted-key-without-password": ("ssl.certificate.location={client_crt}\nssl.key.location={client_enc_key}",
                                       ("line 2", "encrypted", "ssl.key.password")),
    "key-of-another-certificate": ("ssl.certificate.location={ca_pem}\nssl.key.location={client_key}",
                                   ("line 2", "does not match its certificate")),
}


@pytest.mark.parametrize("case_id", list(STORE_REFUSALS))
def test_store_refusals(tmp_path, stores, case_id):
    lines, fragments = STORE_REFUSALS[case_id]
    message = refusal(tmp_path, "security.protocol=SSL\n" + lines.format(**stores) + "\n")
    assert all(f in message for f in fragments), message


def _subject(pem):
    from cryptography import x509

    return x509.load_pem_x509_certificates(pem.encode())[0].subject.rfc4514_string()


# -- OAUTHBEARER: the Java client's OIDC client-credentials properties --

HANDLER = client_config.OIDC_LOGIN_HANDLERS
OAUTH_HEAD = ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
              "sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token\n")


def oauth_file(handler=HANDLER[0], module_options=f'clientId="monitor" clientSecret="{SECRET}" scope="kafka"',
               extra=""):
    return (OAUTH_HEAD + f"sasl.login.callback.handler.class={handler}\n"
            f"sasl.jaas.config={jaas.OAUTHBEARER_MODULE} required {module_options};\n{extra}")


OAUTH_CASES = {  # id: (file text, expected OAuthLogin fields)
    "jaas-options": (oauth_file(), {"client_id": "monitor", "client_secret": SECRET, "scope": "kafka"}),
    "older-secured-handler": (oauth_file(HANDLER[1]), {"client_id": "monitor"}),
    "kafka-4.1-properties": (oauth_file(module_options="", extra=(
        f"sasl.oauthbearer.client.credentials.client.id=monitor\nsasl.oauthbearer.client.credentials.client.secret="
        f"{SECRET}\nsasl.oauthbearer.scope=kafka admin\n")), {"client_id": "monitor", "scope": "kafka admin"}),
    "no-scope": (oauth_file(module_options=f'clientId="m" clientSecret="{SECRET}"'), {"scope": None}),
    "tuning": (oauth_file(extra="sasl.login.refresh.window.factor=0.5\nsasl.login.connect.timeout.ms=2000\n"
                                "sasl.oauthbearer.header.urlencode=true\nsasl.oauthbearer.sub.claim.name=client_id\n"),
               {"refresh_factor": 0.5, "connect_timeout_s": 2.0, "url_encode": True, "sub_claim": "client_id"}),
}


@pytest.mark.parametrize("case_id", list(OAUTH_CASES))
def test_oauthbearer_files(tmp_path, case_id):
    text, expected = OAUTH_CASES[case_id]
    found = config(tmp_path, text)
    assert found.settings == {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    assert found.oauth.token_endpoint == "https://idp.example.com/oauth2/token"
    assert {k: getattr(found.oauth, k) for k in expected} == expected
    assert SECRET not in repr(found.oauth)


def test_oauthbearer_token_endpoint_trust_store_from_the_jaas_options(tmp_path, stores):
    found = config(tmp_path, oauth_file(module_options=(
        f'clientId="m" clientSecret="{SECRET}" ssl.truststore.location="{stores["trust_jks"]}" '
        'ssl.truststore.password="changeit"')))
    assert found.oauth.ca_pem == stores["ca-text"]
    assert stores["trust_jks"] in found.oauth.ca_origin
    assert "ssl.ca.pem" not in found.settings  # the brokers' trust is apart from the token endpoint's


OAUTH_REFUSALS = {  # id: (file text, fragments of the message)
    "no-handler": (oauth_file().replace(f"sasl.login.callback.handler.class={HANDLER[0]}\n", ""),
                   ("OAuthBearerLoginCallbackHandler", "unsecured tokens")),
    "no-endpoint": (oauth_file().replace("sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token\n", ""),
                    ("needs sasl.oauthbearer.token.endpoint.url",)),
    "endpoint-not-url": (oauth_file().replace("https://idp.example.com/oauth2/token", "file:///etc/passwd"),
                         ("line 3", "http:// or https://")),
    "missing-secret": (oauth_file(module_options='clientId="m"'), ("line 5", "needs clientSecret")),
    "secret-twice": (oauth_file(extra=f"sasl.oauthbearer.client.credentials.client.secret={SECRET}\n"),
                     ("line 6", "keep one")),
    "module-and-mechanism-differ": (oauth_file().replace("sasl.mechanism=OAUTHBEARER", "sasl.mechanism=PLAIN"),
                                    ("line 5", "does not fit sasl.mechanism PLAIN")),
    "oauth-key-without-oauthbearer": ("sasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n"
                                      "sasl.oauthbearer.scope=kafka\n", ("line 4", "OAUTHBEARER only")),
    "refresh-factor": (oauth_file(extra="sasl.login.refresh.window.factor=1.5\n"), ("line 6", "from 0.5 to 1.0")),
    "no-jaas": (OAUTH_HEAD + f"sasl.login.callback.handler.class={HANDLER[0]}\n", ("needs sasl.jaas.config",)),
}


@pytest.mark.parametrize("case_id", list(OAUTH_REFUSALS))
def test_oauthbearer_refusals(tmp_path, case_id):
    text, fragments = OAUTH_REFUSALS[case_id]
    message = refusal(tmp_path, text)
    assert all(f in message for f in fragments), message


# -- AWS MSK IAM: both forms of MSK's developer guide ("Configure clients for IAM access control") --

MSK_IAM_FORM = ("security.protocol=SASL_SSL\nsasl.mechanism=AWS_MSK_IAM\n"
                f"sasl.client.callback.handler.class={client_config.MSK_IAM_CLIENT_HANDLER}\n")
MSK_OAUTH_FORM = ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
                  f"sasl.login.callback.handler.class={client_config.MSK_IAM_OAUTH_HANDLER}\n"
                  f"sasl.client.callback.handler.class={client_config.MSK_IAM_OAUTH_HANDLER}\n")
ROLE = "arn:aws:iam::123456789012:role/msk-operator"


def msk_file(form=MSK_IAM_FORM, options="", extra=""):
    module = jaas.MSK_IAM_MODULE if form == MSK_IAM_FORM else jaas.OAUTHBEARER_MODULE
    return form + f"sasl.jaas.config={module} required{' ' + options if options else ''};\n" + extra


MSK_CASES = {  # id: (file text, expected MskIamLogin fields)
    "iam-default-chain": (msk_file(), {"form": "AWS_MSK_IAM", "profile": None, "role_arn": None, "region": None}),
    "iam-profile": (msk_file(options='awsProfileName="msk"'), {"profile": "msk"}),
    "iam-role": (msk_file(options=f'awsRoleArn="{ROLE}" awsRoleSessionName="ops" awsStsRegion="eu-west-1"'),
                 {"role_arn": ROLE, "role_session_name": "ops", "sts_region": "eu-west-1", "profile": None}),
    "iam-role-defaults": (msk_file(options=f'awsRoleArn="{ROLE}"'),
                          {"role_session_name": "aws-msk-iam-auth", "sts_region": None, "external_id": None}),
    "iam-role-global-sts": (msk_file(options=f'awsRoleArn="{ROLE}" awsStsRegion="aws-global" awsRoleExternalId="x1"'),
                            {"sts_region": None, "external_id": "x1"}),
    "iam-region-key": (msk_file(extra="aws.region=ap-southeast-2\n"), {"region": "ap-southeast-2"}),
    "oauthbearer-form": (msk_file(MSK_OAUTH_FORM), {"form": "OAUTHBEARER", "profile": None, "refresh_factor": 0.8}),
    "oauthbearer-form-profile": (msk_file(MSK_OAUTH_FORM, 'awsProfileName="msk"'), {"profile": "msk"}),
    "oauthbearer-form-no-client-handler": (msk_file(MSK_OAUTH_FORM.replace(
        f"sasl.client.callback.handler.class={client_config.MSK_IAM_OAUTH_HANDLER}\n", "")), {"form": "OAUTHBEARER"}),
    "oauthbearer-form-refresh": (msk_file(MSK_OAUTH_FORM, extra="sasl.login.refresh.window.factor=0.6\n"),
                                 {"refresh_factor": 0.6}),
}


@pytest.mark.parametrize("case_id", list(MSK_CASES))
def test_msk_iam_files(tmp_path, case_id):
    """Both forms become OAUTHBEARER for the clients, with the MskIamLogin the token source signs with."""
    text, expected = MSK_CASES[case_id]
    found = config(tmp_path, text)
    assert found.settings == {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    assert found.oauth is None
    assert {k: getattr(found.msk_iam, k) for k in expected} == expected
    assert client_config.confluent_settings(found, "b:1")["sasl.mechanism"] == "OAUTHBEARER"
    assert client_config.kafka_python_settings(found)["sasl_mechanism"] == "OAUTHBEARER"


def test_msk_iam_java_tuning_options_are_noted(tmp_path):
    found = config(tmp_path, msk_file(options='awsDebugCreds="true" awsMaxRetries="5"'))
    note = client_config.ignored_note(found)
    assert "sasl.jaas.config's awsDebugCreds (line 4)" in note and "awsMaxRetries" in note


MSK_REFUSALS = {  # id: (file text, fragments of the message)
    "iam-module-with-oauthbearer": (msk_file(MSK_OAUTH_FORM).replace(jaas.OAUTHBEARER_MODULE, jaas.MSK_IAM_MODULE),
                                    ("line 5", "IAMLoginModule does not fit sasl.mechanism OAUTHBEARER")),
    "oauth-module-with-aws-msk-iam": (msk_file().replace(jaas.MSK_IAM_MODULE, jaas.OAUTHBEARER_MODULE),
                                      ("line 4", "OAuthBearerLoginModule does not fit sasl.mechanism AWS_MSK_IAM")),
    "scram-module-with-aws-msk-iam": (MSK_IAM_FORM + f'sasl.jaas.config={SCRAM} required username="u" '
                                                     f'password="{SECRET}";\n', ("does not fit sasl.mechanism AWS_MSK_IAM",)),
    "iam-with-oauth-client-handler": (msk_file().replace(client_config.MSK_IAM_CLIENT_HANDLER,
                                                         client_config.MSK_IAM_OAUTH_HANDLER),
                                      ("line 3", "needs sasl.client.callback.handler.class=")),
    "iam-with-login-handler": (msk_file(extra=f"sasl.login.callback.handler.class={client_config.MSK_IAM_OAUTH_HANDLER}\n"),
                               ("line 5", "sasl.login.callback.handler.class is for OAUTHBEARER")),
    "oauthbearer-form-with-iam-client-handler": (msk_file(MSK_OAUTH_FORM.replace(
        f"client.callback.handler.class={client_config.MSK_IAM_OAUTH_HANDLER}",
        f"client.callback.handler.class={client_config.MSK_IAM_CLIENT_HANDLER}")),
        ("line 4", "IAMClientCallbackHandler is for sasl.mechanism AWS_MSK_IAM")),
    "oauthbearer-form-with-token-endpoint": (msk_file(MSK_OAUTH_FORM, extra="sasl.oauthbearer.token.endpoint.url="
                                                                            "https://idp/token\n"),
                                             ("line 6", "is for OAUTHBEARER with OIDC, not AWS MSK IAM")),
    "oauthbearer-form-with-client-secret": (msk_file(MSK_OAUTH_FORM, f'clientId="c" clientSecret="{SECRET}"'),
                                            ("line 5", "clientId is for OAUTHBEARER with OIDC")),
    "iam-handler-with-plain": ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\n"
                               f"sasl.password={SECRET}\nsasl.login.callback.handler.class="
                               f"{client_config.MSK_IAM_OAUTH_HANDLER}\n", ("IAMOAuthBearerLoginCallbackHandler needs "
                                                                             "sasl.mechanism OAUTHBEARER",)),
    "oidc-with-aws-option": (oauth_file(module_options=f'clientId="m" clientSecret="{SECRET}" awsProfileName="p"'),
                             ("line 5", "awsProfileName is for AWS MSK IAM only")),
    "region-key-without-msk": ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\n"
                               f"sasl.password={SECRET}\naws.region=us-east-1\n", ("line 5", "for AWS MSK IAM only")),
    "client-handler-without-msk": ("security.protocol=SSL\nsasl.client.callback.handler.class=com.example.Handler\n",
                                   ("line 2", "for AWS MSK IAM only")),
    "plaintext": (msk_file().replace("SASL_SSL", "SASL_PLAINTEXT"), ("line 1", "needs security.protocol=SASL_SSL")),
    "no-protocol": (msk_file().replace("security.protocol=SASL_SSL\n", ""), ("needs security.protocol=SASL_SSL",)),
    "region-key-not-a-region": (msk_file(extra=f"aws.region={SECRET}\n"), ("line 5", "must be an AWS region")),
    "profile-and-role": (msk_file(options=f'awsProfileName="p" awsRoleArn="{ROLE}"'), ("line 4", "keep one")),
    "session-name-without-role": (msk_file(options='awsRoleSessionName="ops"'),
                                  ("line 4", "awsRoleSessionName needs awsRoleArn")),
    "role-not-an-arn": (msk_file(options=f'awsRoleArn="{SECRET}"'), ("line 4", "is not an IAM role ARN")),
    "role-session-name-bad": (msk_file(options=f'awsRoleArn="{ROLE}" awsRoleSessionName="a b"'),
                              ("line 4", "2 to 64 letters")),
    "sts-region-bad": (msk_file(options=f'awsRoleArn="{ROLE}" awsStsRegion="global"'), ("line 4", "aws-global")),
    "empty-profile": (msk_file(options='awsProfileName=""'), ("line 4", "is empty")),
    "iam-with-password": (msk_file(extra=f"sasl.password={SECRET}\n"), ("line 4", "both give the credentials")),
    "iam-without-jaas": (MSK_IAM_FORM, ("sasl.mechanism AWS_MSK_IAM needs sasl.jaas.config with IAMLoginModule",)),
    "iam-refresh-factor": (msk_file(extra="sasl.login.refresh.window.factor=0.6\n"),
                           ("line 5", "sasl.login.refresh.window.factor is for OAUTHBEARER with OIDC")),
}


@pytest.mark.parametrize("case_id", list(MSK_REFUSALS))
def test_msk_iam_refusals(tmp_path, case_id):
    text, fragments = MSK_REFUSALS[case_id]
    message = refusal(tmp_path, text)
    assert all(f in message for f in fragments), message


def test_the_msk_iam_files_of_the_docs_are_read_as_they_say(tmp_path):
    """docs/security.md "AWS MSK IAM": each properties file it shows is read, in its form, as AWS MSK IAM."""
    page = (ROOT / "docs" / "security.md").read_text()
    section = page.split("\n## AWS MSK IAM\n", 1)[1].split("\n## ", 1)[0]
    files = [block for block in section.split("```")[1::2] if "software.amazon.msk" in block]
    forms = [config(tmp_path, text.lstrip("\n"), f"{n}.properties").msk_iam.form for n, text in enumerate(files)]
    assert forms == ["AWS_MSK_IAM", "OAUTHBEARER"]


# -- GSSAPI (Kerberos): the Java client's properties, a keytab and principal or the ticket cache --

KERBEROS_HEAD = "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n"


def kerberos_file(options, service="sasl.kerberos.service.name=kafka\n"):
    return KERBEROS_HEAD + service + f"sasl.jaas.config={jaas.KERBEROS_MODULE} required {options};\n"


@pytest.fixture
def keytab(tmp_path):
    """A file that starts as an MIT keytab does (format version 2); its keys are never read here."""
    path = tmp_path / "client.keytab"
    path.write_bytes(b"\x05\x02" + SECRET.encode())
    return str(path)


KERBEROS_CASES = {  # id: (JAAS options with {keytab}, the service name line, expected KerberosLogin fields)
    "keytab": ('useKeyTab=true storeKey=true keyTab="{keytab}" principal="monitor@EXAMPLE.COM"', None,
               {"service_name": "kafka", "principal": "monitor@EXAMPLE.COM", "keytab": "{keytab}", "ticket_cache": None}),
    "keytab-service-in-jaas": ('useKeyTab=true keyTab="{keytab}" principal="m/host@R" serviceName="kafka-prod"', "",
                               {"service_name": "kafka-prod", "principal": "m/host@R"}),
    "ticket-cache": ("useTicketCache=true", None, {"principal": None, "keytab": None, "ticket_cache": None}),
    "ticket-cache-named": ('useTicketCache=true ticketCache="/tmp/krb5cc_ops" principal="ops@R" renewTGT=true', None,
                           {"principal": "ops@R", "ticket_cache": "/tmp/krb5cc_ops"}),
}


@pytest.mark.parametrize("case_id", list(KERBEROS_CASES))
def test_kerberos_files(tmp_path, keytab, case_id):
    options, service, expected = KERBEROS_CASES[case_id]
    text = kerberos_file(options.format(keytab=keytab), *(() if service is None else (service,)))
    found = config(tmp_path, text)
    assert found.settings == {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}
    assert {k: getattr(found.kerberos, k) for k in expected} == {
        k: v.format(keytab=keytab) if isinstance(v, str) else v for k, v in expected.items()}
    assert not found.uses_librdkafka  # the prebuilt wheels have no GSSAPI: kafka-python serves every path
    assert client_config.kafka_python_settings(found)["sasl_kerberos_service_name"] == found.kerberos.service_name


def test_kerberos_principal_is_its_primary():
    assert [client_config.kerberos_user(p) for p in ("ops@R", "kafka/host.example.com@R", "ops")] == \
        ["ops", "kafka", "ops"]


def test_java_kerberos_tuning_keys_are_ignored(tmp_path, keytab):
    found = config(tmp_path, kerberos_file(f'useKeyTab=true keyTab="{keytab}" principal="m@R"')
                   + "sasl.kerberos.min.time.before.relogin=60000\n")
    assert [key for key, _ in found.ignored] == ["sasl.kerberos.min.time.before.relogin"]


KERBEROS_REFUSALS = {  # id: (file text with {keytab}, fragments of the message)
    "no-service-name": (kerberos_file('useKeyTab=true keyTab="{keytab}" principal="m@R"', ""),
                        ("needs sasl.kerberos.service.name",)),
    "service-names-differ": (kerberos_file('useKeyTab=true keyTab="{keytab}" principal="m@R" serviceName="other"'),
                             ("line 3", "differ")),
    "keytab-missing": (kerberos_file('useKeyTab=true keyTab="/nonexistent/k.keytab" principal="m@R"'),
                       ("line 4", "keyTab /nonexistent/k.keytab", "No such file")),
    "keytab-not-a-keytab": (kerberos_file('useKeyTab=true keyTab="/etc/passwd" principal="m@R"'),
                            ("line 4", "is not a Kerberos keytab file")),
    "with-sasl-password": (KERBEROS_HEAD + f"sasl.kerberos.service.name=kafka\nsasl.username=u\nsasl.password={SECRET}\n",
                           ("line 4", "GSSAPI takes no sasl.username or sasl.password")),
    "service-key-with-scram": ("sasl.mechanism=SCRAM-SHA-512\nsasl.username=u\nsasl.password=p\n"
                               "sasl.kerberos.service.name=kafka\n", ("line 4", "GSSAPI only")),
    "module-and-mechanism-differ": (kerberos_file("useTicketCache=true").replace("GSSAPI", "SCRAM-SHA-512"),
                                    ("line 4", "does not fit sasl.mechanism SCRAM-SHA-512")),
}


@pytest.mark.parametrize("case_id", list(KERBEROS_REFUSALS))
def test_kerberos_refusals(tmp_path, keytab, case_id):
    text, fragments = KERBEROS_REFUSALS[case_id]
    message = refusal(tmp_path, text.format(keytab=keytab))
    assert all(f in message for f in fragments), message
