"""A secured local cluster for tests (deploy/local-cluster.sh with SECURITY=sasl_ssl): SASL_SSL with
SCRAM-SHA-512, OAUTHBEARER (tokens of tests/oidc_issuer.py) and GSSAPI (the MIT KDC of tests/kdc.py), the issuer and
the KDC started with the cluster and stopped with it, StandardAuthorizer, super user `admin`. Tests make principals of
any mechanism holding exactly a list of streaming.cluster.acls grants; everything targets 127.0.0.1 only."""

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)
from kafka import KafkaAdminClient

from streaming.cluster import oauth
from streaming.vocabulary import client_config, jaas
from streaming.cluster.acls import CLUSTER
from tests.job_process import free_port
from tests.kafka_fixtures import LocalCluster, wait_for
from tests.kdc import BROKER_PRINCIPAL, Kdc
from tests.oidc_issuer import AUDIENCE, OidcIssuer

REAUTH_MS = 60_000  # connections.max.reauth.ms of OAUTHBEARER sessions: no longer than a token (60 s) lives
OPERATIONS = {"Describe": AclOperation.DESCRIBE, "DescribeConfigs": AclOperation.DESCRIBE_CONFIGS,
              "Alter": AclOperation.ALTER, "AlterConfigs": AclOperation.ALTER_CONFIGS, "Create": AclOperation.CREATE,
              "Read": AclOperation.READ, "Write": AclOperation.WRITE}


