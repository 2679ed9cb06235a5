"""Why a connection to the cluster failed, said in one line.

kafka-python reports a wrong password, a wrong CA, a wrong SASL mechanism and plaintext spoken to a TLS
listener all alike: a bootstrap KafkaTimeoutError once the whole timeout has passed. This
module asks the questions one at a time, each bounded by what is left of `timeout_s`:

1. TCP: does any bootstrap address accept a connection?            no  -> Unreachable
2. TLS: with security.protocol SSL/SASL_SSL, does the handshake     no  -> TlsFailed (names the trust
   succeed with the clients' own SSLContext? Without TLS                   store or the CA file)
   configured, does the port expect TLS (a handshake succeeds)?     yes -> TlsFailed
3. SASL: does the broker accept the credentials? Asked through      no  -> AuthenticationFailed (names
   librdkafka, which reports the broker's authentication error             the principal and mechanism)
   at once instead of timing out. GSSAPI, which librdkafka cannot speak here, is not asked again: its
   tickets, the broker's service ticket included, were got before the first bootstrap
   (streaming.cluster.kerberos), which said any refusal by the KDC.
Nothing found: Unreachable, saying every step succeeded.

Only the user name, mechanism, protocol and file paths of the command config are ever named; the
password is never put in a message.
"""

import socket
import ssl
import time

from streaming.cluster import oauth
from streaming.cluster.token_source import token_source
from streaming.vocabulary import client_config
from streaming.vocabulary.errors import AUTHENTICATION, TLS, AuthenticationFailed, TlsFailed, Unreachable, brief, kind_of

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
# Alerts a broker sends about the client's certificate (Java sends bad_certificate for a missing one).
CLIENT_CERTIFICATE_ALERTS = ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "CERTIFICATE_UNKNOWN", "ALERT_UNKNOWN_CA")
ALERT_WAIT_S = 0.5  # how long a finished handshake waits for the broker's refusal of the client's certificate


def diagnose(bootstrap, config, timeout_s):
    """The ClusterError (Unreachable, TlsFailed or AuthenticationFailed) that says why connecting to
    `bootstrap` ("host:port,...") with the `--command-config` ClientConfig `config` (empty: plaintext)
    fails. Returns within `timeout_s` (plus one socket timeout at most); never raises for a cluster problem."""
    deadline = time.monotonic() + timeout_s
    protocol = config.protocol
    addresses = [_address(a) for a in bootstrap.split(",") if a.strip()]

    reachable, refusals = None, []
    for address in addresses:
        try:
            socket.create_connection(address, timeout=_left(deadline)).close()
            reachable = address
            break
        except OSError as error:
            refusals.append(f"{_text(address)}: {error.strerror or error}")
    if reachable is None:
        return Unreachable(f"connecting to {bootstrap}: cluster unreachable: no broker accepted a connection "
                           f"({'; '.join(refusals)})")

    problem = _tls_problem(reachable, config, protocol, deadline)
    if problem is None and protocol in SASL_PROTOCOLS and config.uses_librdkafka:
        problem = _sasl_problem(bootstrap, config, deadline)
    return problem or Unreachable(
        f"connecting to {bootstrap}: no usable answer within the timeout, although {_transport(protocol)}"
        f"{' and authentication' if protocol in SASL_PROTOCOLS else ''} succeeded on a second attempt (the cluster may "
        f"be overloaded)")


def _transport(protocol):
    """What a connection that got this far passed before authentication: "TCP", or "TCP, TLS"."""
    return "TCP, TLS" if protocol in TLS_PROTOCOLS else "TCP"


def _address(text):
    host, _, port = text.strip().rpartition(":")
    return host.strip("[]"), int(port)


def _text(address):
    return f"{address[0]}:{address[1]}"


def _left(deadline):
    return max(0.2, deadline - time.monotonic())


