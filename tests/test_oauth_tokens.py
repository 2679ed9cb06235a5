"""OAUTHBEARER tokens (streaming.cluster.oauth): when one is due for refresh, what is read from a token endpoint's
answer, the request as Kafka's Java client makes it, and the token source against a real token endpoint over https
(tests/oidc_issuer.py) with the clock as an argument. The brokers' side is proven on the secured cluster
(tests/test_secured_cluster.py)."""

import base64
import json

import pytest

from streaming.cluster import oauth
from streaming.vocabulary.client_config import OAuthLogin
from streaming.vocabulary.errors import AuthenticationFailed, TlsFailed, Unreachable
from tests.job_process import free_port
from tests.oidc_issuer import OidcIssuer


def _token(issued, expires):
    return oauth.Token("t", "p", issued, expires)


REFRESH_CASES = {  # id: (issued, expires, now, factor, due)
    "fresh": (1000, 1060, 1000, 0.8, False),
    "just-before-80-percent": (1000, 1060, 1047.9, 0.8, False),
    "at-80-percent": (1000, 1060, 1048, 0.8, True),
    "expired": (1000, 1060, 1100, 0.8, True),
    "factor-one-at-expiry": (1000, 1060, 1060, 1.0, True),
    "factor-half": (1000, 1060, 1030, 0.5, True),
}


@pytest.mark.parametrize("case_id", list(REFRESH_CASES))
def test_refresh_due(case_id):
    issued, expires, now, factor, due = REFRESH_CASES[case_id]
    assert oauth.refresh_due(_token(issued, expires), now, factor) is due


def _jwt(claims):
    part = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"e30.{part}.c2ln"


ANSWERS = {  # id: (answer body, sub claim, Token fields or the fragment of the refusal)
    "jwt": (json.dumps({"access_token": _jwt({"sub": "m", "iat": 10, "exp": 70})}), "sub", ("m", 10.0, 70.0)),
    "no-iat": (json.dumps({"access_token": _jwt({"sub": "m", "exp": 70})}), "sub", ("m", 5.0, 70.0)),
    "other-sub-claim": (json.dumps({"access_token": _jwt({"client_id": "c", "exp": 70})}), "client_id", ("c", 5.0, 70.0)),
    "no-exp": (json.dumps({"access_token": _jwt({"sub": "m"})}), "sub", "without an expiry"),
    "no-sub": (json.dumps({"access_token": _jwt({"exp": 70})}), "sub", "without a sub claim"),
    "opaque": (json.dumps({"access_token": "abc"}), "sub", "not a JWT"),
    "no-token": (json.dumps({"error": "x"}), "sub", "no access_token"),
    "not-json": ("<html>", "sub", "no access_token"),
}


@pytest.mark.parametrize("case_id", list(ANSWERS))
def test_token_of_an_answer(case_id):
    body, claim, expected = ANSWERS[case_id]
    if isinstance(expected, tuple):
        token = oauth.token_of(body, 5.0, claim)
        assert (token.principal, token.issued_at, token.expires_at) == expected
    else:
        with pytest.raises(AuthenticationFailed, match=expected):
            oauth.token_of(body, 5.0, claim)


def test_request_as_kafkas_client_credentials_formatter():
    login = OAuthLogin("https://idp/token", "my client", "s:e/cret", "kafka admin")
    headers, body = oauth.request_of(login)
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"my client:s:e/cret").decode()
    assert body == "grant_type=client_credentials&scope=kafka admin"
    headers, body = oauth.request_of(OAuthLogin("https://idp/token", "my client", "s:e/cret", None, url_encode=True))
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"my+client:s%3Ae%2Fcret").decode()
    assert body == "grant_type=client_credentials"


@pytest.fixture
def issuer(tmp_path):
    started = OidcIssuer(tmp_path / "issuer", lifetime_s=60).start()
    yield started
    started.stop()


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def test_a_token_is_kept_until_due_then_fetched_again(issuer):
    secret = issuer.register("monitor")
    login = OAuthLogin(issuer.token_url, "monitor", secret, "kafka", issuer.ca_pem.read_text(), "the issuer's CA")
    first = oauth.Tokens(login, 5).current()
    clock = Clock(first.issued_at)
    tokens = oauth.Tokens(login, 5, clock)
    token = tokens.current()
    assert token.principal == "monitor" and token.expires_at - token.issued_at == 60
    assert tokens.principal() == "User:monitor"
    clock.now = token.issued_at + 47
    assert tokens.current() is token and issuer.requests == 2
    clock.now = token.issued_at + 48  # 80 % of its lifetime: a fresh one
    assert tokens.current() is not token and issuer.requests == 3


FAILURES = {  # id: (change of the login, error class, fragment)
    "wrong-secret": (lambda login, issuer: login.__class__(login.token_endpoint, "monitor", "wrong", None, login.ca_pem),
                     AuthenticationFailed, "HTTP 401: invalid_client"),
    "untrusted": (lambda login, issuer: login.__class__(login.token_endpoint, "monitor", login.client_secret, None, None,
                                                        None), TlsFailed, "system's CA certificates"),
    "unreachable": (lambda login, issuer: login.__class__(f"https://127.0.0.1:{free_port()}/token", "monitor",
                                                          login.client_secret, None, login.ca_pem), Unreachable,
                    "unreachable"),
}


@pytest.mark.parametrize("case_id", list(FAILURES))
def test_token_endpoint_failures_are_named_without_the_secret(issuer, case_id):
    change, error, fragment = FAILURES[case_id]
    secret = issuer.register("monitor")
    login = change(OAuthLogin(issuer.token_url, "monitor", secret, None, issuer.ca_pem.read_text()), issuer)
    with pytest.raises(error) as raised:
        oauth.Tokens(login, 5).current()
    assert fragment in str(raised.value) and secret not in str(raised.value) and "\n" not in str(raised.value)