class SecureCluster(LocalCluster):
    """The cluster of deploy/local-cluster.sh in its secured mode. Every helper of LocalCluster acts as
    the super user; `principal(name, grants)` makes a SCRAM user holding exactly `grants`."""

    def __init__(self, cluster_dir, base_port):
        super().__init__(cluster_dir, base_port)
        self.env["SECURITY"] = "sasl_ssl"
        self.dir = Path(cluster_dir)
        self.admin_config = self.dir / "secrets" / "admin.properties"
        self._passwords = []  # of every principal made here, for the tests that grep outputs for them
        self.issuer = None
        self.kdc = None

    @property
    def passwords(self):
        """Every secret of this session: passwords, OAuth client secrets, every token issued, and the keys of
        every keytab (as klist -K shows them, in hex)."""
        return [*self._passwords, *(self.issuer.issued if self.issuer else ())]

    def up(self):
        self.issuer = OidcIssuer(tempfile.mkdtemp(prefix="oidc-issuer-")).start()
        # The KDC's port: TEST_KDC_PORT, else any free one.
        self.kdc = Kdc(tempfile.mkdtemp(prefix="kdc-"), int(os.environ.get("TEST_KDC_PORT") or free_port())).start()
        _, broker_keytab = self.kdc.principal(BROKER_PRINCIPAL)
        # The clients of this process (the commands run in it) and the processes it starts (the job) use its realm.
        os.environ["KRB5_CONFIG"] = str(self.kdc.krb5_conf)
        self.env.update({"OAUTH_JWKS_URL": self.issuer.jwks_url, "OAUTH_TOKEN_URL": self.issuer.token_url,
                         "OAUTH_ISSUER": self.issuer.issuer, "OAUTH_AUDIENCE": AUDIENCE,
                         # Sessions end with their token (KIP-368): every OAUTHBEARER client re-authenticates.
                         "OAUTH_REAUTH_MS": str(REAUTH_MS),
                         "KERBEROS_KEYTAB": str(broker_keytab), "KERBEROS_PRINCIPAL": BROKER_PRINCIPAL,
                         "KERBEROS_KRB5_CONF": str(self.kdc.krb5_conf)})
        # Fresh certificates, users and ACLs; a cluster left running knows another issuer's JWKS: started afresh.
        self.wipe()
        super().up()
        self._passwords.append(self.password(self.admin_config))
        return self

    def down(self):
        super().down()
        if self.issuer is not None:
            self.issuer.stop()
            shutil.rmtree(self.issuer.dir, ignore_errors=True)
        if self.kdc is not None:
            self.kdc.stop()
            shutil.rmtree(self.kdc.dir, ignore_errors=True)

    @staticmethod
    def password(config_path):
        return client_config.read_config(config_path).settings["sasl.password"]

    def settings(self):
        return client_config.confluent_settings(client_config.read_config(self.admin_config), self.bootstrap)

    def admin(self):
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000,
                                **client_config.kafka_python_settings(client_config.read_config(self.admin_config)))

    def confluent_admin(self):
        return AdminClient({**self.settings(), "log_level": 0})

    def principal(self, name, grants, directory, mechanism="SCRAM-SHA-512"):
        """A principal User:`name` of `mechanism` (SCRAM-SHA-512, OAUTHBEARER or GSSAPI) holding exactly `grants`
        (streaming.cluster.acls.Grant), usable once authentication and every ACL are in effect. Returns the path of
        its client config (in `directory`)."""
        if mechanism == client_config.OAUTHBEARER:
            return self.oauth_principal(name, grants, directory)
        if mechanism == client_config.GSSAPI:
            return self.kerberos_principal(name, grants, directory)
        password = secrets.token_hex(16)
        self._passwords.append(password)
        admin = self.confluent_admin()
        upsert = UserScramCredentialUpsertion(name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                              password.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(15)
        self._grant(admin, name, grants)
        config = Path(directory) / f"{name}.properties"
        config.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username={name}\n"
                          f"sasl.password={password}\nssl.ca.location={self.dir / 'tls' / 'ca.pem'}\n")
        config.chmod(0o600)
        wait_for(lambda: self._authenticates(config), 15, message=f"{name} to authenticate on every broker")
        return config

    def oauth_principal(self, name, grants, directory):
        """An OAuth client `name` of the issuer (its tokens' subject: User:`name`) holding exactly `grants`, with
        the Java client's properties file for it (docs/security.md "OAUTHBEARER (OIDC)"): the token endpoint over
        https, trusting the issuer's CA from the JAAS options."""
        secret = self.issuer.register(name)
        self._passwords.append(secret)
        admin = self.confluent_admin()
        self._grant(admin, name, grants)
        config = Path(directory) / f"{name}.properties"
        config.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
            f"sasl.login.callback.handler.class={client_config.OIDC_LOGIN_HANDLERS[0]}\n"
            f"sasl.oauthbearer.token.endpoint.url={self.issuer.token_url}\n"
            f"sasl.jaas.config={jaas.OAUTHBEARER_MODULE} required \\\n"
            f"    clientId=\"{name}\" clientSecret=\"{secret}\" scope=\"kafka\" \\\n"
            f"    ssl.truststore.location=\"{self.issuer.ca_pem}\" ssl.truststore.type=\"PEM\";\n"
            f"ssl.truststore.location={self.dir / 'tls' / 'ca.pem'}\nssl.truststore.type=PEM\n")
        config.chmod(0o600)
        wait_for(lambda: self._authenticates(config), 15, message=f"{name} to authenticate on every broker")
        return config

    def kerberos_principal(self, name, grants, directory, expires=None):
        """A Kerberos principal `name`@REALM (User:`name`) of the KDC holding exactly `grants`, with its keytab and the
        Java client's properties file for it (docs/security.md "GSSAPI (Kerberos)"); `expires`: a date after which
        the KDC refuses it."""
        principal, keytab = self.kdc.principal(name, Path(directory) / f"{name}.keytab", expires)
        self._passwords.extend(keytab_keys(keytab, self.kdc.env))
        admin = self.confluent_admin()
        self._grant(admin, name, grants)
        config = Path(directory) / f"{name}.properties"
        config.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.kerberos.service.name=kafka\n"
            f"sasl.jaas.config={jaas.KERBEROS_MODULE} required \\\n"
            f"    useKeyTab=true storeKey=true keyTab=\"{keytab}\" principal=\"{principal}\";\n"
            f"ssl.truststore.location={self.dir / 'tls' / 'ca.pem'}\nssl.truststore.type=PEM\n")
        config.chmod(0o600)
        # No authentication to wait for on the brokers: they learn of a Kerberos principal from its tickets.
        return config

    @property
    def mtls_bootstrap(self):
        """The mutual-TLS listener (SSL, ssl.client.auth=required) of deploy/local-cluster.sh: BASE+10+N."""
        return ",".join(f"127.0.0.1:{self.base_port + 10 + n}" for n in (1, 2, 3))

    def tls_principal(self, name, grants, directory):
        """A client certificate with CN `name`, signed by the cluster's CA (the broker maps it to User:`name`),
        whose principal holds exactly `grants`. Returns the paths (certificate, unencrypted key)."""
        directory, tls = Path(directory), self.dir / "tls"
        crt, key, csr = (directory / f"{name}.{ext}" for ext in ("crt", "key", "csr"))
        for argv in (["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", str(key),
                      "-out", str(csr)],
                     ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(tls / "ca.pem"), "-CAkey", str(tls / "ca.key"),
                      "-CAcreateserial", "-days", "2", "-out", str(crt)]):
            subprocess.run(argv, check=True, capture_output=True)
        admin = self.confluent_admin()
        self._grant(admin, name, grants)
        return crt, key

    def _grant(self, admin, name, grants):
        """User:`name` granted exactly `grants`, once the cluster lists them."""
        bindings = [_binding(f"User:{name}", g) for g in grants]
        if bindings:
            for future in admin.create_acls(bindings).values():
                future.result(15)
        wait_for(lambda: self._acl_count(admin, name) >= len(bindings), 15, message=f"the ACLs of {name}")

    @staticmethod
    def _acl_count(admin, name):
        match = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{name}", None,
                                 AclOperation.ANY, AclPermissionType.ANY)
        return len(admin.describe_acls(match).result(15))

    def _authenticates(self, config):
        """Metadata answered by each broker in turn (SCRAM credentials reach each broker on its own)."""
        found = client_config.read_config(config)
        tokens = oauth.confluent_settings(oauth.Tokens(found.oauth, 10)) if found.oauth else {}
        for port in (self.base_port + n for n in (1, 2, 3)):
            client = AdminClient({**client_config.confluent_settings(found, f"127.0.0.1:{port}"), **tokens,
                                  "log_level": 0})
            try:
                client.list_topics(timeout=3)
            except Exception:  # not yet known on that broker
                return False
        return True

    def delete_topic_and_wait(self, name):
        self.delete_topics([name])
        admin = self.confluent_admin()
        wait_for(lambda: name not in admin.list_topics(timeout=10).topics, 30, message=f"topic {name} deleted")


def keytab_keys(keytab, env):
    """The keys in `keytab`, in hex, as `klist -K` shows them: secrets no output may hold."""
    listed = subprocess.run(["klist", "-k", "-K", str(keytab)], env=env, capture_output=True, text=True, check=True)
    return [key.lower() for key in re.findall(r"\(0x([0-9a-fA-F]+)\)", listed.stdout)]


def _binding(principal, grant):
    resource = ResourceType.BROKER if grant.resource == CLUSTER else ResourceType.TOPIC
    return AclBinding(resource, grant.name, ResourcePatternType.LITERAL, principal, "*",
                      OPERATIONS[grant.operation], AclPermissionType.ALLOW)


def topic_bytes(cluster, topic, timeout_s=20):
    """Every key and value in `topic` (read as the super user), as one bytes blob for grepping."""
    from tests.job_process import read_raw

    return b"\n".join(key + b"=" + value for key, value in read_raw(cluster.settings(), topic, timeout_s))
