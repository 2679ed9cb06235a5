"""OAUTHBEARER tokens from an OIDC token endpoint (the client-credentials grant, as Kafka's Java client asks for them:
docs/security.md "OAUTHBEARER (OIDC)"), for both client libraries of the door: kafka-python asks a TokenProvider,
librdkafka an `oauth_cb`. One Tokens per door serves both, so each refresh is one request to the endpoint.

A token is fetched when first asked for and again once `refresh_factor` of its lifetime (from its `iat`, or from
when it was fetched, to its `exp`) has passed: a connection made or re-authenticated (KIP-368: the broker's
`connections.max.reauth.ms` ends a session when its token expires) after that point sends a fresh one. The token is
a secret like a password: it is never logged or put in a message; only its subject (the principal) is named.
"""

import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from streaming.vocabulary.errors import AuthenticationFailed, TlsFailed, Unreachable
from streaming.vocabulary.echo import shown

MAX_RESPONSE_BYTES = 1024 * 1024  # a token response is a few KB; a cap keeps a wrong URL's answer out of memory


@dataclass(frozen=True)
class Token:
    value: str
    principal: str
    issued_at: float  # Unix seconds
    expires_at: float


def refresh_due(token, now, factor):
    """Whether `token` is due for a fresh one at `now`: once `factor` of its lifetime has passed (Kafka's
    sasl.login.refresh.window.factor), or it expired."""
    return now >= token.issued_at + factor * (token.expires_at - token.issued_at)


def _claims(value):
    """The claims of a JWT, unverified: the client only reads its lifetime and subject; the broker verifies it."""
    try:
        payload = value.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError) as error:
        raise AuthenticationFailed("the token endpoint answered a token that is not a JWT") from error


def token_of(body, fetched_at, sub_claim):
    """The Token in a token endpoint's JSON answer `body` (its `access_token`, a JWT with `exp`)."""
    try:
        value = json.loads(body)["access_token"]
    except (ValueError, KeyError, TypeError) as error:
        raise AuthenticationFailed("the token endpoint's answer holds no access_token") from error
    claims = _claims(value)
    if not isinstance(claims, dict) or not isinstance(claims.get("exp"), (int, float)):
        raise AuthenticationFailed("the token endpoint answered a token without an expiry (exp claim)")
    principal = claims.get(sub_claim)
    if not isinstance(principal, str) or not principal:
        raise AuthenticationFailed(f"the token endpoint answered a token without a {sub_claim} claim")
    issued = claims.get("iat") if isinstance(claims.get("iat"), (int, float)) else fetched_at
    return Token(value, principal, float(issued), float(claims["exp"]))


def request_of(login):
    """(headers, body) of the client-credentials request, as Kafka's ClientCredentialsRequestFormatter makes it."""
    client_id, secret, scope = login.client_id, login.client_secret, login.scope
    if login.url_encode:
        client_id, secret = urllib.parse.quote_plus(client_id), urllib.parse.quote_plus(secret)
        scope = scope and urllib.parse.quote_plus(scope)
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    headers = {"Accept": "application/json", "Authorization": f"Basic {basic}", "Cache-Control": "no-cache",
               "Content-Type": "application/x-www-form-urlencoded"}
    return headers, "grant_type=client_credentials" + (f"&scope={scope}" if scope else "")


class Tokens:
    """The current token of one OAuthLogin, fetched within `timeout_s` when due (`clock`: Unix seconds)."""

    def __init__(self, login, timeout_s, clock=time.time):
        self._login = login
        self._timeout_s = timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._token = None

    def current(self):
        """A token not due for refresh, fetched now if the last one is. Raises AuthenticationFailed (refused
        credentials, an unusable answer), TlsFailed or Unreachable (the endpoint), each in one line."""
        with self._lock:
            if self._token is None or refresh_due(self._token, self._clock(), self._login.refresh_factor):
                self._token = self._fetch()
            return self._token

    def principal(self):
        """`User:SUBJECT` of the token in hand, or None before the first."""
        return self._token and f"User:{self._token.principal}"

    def _context(self):
        context = ssl.create_default_context(cadata=self._login.ca_pem) if self._login.ca_pem \
            else ssl.create_default_context()
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def _fetch(self):
        login, url = self._login, self._login.token_endpoint
        where = f"token endpoint {shown(url, 200)}"
        headers, body = request_of(login)
        request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
        timeout = min(t for t in (self._timeout_s, login.connect_timeout_s, login.read_timeout_s) if t)
        try:
            context = self._context() if url.lower().startswith("https") else None
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                answer = response.read(MAX_RESPONSE_BYTES)
        except urllib.error.HTTPError as error:
            raise AuthenticationFailed(f"{where} refused the client credentials of client {shown(login.client_id)} "
                                       f"(HTTP {error.code}{_oauth_error(error)})") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)  # urllib wraps what the connection met
            if isinstance(reason, ssl.SSLCertVerificationError):
                trusted = login.ca_origin or ("the system's CA certificates (no ssl.truststore.location in "
                                              "sasl.jaas.config)")
                raise TlsFailed(f"TLS handshake with the {where} failed: its certificate is not trusted by {trusted} "
                                f"({reason.verify_message})") from None
            raise Unreachable(f"{where} unreachable: {getattr(reason, 'strerror', None) or type(reason).__name__}"
                              ) from None
        return token_of(answer, self._clock(), login.sub_claim)


def _oauth_error(error):
    """`: error` of an OAuth error answer (RFC 6749 5.2: its `error` code is no secret), or nothing."""
    try:
        code = json.loads(error.read(4096)).get("error")
    except (ValueError, AttributeError, OSError):
        return ""
    return f": {shown(code, 60)}" if isinstance(code, str) else ""


def kafka_python_settings(tokens):
    """kafka-python's `sasl_oauth_token_provider`, asking `tokens` at each authentication (and re-authentication)."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        def token(self):
            return tokens.current().value
    return {"sasl_oauth_token_provider": Provider()}


def confluent_settings(tokens):
    """librdkafka's `oauth_cb`: called when a client is made and again at 80 % of the token's lifetime, which it is
    told (the expiry), together with the principal."""
    def oauth_cb(_config):
        token = tokens.current()
        return token.value, token.expires_at, token.principal
    return {"oauth_cb": oauth_cb}
