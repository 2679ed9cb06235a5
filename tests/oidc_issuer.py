"""An OIDC token issuer for the secured test cluster, on 127.0.0.1 free ports: a JWKS over http (what the brokers'
OAuthBearerValidatorCallbackHandler verifies tokens against) and a client-credentials token endpoint over https with
a certificate of its own CA (what the clients ask, trusting `ca_pem`). Tokens are RS256 JWTs (pyjwt, cryptography)
for registered clients: `sub` = the client id (the principal User:<client id>), `aud` AUDIENCE, `iss` the issuer
URL, living `lifetime_s`. Every token issued is kept in `issued`: a token is a secret the tests grep outputs for."""

import base64
import datetime
import ipaddress
import json
import secrets
import ssl
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

AUDIENCE = "kafka-reassign-monitor-tests"
KEY_ID = "test-key-1"
TOKEN_LIFETIME_S = 60


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _certificate(subject_key, subject, issuer_key, issuer, ca, sans=()):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
               .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _b64(number):
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class OidcIssuer:
    def __init__(self, directory, lifetime_s=TOKEN_LIFETIME_S):
        self.dir = Path(directory)
        self.lifetime_s = lifetime_s
        self.clients = {}  # client id -> secret
        self.issued = []  # every access token handed out
        self.requests = 0  # token requests answered (any outcome)
        self._signing_key = _key()
        self._servers = []

    @property
    def jwks_url(self):
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}/jwks"

    @property
    def token_url(self):
        return f"https://127.0.0.1:{self._servers[1].server_address[1]}/token"

    @property
    def issuer(self):
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def ca_pem(self):
        return self.dir / "oidc-ca.pem"

    def register(self, client_id):
        """A client of the token endpoint; returns its secret."""
        self.clients[client_id] = secrets.token_hex(16)
        return self.clients[client_id]

    def issued_to(self, client_id):
        """How many tokens `client_id` was handed (their `sub`)."""
        return sum(jwt.decode(token, options={"verify_signature": False})["sub"] == client_id for token in self.issued)

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        ca_key, server_key = _key(), _key()
        ca = _certificate(ca_key, "test OIDC CA", ca_key, "test OIDC CA", ca=True)
        server = _certificate(server_key, "127.0.0.1", ca_key, "test OIDC CA", ca=False,
                              sans=(x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")))
        self.ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        chain = self.dir / "oidc-server.pem"
        chain.write_bytes(server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption())
                          + server.public_bytes(serialization.Encoding.PEM))
        chain.chmod(0o600)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(chain)
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):  # quiet: a test's output would show every request
                pass

            def do_GET(self):
                if self.path != "/jwks":
                    return self._answer(404, {"error": "not_found"})
                return self._answer(200, issuer.jwks())

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(part.split("=", 1) for part in self.rfile.read(length).decode().split("&") if "=" in part)
                issuer.requests += 1
                if self.path != "/token" or form.get("grant_type") != "client_credentials":
                    return self._answer(400, {"error": "unsupported_grant_type"})
                client = issuer.authenticated(self.headers.get("Authorization", ""))
                if client is None:
                    return self._answer(401, {"error": "invalid_client"})
                return self._answer(200, issuer.token_answer(client, form.get("scope")))

            def _answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        jwks = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        tokens = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        tokens.socket = context.wrap_socket(tokens.socket, server_side=True)
        self._servers = [jwks, tokens]
        for server in self._servers:
            threading.Thread(target=server.serve_forever, name="test-oidc-issuer", daemon=True).start()
        return self

    def stop(self):
        for server in self._servers:
            server.shutdown()
            server.server_close()

    def jwks(self):
        numbers = self._signing_key.public_key().public_numbers()
        return {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KEY_ID, "n": _b64(numbers.n),
                          "e": _b64(numbers.e)}]}

    def authenticated(self, header):
        """The client id of a valid `Authorization: Basic` header, or None."""
        try:
            client, _, secret = base64.b64decode(header.removeprefix("Basic ")).decode().partition(":")
        except ValueError:
            return None
        return client if client in self.clients and secrets.compare_digest(self.clients[client], secret) else None

    def token_answer(self, client, scope):
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": AUDIENCE, "sub": client, "iat": now, "exp": now + self.lifetime_s,
                  "jti": uuid.uuid4().hex, "scope": scope or ""}
        token = jwt.encode(claims, self._signing_key, algorithm="RS256", headers={"kid": KEY_ID})
        self.issued.append(token)
        return {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime_s}
