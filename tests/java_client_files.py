"""Client properties files in the Java form Kafka's own tools take (sasl.jaas.config, JKS and PKCS12 stores made
by the JDK's keytool), for the principals of tests/secure_cluster.py."""

import subprocess
from pathlib import Path

from streaming.vocabulary import client_config

STORE_PASSWORD = "changeit-store"
KEY_PASSWORD = "changeit-key"
# Operators' files carry Java-only tuning too: accepted, ignored, named in one note.
JAVA_TUNING = "request.timeout.ms=30000\nclient.id=ops-tools\nretries=3\n"


def _run(*argv):
    subprocess.run([str(a) for a in argv], check=True, capture_output=True)


def trust_store(cluster, kind, directory):
    """The cluster's CA in a `kind` (JKS or PKCS12) trust store made by keytool, as operators make one."""
    path = Path(directory) / f"truststore.{kind.lower()}"
    _run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", cluster.dir / "tls" / "ca.pem",
         "-keystore", path, "-storetype", kind, "-storepass", STORE_PASSWORD)
    return path


def key_store(crt, key, kind, directory):
    """A `kind` key store holding the client certificate and key (JKS with a key password of its own)."""
    p12 = Path(directory) / "keystore.p12"
    _run("openssl", "pkcs12", "-export", "-in", crt, "-inkey", key, "-name", "client", "-out", p12,
         "-passout", f"pass:{STORE_PASSWORD}")
    if kind == "PKCS12":
        return p12
    jks = Path(directory) / "keystore.jks"
    _run("keytool", "-importkeystore", "-noprompt", "-srckeystore", p12, "-srcstoretype", "PKCS12", "-srcstorepass",
         STORE_PASSWORD, "-destkeystore", jks, "-deststoretype", "JKS", "-deststorepass", STORE_PASSWORD,
         "-destkeypass", KEY_PASSWORD)
    return jks


def scram_java_form(cluster, librdkafka_form, trust_kind, directory, hostname_line=""):
    """The Java-form file of a SCRAM principal made by SecureCluster.principal (whose file is librdkafka's form)."""
    settings = client_config.read_config(librdkafka_form).settings
    path = Path(directory) / f"{Path(librdkafka_form).stem}-java.properties"
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f"    username=\"{settings['sasl.username']}\" \\\n    password=\"{settings['sasl.password']}\";\n"
        f"ssl.truststore.location={trust_store(cluster, trust_kind, directory)}\nssl.truststore.type={trust_kind}\n"
        f"ssl.truststore.password={STORE_PASSWORD}\n{hostname_line}{JAVA_TUNING}")
    path.chmod(0o600)
    return path


def mtls_java_form(cluster, name, grants, key_kind, trust_kind, directory, hostname_line=""):
    crt, key = cluster.tls_principal(name, grants, directory)
    path = Path(directory) / f"{name}-java.properties"
    key_password = f"ssl.key.password={KEY_PASSWORD}\n" if key_kind == "JKS" else ""
    path.write_text(
        f"security.protocol=SSL\nssl.keystore.location={key_store(crt, key, key_kind, directory)}\n"
        f"ssl.keystore.type={key_kind}\nssl.keystore.password={STORE_PASSWORD}\n{key_password}"
        f"ssl.truststore.location={trust_store(cluster, trust_kind, directory)}\nssl.truststore.type={trust_kind}\n"
        f"ssl.truststore.password={STORE_PASSWORD}\n{hostname_line}{JAVA_TUNING}")
    path.chmod(0o600)
    return path
