"""Kerberos tickets for GSSAPI (docs/security.md "GSSAPI (Kerberos)"), for kafka-python, the one client library here
that speaks GSSAPI (the prebuilt confluent-kafka wheels have none).

kafka-python's GSSAPI login asks MIT Kerberos (through the `gssapi` package) for the process's default initiator
credentials: the ticket cache KRB5CCNAME names. So a keytab login puts its tickets in a cache of this process alone,
in memory (`MEMORY:`, never a file), got from the keytab through gssapi's credential store (no `kinit` needed), and
points KRB5CCNAME at it; KRB5_CLIENT_KTNAME names the keytab, so MIT Kerberos gets fresh tickets from it when they
near their end, for as long as the process runs. A ticket-cache login uses the cache as it is (`kinit` keeps it
fresh). One Kerberos login per process: the job's driver, each Spark Python worker that polls and each command are
processes of their own, each logging in from the same file.

The tickets are got before any broker is asked, together with the first broker's service ticket, so a refused
keytab, an expired principal, an empty cache or a service principal the KDC does not know is said in one line
(AuthenticationFailed, exit 3) naming the principal, never a key. krb5.conf is MIT Kerberos' own (KRB5_CONFIG, else
/etc/krb5.conf), as for `kinit`; the JVM's -Djava.security.krb5.conf means the same file to Kafka's tools.
"""

import hashlib
import os

from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import AuthenticationFailed

CACHE_PREFIX = "MEMORY:reassign-monitor-"


def cache_name(login):
    """The in-memory ticket cache of a keytab login in this process: one per principal and keytab."""
    digest = hashlib.sha256(f"{login.principal}\0{login.keytab}".encode()).hexdigest()[:16]
    return f"{CACHE_PREFIX}{digest}"


def _reason(error):
    """What MIT Kerberos said (its minor status: "Decrypt integrity check failed" for a keytab of an old key,
    "Client's entry in database has expired", ...), in one line; never a key (GSS messages carry none)."""
    minor = getattr(error, "minor_code", 0) and error.gen_message()
    text = (minor or str(error)).replace("\n", " ")
    return text.rsplit("Minor (", 1)[-1].split("): ", 1)[-1] if "Minor (" in text else text


def log_in(login, broker_host):
    """Make this process's default Kerberos credentials those of `login` (client_config.KerberosLogin) and ask for the
    service ticket of the broker `broker_host` (its principal `<service name>/<host>`, the host canonicalized as
    krb5.conf says). Returns the client principal's name; raises AuthenticationFailed."""
    import gssapi
    from gssapi.exceptions import GeneralError, GSSError

    store = {}
    if login.keytab is not None:
        store = {"client_keytab": login.keytab, "ccache": cache_name(login)}
        os.environ["KRB5_CLIENT_KTNAME"] = login.keytab
        os.environ["KRB5CCNAME"] = store["ccache"]
    elif login.ticket_cache is not None:
        os.environ["KRB5CCNAME"] = login.ticket_cache
    who = shown(login.principal) if login.principal else "the ticket cache's principal"
    try:
        name = login.principal and gssapi.Name(login.principal, gssapi.NameType.kerberos_principal)
        credentials = gssapi.Credentials(name=name or None, usage="initiate", store=store or None)
        target = gssapi.Name(f"{login.service_name}@{broker_host}", gssapi.NameType.hostbased_service)
        gssapi.SecurityContext(name=target, creds=credentials, usage="initiate").step()
        principal = str(credentials.name)
    except (GSSError, GeneralError) as error:
        source = f"keytab {shown(login.keytab, 200)}" if login.keytab else \
            f"ticket cache {shown(login.ticket_cache or os.environ.get('KRB5CCNAME', 'default'), 200)}"
        raise AuthenticationFailed(f"Kerberos login as {who} from {source} for service {shown(login.service_name)} "
                                   f"at {shown(broker_host)} failed: {shown(_reason(error), 300)}") from None
    return principal