def _handshake(address, context, server_hostname, deadline):
    with socket.create_connection(address, timeout=_left(deadline)) as raw:
        with context.wrap_socket(raw, server_hostname=server_hostname) as tls:
            # TLS 1.3 ends the client's handshake before the broker has checked the client's certificate: a
            # refusal (no or an untrusted certificate on a listener requiring one) comes as the first read's
            # alert. A broker that accepted sends nothing unasked: the read times out.
            tls.settimeout(min(ALERT_WAIT_S, _left(deadline)))
            try:
                tls.recv(1)
            except TimeoutError:
                pass


def _tls_problem(address, config, protocol, deadline):
    if protocol not in TLS_PROTOCOLS:
        probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        probe.check_hostname, probe.verify_mode = False, ssl.CERT_NONE
        try:
            _handshake(address, probe, None, deadline)
        except (OSError, ssl.SSLError):
            return None  # the port does not speak TLS, as configured
        return TlsFailed(f"{_text(address)} expects TLS but security.protocol is {protocol} "
                         f"(use SSL or SASL_SSL with a trust store)")
    context = client_config.ssl_context(config)  # what the clients use; read and checked with the file
    trusted = config.trust_origin or "the system's CA certificates (no trust store or ssl.ca.location set)"
    try:
        _handshake(address, context, address[0], deadline)
    except ssl.SSLCertVerificationError as error:
        return TlsFailed(f"TLS handshake with {_text(address)} failed: its certificate is not trusted by {trusted} "
                         f"({error.verify_message})")
    except ssl.SSLError as error:
        if any(alert in str(error.reason) for alert in CLIENT_CERTIFICATE_ALERTS):
            return TlsFailed(f"TLS handshake with {_text(address)} failed: the broker requires a client certificate "
                             f"it trusts (mutual TLS: ssl.keystore.location, or ssl.certificate.location and "
                             f"ssl.key.location) ({error.reason})")
        return TlsFailed(f"TLS handshake with {_text(address)} failed: {error.reason or error} "
                         f"(does this port speak TLS? trusting {trusted})")
    except OSError as error:
        return TlsFailed(f"TLS handshake with {_text(address)} failed: the broker closed the connection "
                         f"({error.strerror or type(error).__name__}; does this port speak TLS?)")
    return None


def _sasl_problem(bootstrap, config, deadline):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    who = (f"client {config.oauth.client_id}" if config.oauth
           else f"the AWS identity of {config.msk_iam.credentials_source}" if config.msk_iam
           else f"user {config.settings.get('sasl.username', '(no user)')}")
    mechanism = "AWS MSK IAM (as OAUTHBEARER)" if config.msk_iam else config.settings.get('sasl.mechanism', 'GSSAPI')
    principal = f"{who} with {mechanism}"
    reported = []
    tokens = token_source(config, bootstrap, _left(deadline))
    tokens = {} if tokens is None else oauth.confluent_settings(tokens)
    settings = {**client_config.confluent_settings(config, bootstrap), **tokens, "log_level": 0,
                "error_cb": reported.append}
    try:
        client = AdminClient(settings)
    except (ValueError, KafkaException) as error:  # librdkafka refuses the configuration, e.g. an unknown mechanism
        return AuthenticationFailed(f"authentication as {principal} impossible: {error}")
    # error_cb runs only inside poll(): ask in short rounds and serve callbacks between them.
    while time.monotonic() < deadline:
        try:
            client.list_topics(timeout=min(0.5, _left(deadline)))
            return None  # Metadata answered: authenticated
        except KafkaException:
            pass
        client.poll(0)
        for error in reported:
            kind = kind_of(error)
            if kind == AUTHENTICATION:
                return AuthenticationFailed(f"authentication as {principal} refused by {bootstrap}: {brief(error, 400)}")
            if kind == TLS:
                return TlsFailed(f"TLS handshake with {bootstrap} failed: {brief(error, 400)}")
    # No verdict before the deadline is not a success: said as such, never as an authentication that succeeded.
    return Unreachable(f"connecting to {bootstrap}: no usable answer within the timeout: {_transport(config.protocol)} "
                       f"succeeded, authentication as {principal} had no verdict before it (the cluster may be "
                       f"overloaded; a longer --timeout gives it more time)")
