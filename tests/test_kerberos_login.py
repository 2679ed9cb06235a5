"""The Kerberos login of a GSSAPI config (streaming.cluster.kerberos) against a real MIT KDC (tests/kdc.py), no broker:
a keytab's tickets in a cache of the process's own, the ticket cache an operator's kinit filled, and every refusal
said in one line naming the principal, never a key. The secured cluster proves the brokers accept the tickets
(tests/test_secured_cluster.py)."""

import os
import subprocess

import pytest

from streaming.cluster import kerberos
from streaming.vocabulary.client_config import KerberosLogin
from streaming.vocabulary.errors import AuthenticationFailed
from tests.job_process import free_port
from tests.kdc import BROKER_PRINCIPAL, Kdc
from tests.secure_cluster import keytab_keys

BROKER_HOST = "127.0.0.1"  # canonicalized to localhost, the host of the brokers' principal kafka/localhost


@pytest.fixture(scope="module")
def kdc(tmp_path_factory):
    started = Kdc(tmp_path_factory.mktemp("kdc"), free_port()).start()
    started.principal(BROKER_PRINCIPAL)
    yield started
    started.stop()


@pytest.fixture
def realm(kdc, monkeypatch):
    """This process's Kerberos environment pointed at the KDC, and restored after the test."""
    monkeypatch.setenv("KRB5_CONFIG", str(kdc.krb5_conf))
    for name in ("KRB5CCNAME", "KRB5_CLIENT_KTNAME"):
        monkeypatch.delenv(name, raising=False)
    return kdc


def test_keytab_login_puts_tickets_in_a_cache_of_the_process(realm, tmp_path):
    principal, keytab = realm.principal("monitor", tmp_path / "monitor.keytab")
    login = KerberosLogin("kafka", principal, str(keytab))
    assert kerberos.log_in(login, BROKER_HOST) == principal
    assert os.environ["KRB5CCNAME"] == kerberos.cache_name(login) and os.environ["KRB5CCNAME"].startswith("MEMORY:")
    assert os.environ["KRB5_CLIENT_KTNAME"] == str(keytab)
    assert not list(tmp_path.glob("krb5cc*"))  # no ticket written to a file


def test_ticket_cache_login(realm, tmp_path):
    principal, keytab = realm.principal("operator", tmp_path / "operator.keytab")
    cache = tmp_path / "cache"
    subprocess.run(["kinit", "-k", "-t", str(keytab), "-c", f"FILE:{cache}", principal], env=realm.env, check=True)
    assert kerberos.log_in(KerberosLogin("kafka", ticket_cache=f"FILE:{cache}"), BROKER_HOST) == principal
    assert kerberos.log_in(KerberosLogin("kafka", "operator", ticket_cache=f"FILE:{cache}"), BROKER_HOST) == principal
    with pytest.raises(AuthenticationFailed) as other:
        kerberos.log_in(KerberosLogin("kafka", "someone-else", ticket_cache=f"FILE:{cache}"), BROKER_HOST)
    assert "Can't find client principal someone-else@" in str(other.value)


FAILURES = {  # id: (make the login from (kdc, tmp_path), fragments of the one line)
    "old-key": (lambda kdc, tmp: _stale(kdc, tmp), ("Kerberos login as stale@", "failed")),
    "expired": (lambda kdc, tmp: _login(kdc, tmp, "expired", expires="2001-01-01"), ("expired",)),
    "unknown-service": (lambda kdc, tmp: _login(kdc, tmp, "lost", service="not-kafka"),
                        ("service not-kafka", "not found in Kerberos database")),
    "empty-cache": (lambda kdc, tmp: (KerberosLogin("kafka", ticket_cache=f"FILE:{tmp / 'none'}"), ""),
                    ("ticket cache FILE:", "failed")),
}


def _login(kdc, tmp, name, expires=None, service="kafka"):
    principal, keytab = kdc.principal(name, tmp / f"{name}.keytab", expires)
    return KerberosLogin(service, principal, str(keytab)), keytab


def _stale(kdc, tmp):
    login, keytab = _login(kdc, tmp, "stale")
    kdc.new_key("stale")
    return login, keytab


@pytest.mark.parametrize("case_id", list(FAILURES))
def test_refusals_are_one_line_without_a_key(realm, tmp_path, case_id):
    make, fragments = FAILURES[case_id]
    login, keytab = make(realm, tmp_path)
    with pytest.raises(AuthenticationFailed) as refused:
        kerberos.log_in(login, BROKER_HOST)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 500, message
    assert all(f in message for f in fragments), message
    if keytab:
        assert not any(key in message.lower() for key in keytab_keys(keytab, realm.env))
