"""`--command-config FILE`: the Kafka client properties operators already give Kafka's own tools
(`kafka-reassign-partitions.sh --command-config`), turned into the settings of each client library we use.
The one place that reads the file, with the one mapping table (CLIENT_SETTINGS) from what it says to what
kafka-python and librdkafka are given.

Accepted: the Java client's forms (`sasl.jaas.config` with the SCRAM, PLAIN or OAUTHBEARER login module,
`ssl.truststore.*` / `ssl.keystore.*` / `ssl.key.password` stores of type JKS, PKCS12 or PEM,
`ssl.endpoint.identification.algorithm` with Java's meaning) and librdkafka's (`sasl.username`,
`sasl.password`, `ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`). Keys that only tune the
Java client (JAVA_ONLY) are accepted and ignored, and the CLI says so in one note line. Any other key is bad
input, so a typo cannot silently drop a security setting. Values are read as java.util.Properties reads them
(backslash escapes, a trailing backslash continues the line), except that only `=` separates a key from its
value and trailing whitespace is dropped.

Every TLS file is read here, whole, into memory: a file that is not what its key says is bad input (exit 2)
before any request, and the clients never open a file later. librdkafka takes the PEM text itself
(`ssl.ca.pem`, `ssl.certificate.pem`, `ssl.key.pem`); kafka-python takes an SSLContext built from it
(`ssl_context`). Hostname verification is the same in both: on unless the file turns it off.

OAUTHBEARER is read as Kafka's Java client configures its OIDC client-credentials login (docs/security.md
"OAUTHBEARER (OIDC)"): the token endpoint, the client's id, secret and scope, and the CA of an https endpoint, into
one OAuthLogin; streaming.cluster.oauth fetches and refreshes the tokens both client libraries send.

AWS MSK IAM is read in both forms AWS documents (docs/security.md "AWS MSK IAM"): `sasl.mechanism=AWS_MSK_IAM` with
AWS's IAMLoginModule and IAMClientCallbackHandler, and OAUTHBEARER with IAMOAuthBearerLoginCallbackHandler. Both
become one MskIamLogin and `sasl.mechanism=OAUTHBEARER` for the clients: the Python clients speak MSK IAM only
through OAUTHBEARER, which MSK's IAM listeners accept from every client; streaming.cluster.msk_iam signs the tokens.
GSSAPI (Kerberos) is read as Kafka's Java client configures it (docs/security.md "GSSAPI (Kerberos)"):
`sasl.kerberos.service.name` (or the JAAS option `serviceName`) and the Krb5LoginModule's keytab and principal, or
the ticket cache, into one KerberosLogin; streaming.cluster.kerberos gets the tickets. Only kafka-python speaks
GSSAPI here (the prebuilt confluent-kafka wheels have no GSSAPI): `uses_librdkafka` says which library a config
allows.
"""

import os
import re
import ssl
import tempfile
from dataclasses import dataclass, field

from streaming.vocabulary import aws_region, jaas, key_stores
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput, reading_input
from streaming.vocabulary.operator_file import read_text

# The one mapping: a setting handed to the clients -> (kafka-python keyword, librdkafka property). kafka-python's
# TLS settings (None here) go into the one SSLContext of `ssl_context`.
CLIENT_SETTINGS = {
    "security.protocol": ("security_protocol", "security.protocol"),
    "sasl.mechanism": ("sasl_mechanism", "sasl.mechanism"),
    "sasl.username": ("sasl_plain_username", "sasl.username"),
    "sasl.password": ("sasl_plain_password", "sasl.password"),
    "ssl.ca.pem": (None, "ssl.ca.pem"),
    "ssl.certificate.pem": (None, "ssl.certificate.pem"),
    "ssl.key.pem": (None, "ssl.key.pem"),
    "ssl.key.password": (None, "ssl.key.password"),
    "ssl.endpoint.identification.algorithm": (None, "ssl.endpoint.identification.algorithm"),
}

# The operator's keys, by what is done with them.
PLAIN_KEYS = ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password")
# OAUTHBEARER with OIDC, as Kafka's Java client takes it (Kafka's docs, "sasl.oauthbearer.*", "sasl.login.*").
TOKEN_ENDPOINT_KEY = "sasl.oauthbearer.token.endpoint.url"
LOGIN_HANDLER_KEY = "sasl.login.callback.handler.class"
CLIENT_ID_KEY = "sasl.oauthbearer.client.credentials.client.id"  # Kafka 4.1's form of the JAAS option clientId
CLIENT_SECRET_KEY = "sasl.oauthbearer.client.credentials.client.secret"  # ... of clientSecret
SCOPE_KEY = "sasl.oauthbearer.scope"  # ... of scope
URL_ENCODE_KEY = "sasl.oauthbearer.header.urlencode"
SUB_CLAIM_KEY = "sasl.oauthbearer.sub.claim.name"
REFRESH_FACTOR_KEY = "sasl.login.refresh.window.factor"
# GSSAPI, as Kafka's Java client takes it (Kafka's docs, "Authentication using SASL/Kerberos").
KERBEROS_SERVICE_KEY = "sasl.kerberos.service.name"
GSSAPI = "GSSAPI"
LOGIN_TIMEOUT_KEYS = ("sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms")
OAUTH_KEYS = (TOKEN_ENDPOINT_KEY, LOGIN_HANDLER_KEY, CLIENT_ID_KEY, CLIENT_SECRET_KEY, SCOPE_KEY, URL_ENCODE_KEY,
              SUB_CLAIM_KEY, REFRESH_FACTOR_KEY, *LOGIN_TIMEOUT_KEYS)
# The login callback handler that fetches tokens from the endpoint, by its two package names (`secured` the older).
OIDC_LOGIN_HANDLERS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                       "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler")
OAUTHBEARER = "OAUTHBEARER"
# AWS MSK IAM (AWS's aws-msk-iam-auth library, as MSK's developer guide configures it: "Configure clients for IAM
# access control"): its own mechanism with IAMLoginModule, or OAUTHBEARER with its login callback handler.
AWS_MSK_IAM = "AWS_MSK_IAM"
CLIENT_HANDLER_KEY = "sasl.client.callback.handler.class"
MSK_IAM_CLIENT_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
MSK_IAM_OAUTH_HANDLER = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
# The cluster's region when its bootstrap host names do not carry it (ours: Java's clients only warn about it).
AWS_REGION_KEY = "aws.region"
MSK_IAM_KEYS = (CLIENT_HANDLER_KEY, AWS_REGION_KEY)
# The JAAS options AWS's MSKCredentialProvider reads, and those of them that only a role needs.
AWS_JAAS_OPTIONS = (*jaas.AWS_OPTIONS, *jaas.AWS_TUNING_OPTIONS)
ROLE_OPTIONS = (jaas.AWS_SESSION_NAME_OPTION, jaas.AWS_STS_REGION_OPTION, jaas.AWS_EXTERNAL_ID_OPTION)
# The role session name AWS's library gives an assumed role when awsRoleSessionName is not set.
DEFAULT_ROLE_SESSION_NAME = "aws-msk-iam-auth"
ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}", re.ASCII)
ROLE_SESSION_NAME = re.compile(r"[\w+=,.@-]{2,64}", re.ASCII)  # STS AssumeRole's RoleSessionName
# Kafka's defaults and range (SaslConfigs): refresh once this share of a token's lifetime has passed.
DEFAULT_REFRESH_FACTOR, REFRESH_FACTOR_RANGE = 0.8, (0.5, 1.0)
DEFAULT_SUB_CLAIM = "sub"
HOSTNAME_KEY = "ssl.endpoint.identification.algorithm"
PEM_FILE_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password")
JAVA_FORM_KEYS = ("sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
                  "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password")
# Keys that tune only the Java client: accepted, ignored, named in one note. Security settings that restrict
# (ssl.enabled.protocols, ssl.cipher.suites) are not among them: dropping those silently would weaken TLS.
JAVA_ONLY = ("request.timeout.ms", "default.api.timeout.ms", "retries", "retry.backoff.ms", "retry.backoff.max.ms",
             "reconnect.backoff.ms", "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms",
             "socket.connection.setup.timeout.max.ms", "connections.max.idle.ms", "metadata.max.age.ms",
             "send.buffer.bytes", "receive.buffer.bytes", "client.id", "client.dns.lookup", "ssl.protocol",
             "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
             "sasl.login.retry.backoff.ms", "sasl.login.retry.backoff.max.ms", "sasl.login.refresh.window.jitter",
             "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
             "sasl.oauthbearer.scope.claim.name")
JAVA_ONLY += ("sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
              "sasl.kerberos.min.time.before.relogin")
KNOWN_KEYS = (*PLAIN_KEYS, HOSTNAME_KEY, *PEM_FILE_KEYS, *JAVA_FORM_KEYS, *OAUTH_KEYS, *MSK_IAM_KEYS, KERBEROS_SERVICE_KEY,
              *JAVA_ONLY)

# Values that are names, not secrets: checked here so a typo is bad input, not a refused connection.
ALLOWED_VALUES = {
    "security.protocol": ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    "sasl.mechanism": ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", OAUTHBEARER, AWS_MSK_IAM, GSSAPI),
    URL_ENCODE_KEY: ("true", "false"),
}
# The login module each mechanism takes in sasl.jaas.config (SCRAM and PLAIN: jaas.PASSWORD_MODULES).
MECHANISM_MODULES = {OAUTHBEARER: jaas.OAUTHBEARER_MODULE, AWS_MSK_IAM: jaas.MSK_IAM_MODULE, GSSAPI: jaas.KERBEROS_MODULE}
# The first bytes of an MIT keytab file (format versions 1 and 2), as the JDK and MIT Kerberos read it.
KEYTAB_MAGICS = (b"\x05\x01", b"\x05\x02")
# Java's meaning: empty turns hostname verification off, https (its default) on; librdkafka's `none` is off.
HOSTNAME_VERIFICATION = {"": "none", "none": "none", "https": "https"}
DEFAULT_STORE_TYPE = "JKS"  # Java's default for ssl.truststore.type and ssl.keystore.type
# A client config is a handful of lines; a cap keeps a wrong path (a log, /dev/zero) out of memory.
MAX_FILE_BYTES = 1024 * 1024
JAVA_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass(frozen=True)
class OAuthLogin:
    """OAUTHBEARER's client-credentials login: where tokens come from (`token_endpoint`), with which credentials,
    trusting `ca_pem` (None: the system's CA certificates) for an https endpoint; a token is fetched again once
    `refresh_factor` of its lifetime has passed; `sub_claim` names the principal."""
    token_endpoint: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    ca_pem: str | None = field(default=None, repr=False)
    ca_origin: str | None = None
    url_encode: bool = False
    refresh_factor: float = DEFAULT_REFRESH_FACTOR
    sub_claim: str = DEFAULT_SUB_CLAIM
    connect_timeout_s: float | None = None
    read_timeout_s: float | None = None


@dataclass(frozen=True)
class MskIamLogin:
    """AWS MSK IAM's login: where the AWS credentials come from (`profile`, or the role `role_arn` assumed through
    STS, or AWS's default chain when neither is set), the cluster's region as the file gives it (`region`, None:
    from the bootstrap servers or AWS's own settings, streaming.vocabulary.aws_region), the form the file used
    (`form`: AWS_MSK_IAM or OAUTHBEARER), and when a token is signed again (`refresh_factor` of its lifetime)."""
    form: str
    region: str | None = None
    profile: str | None = None
    role_arn: str | None = None
    role_session_name: str = DEFAULT_ROLE_SESSION_NAME
    sts_region: str | None = None  # None: STS's global endpoint
    external_id: str | None = None
    refresh_factor: float = DEFAULT_REFRESH_FACTOR

    @property
    def credentials_source(self):
        """Where the credentials come from, for messages (names, never a key)."""
        if self.profile:
            return f"AWS profile {self.profile}"
        if self.role_arn:
            return f"AWS role {self.role_arn}"
        return "AWS's default credentials (environment, profile, or the host's role)"


@dataclass(frozen=True)
class KerberosLogin:
    """GSSAPI's login: the broker's service name (`<service_name>/<broker host>@REALM` is its principal), and the
    client's `principal` with its `keytab` (a path), or the ticket cache (`ticket_cache`: a path, None for Kerberos'
    default; `principal` None: whichever the cache holds)."""
    service_name: str
    principal: str | None = None
    keytab: str | None = None
    ticket_cache: str | None = None


@dataclass(frozen=True)
class ClientConfig:
    """What a `--command-config` file says: `settings` (keys of CLIENT_SETTINGS), where the trusted
    certificates came from as the operator wrote it (`trust_origin`, for messages), the Java-only keys
    ignored, as (key, line), the token login of OAUTHBEARER (`oauth`) or AWS MSK IAM (`msk_iam`), None for other
    mechanisms, and GSSAPI's (`kerberos`)."""
    settings: dict = field(default_factory=dict)
    trust_origin: str | None = None
    ignored: tuple = ()
    oauth: OAuthLogin | None = None
    msk_iam: MskIamLogin | None = None
    kerberos: KerberosLogin | None = None

    @property
    def uses_librdkafka(self):
        """Whether librdkafka (confluent-kafka) can log in with this config: its prebuilt wheels have no GSSAPI,
        so a GSSAPI config is served by kafka-python alone (docs/security.md "GSSAPI (Kerberos)")."""
        return self.kerberos is None

    @property
    def protocol(self):
        return self.settings.get("security.protocol", "PLAINTEXT")

    @property
    def checks_hostname(self):
        return self.settings.get(HOSTNAME_KEY, "https") == "https"


def _unescaped(text):
    """A value as java.util.Properties reads it: \\t \\n \\r \\f, \\uXXXX, and any other \\x is x."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u":
                digits = text[i + 2:i + 6]
                if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise BadInput("malformed \\uXXXX escape")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(JAVA_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _logical_lines(lines):
    """(line number, text) of each logical line: a line ending in an odd number of backslashes continues on
    the next, whose leading whitespace is skipped (Java's Properties). Comment lines never continue."""
    pending, start = None, 0
    for number, line in enumerate(lines, 1):
        text = line.lstrip() if pending is not None else line
        if pending is None:
            stripped = text.strip()
            if not stripped or stripped[0] in "#!":
                continue
            start = number
        joined = (pending or "") + text
        trailing = len(joined) - len(joined.rstrip("\\"))
        if trailing % 2:
            pending = joined[:-1]
            continue
        pending = None
        yield start, joined
    if pending is not None:
        yield start, pending


def _raw(lines):
    """{key: (value, line)} of known keys; each problem names the key and line, never a value."""
    raw = {}
    for number, line in _logical_lines(lines):
        key, sep, value = line.strip().partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise BadInput(f"line {number}: expected key=value")
        if key not in KNOWN_KEYS:
            raise BadInput(f"line {number}: unsupported key {shown(key)!r} (supported: docs/security.md, "
                           f"--command-config; e.g. {', '.join(KNOWN_KEYS[:6])}, ...)")
        if key in raw:
            raise BadInput(f"line {number}: {key} is set twice")
        try:
            value = _unescaped(value)
        except BadInput as error:
            raise BadInput(f"line {number}: {key}: {error}") from error
        if key in ALLOWED_VALUES and value not in ALLOWED_VALUES[key]:
            raise BadInput(f"line {number}: {key} must be one of {', '.join(ALLOWED_VALUES[key])}")
        raw[key] = (value, number)
    return raw


class _Lines:
    """Values of the raw keys, and problems said at the line of the key they concern."""

    def __init__(self, raw):
        self.raw = raw

    def get(self, key, default=None):
        return self.raw[key][0] if key in self.raw else default

    def __contains__(self, key):
        return key in self.raw

    def refuse(self, key, message):
        raise BadInput(f"line {self.raw[key][1]}: {message}" if key in self.raw else message)

    def checked(self, key, load):
        """load(), any BadInput said at the line of `key`."""
        try:
            return load()
        except BadInput as error:
            self.refuse(key, str(error))


def _sasl(lines):
    """(the SASL settings, the Login of sasl.jaas.config or None)."""
    settings = {k: lines.get(k) for k in ("security.protocol", "sasl.mechanism") if k in lines}
    login = None
    if "sasl.jaas.config" in lines:
        both = [k for k in ("sasl.username", "sasl.password") if k in lines]
        if both:
            lines.refuse("sasl.jaas.config", f"sasl.jaas.config and {' and '.join(both)} both give the credentials: keep one")
        login = lines.checked("sasl.jaas.config", lambda: _jaas(lines.get("sasl.jaas.config")))
        wanted = MECHANISM_MODULES.get(settings.get("sasl.mechanism"))
        if (login.module in MECHANISM_MODULES.values() or wanted is not None) and login.module != wanted:
            lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {login.module.rsplit('.', 1)[-1]} does not fit "
                                             f"sasl.mechanism {settings.get('sasl.mechanism') or '(none)'}")
        if login.module in jaas.PASSWORD_MODULES:
            settings.update({"sasl.username": login.username, "sasl.password": login.password})
    else:
        settings.update({k: lines.get(k) for k in ("sasl.username", "sasl.password") if k in lines})
    if settings.get("security.protocol", "").startswith("SASL_") and "sasl.mechanism" not in settings:
        raise BadInput("security.protocol SASL_* needs sasl.mechanism")
    mechanism = settings.get("sasl.mechanism")
    if mechanism in MECHANISM_MODULES:
        if "sasl.username" in settings or "sasl.password" in settings:
            lines.refuse("sasl.username" if "sasl.username" in lines else "sasl.password",
                         f"sasl.mechanism {mechanism} takes no sasl.username or sasl.password (the credentials go "
                         f"in sasl.jaas.config)")
        if login is None:
            raise BadInput(f"sasl.mechanism {mechanism} needs sasl.jaas.config with "
                           f"{MECHANISM_MODULES[mechanism].rsplit('.', 1)[-1]}")
    elif "sasl.mechanism" in settings and not {"sasl.username", "sasl.password"} <= set(settings):
        raise BadInput("sasl.mechanism needs sasl.jaas.config (or sasl.username and sasl.password)")
    return settings, login


def _is_msk_iam(lines):
    """Whether the file is AWS MSK IAM's, in either form: its mechanism, or OAUTHBEARER with its login handler."""
    return lines.get("sasl.mechanism") == AWS_MSK_IAM or lines.get(LOGIN_HANDLER_KEY) == MSK_IAM_OAUTH_HANDLER


def _msk_iam(lines, login):
    """The MskIamLogin of an AWS MSK IAM config (None for other mechanisms, which may set none of its keys)."""
    if not _is_msk_iam(lines):
        given = [k for k in MSK_IAM_KEYS if k in lines]
        if given:
            lines.refuse(given[0], f"{given[0]} is for AWS MSK IAM only (sasl.mechanism AWS_MSK_IAM, or OAUTHBEARER "
                                   f"with {MSK_IAM_OAUTH_HANDLER.rsplit('.', 1)[-1]})")
        aws = [o for o in login.options if o in AWS_JAAS_OPTIONS] if login is not None else []
        if aws:
            lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {aws[0]} is for AWS MSK IAM only "
                                             f"({LOGIN_HANDLER_KEY}={MSK_IAM_OAUTH_HANDLER})")
        return None
    form = lines.get("sasl.mechanism")
    if lines.get("security.protocol") != "SASL_SSL":
        lines.refuse("security.protocol", "AWS MSK IAM needs security.protocol=SASL_SSL (MSK's IAM listeners speak "
                                          "TLS, and a token is a credential)")
    _msk_iam_handlers(lines, form)
    oidc = [k for k in OAUTH_KEYS if k in lines and k not in (LOGIN_HANDLER_KEY, REFRESH_FACTOR_KEY)]
    if form == AWS_MSK_IAM and REFRESH_FACTOR_KEY in lines:
        oidc.append(REFRESH_FACTOR_KEY)
    if oidc:
        lines.refuse(oidc[0], f"{oidc[0]} is for OAUTHBEARER with OIDC, not AWS MSK IAM")
    oidc_options = [o for o in login.options if o in jaas.OAUTH_OPTIONS]
    if oidc_options:
        lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {oidc_options[0]} is for OAUTHBEARER with OIDC, not "
                                         f"AWS MSK IAM")
    return MskIamLogin(form, _aws_region_given(lines), *_aws_credentials(lines, login.options),
                       _refresh_factor(lines))


def _msk_iam_handlers(lines, form):
    """The callback handlers of AWS MSK IAM's two forms, each with its own mechanism: a mix is refused."""
    if form == AWS_MSK_IAM:
        if LOGIN_HANDLER_KEY in lines:
            lines.refuse(LOGIN_HANDLER_KEY, f"{LOGIN_HANDLER_KEY} is for OAUTHBEARER: sasl.mechanism AWS_MSK_IAM takes "
                                            f"{CLIENT_HANDLER_KEY}={MSK_IAM_CLIENT_HANDLER} alone")
        if lines.get(CLIENT_HANDLER_KEY) != MSK_IAM_CLIENT_HANDLER:
            lines.refuse(CLIENT_HANDLER_KEY, f"sasl.mechanism AWS_MSK_IAM needs {CLIENT_HANDLER_KEY}="
                                             f"{MSK_IAM_CLIENT_HANDLER} (as AWS's library does)")
    elif form != OAUTHBEARER:
        lines.refuse(LOGIN_HANDLER_KEY, f"{MSK_IAM_OAUTH_HANDLER.rsplit('.', 1)[-1]} needs sasl.mechanism OAUTHBEARER")
    elif lines.get(CLIENT_HANDLER_KEY, MSK_IAM_OAUTH_HANDLER) != MSK_IAM_OAUTH_HANDLER:
        lines.refuse(CLIENT_HANDLER_KEY, f"AWS MSK IAM's OAUTHBEARER form takes {CLIENT_HANDLER_KEY}="
                                         f"{MSK_IAM_OAUTH_HANDLER} or none ({MSK_IAM_CLIENT_HANDLER.rsplit('.', 1)[-1]} "
                                         f"is for sasl.mechanism AWS_MSK_IAM)")


def _aws_region_given(lines):
    region = lines.get(AWS_REGION_KEY)
    if region is not None and not aws_region.is_region(region):
        lines.refuse(AWS_REGION_KEY, f"{AWS_REGION_KEY} must be an AWS region, like us-east-1")
    return region


def _aws_credentials(lines, options):
    """(profile, role ARN, role session name, STS region, external id) of the JAAS options."""
    profile, role = options.get(jaas.AWS_PROFILE_OPTION), options.get(jaas.AWS_ROLE_OPTION)
    if profile is not None and role is not None:
        lines.refuse("sasl.jaas.config", f"sasl.jaas.config sets both {jaas.AWS_PROFILE_OPTION} and "
                                         f"{jaas.AWS_ROLE_OPTION}: keep one (AWS's library would use the profile and "
                                         f"assume the role only when the profile fails)")
    if profile is not None and not profile.strip():
        lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {jaas.AWS_PROFILE_OPTION} is empty")
    role_only = [o for o in ROLE_OPTIONS if o in options]
    if role is None and role_only:
        lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {role_only[0]} needs {jaas.AWS_ROLE_OPTION}")
    if role is not None and not ROLE_ARN.fullmatch(role):
        lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {jaas.AWS_ROLE_OPTION} is not an IAM role ARN "
                                         f"(arn:aws:iam::ACCOUNT:role/NAME)")
    session = options.get(jaas.AWS_SESSION_NAME_OPTION, DEFAULT_ROLE_SESSION_NAME)
    if not ROLE_SESSION_NAME.fullmatch(session):
        lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {jaas.AWS_SESSION_NAME_OPTION} must be 2 to 64 "
                                         f"letters, digits or +=,.@_-")
    sts_region = options.get(jaas.AWS_STS_REGION_OPTION)
    if sts_region == aws_region.GLOBAL_STS_REGION:
        sts_region = None
    if sts_region is not None and not aws_region.is_region(sts_region):
        lines.refuse("sasl.jaas.config", f"sasl.jaas.config's {jaas.AWS_STS_REGION_OPTION} must be an AWS region, "
                                         f"like us-east-1, or {aws_region.GLOBAL_STS_REGION}")
    return profile and profile.strip(), role, session, sts_region, options.get(jaas.AWS_EXTERNAL_ID_OPTION)


def _oauth(lines, login):
    """The OAuthLogin of an OAUTHBEARER config with OIDC (None for other mechanisms, which may set none of its
    keys, and for AWS MSK IAM's OAUTHBEARER form, which _msk_iam reads)."""
    if _is_msk_iam(lines):
        return None
    if login is None or login.module != jaas.OAUTHBEARER_MODULE:
        given = [k for k in OAUTH_KEYS if k in lines]
        if given:
            lines.refuse(given[0], f"{given[0]} is for sasl.mechanism OAUTHBEARER only")
        return None
    handler = lines.get(LOGIN_HANDLER_KEY)
    if handler not in OIDC_LOGIN_HANDLERS:
        lines.refuse(LOGIN_HANDLER_KEY, f"OAUTHBEARER needs {LOGIN_HANDLER_KEY} set to Kafka's "
                                        f"OAuthBearerLoginCallbackHandler (the token endpoint's client-credentials "
                                        f"login; without it Kafka's client makes unsecured tokens)")
    endpoint = lines.get(TOKEN_ENDPOINT_KEY)
    if endpoint is None:
        raise BadInput(f"OAUTHBEARER needs {TOKEN_ENDPOINT_KEY}")
    scheme, _, rest = endpoint.partition("://")
    if scheme.lower() not in ("http", "https") or not rest.split("/", 1)[0]:
        lines.refuse(TOKEN_ENDPOINT_KEY, f"{TOKEN_ENDPOINT_KEY} must be an http:// or https:// URL")
    client_id = _one_of(lines, login, "clientId", CLIENT_ID_KEY)
    secret = _one_of(lines, login, "clientSecret", CLIENT_SECRET_KEY)
    given = (("clientId", CLIENT_ID_KEY, client_id), ("clientSecret", CLIENT_SECRET_KEY, secret))
    missing = [(option, key) for option, key, value in given if not (value or "").strip()]
    if missing:
        lines.refuse("sasl.jaas.config", f"OAuthBearerLoginModule needs {' and '.join(o for o, _ in missing)} (or "
                                         f"{' and '.join(k for _, k in missing)})")
    ca_pem, ca_origin = None, None
    if "ssl.truststore.location" in login.options:
        path = login.options["ssl.truststore.location"]
        kind = login.options.get("ssl.truststore.type", DEFAULT_STORE_TYPE).upper()
        if kind not in key_stores.STORE_TYPES:
            lines.refuse("sasl.jaas.config", f"OAuthBearerLoginModule's ssl.truststore.type must be one of "
                                             f"{', '.join(key_stores.STORE_TYPES)}")
        ca_pem = lines.checked("sasl.jaas.config", lambda: key_stores.trusted(
            path, kind, login.options.get("ssl.truststore.password"),
            "OAuthBearerLoginModule's ssl.truststore.location", "its ssl.truststore.password"))
        ca_origin = f"the token endpoint's trust store {path}"
    scope = (_one_of(lines, login, "scope", SCOPE_KEY) or "").strip() or None
    return OAuthLogin(endpoint, client_id.strip(), secret.strip(), scope, ca_pem, ca_origin,
                      lines.get(URL_ENCODE_KEY, "false") == "true", _refresh_factor(lines),
                      lines.get(SUB_CLAIM_KEY, DEFAULT_SUB_CLAIM), *(_timeout_s(lines, k) for k in LOGIN_TIMEOUT_KEYS))


def _kerberos(lines, login):
    """The KerberosLogin of a GSSAPI config (None for other mechanisms, which may not set its key). The keytab must
    be a readable keytab file now (bad input), not a refused login later; its keys are not read here."""
    if login is None or login.module != jaas.KERBEROS_MODULE:
        if KERBEROS_SERVICE_KEY in lines:
            lines.refuse(KERBEROS_SERVICE_KEY, f"{KERBEROS_SERVICE_KEY} is for sasl.mechanism GSSAPI only")
        return None
    options = login.options
    service, in_jaas = lines.get(KERBEROS_SERVICE_KEY, "").strip(), options.get("serviceName", "").strip()
    if service and in_jaas and service != in_jaas:  # Kafka's client refuses the two when they differ, too
        lines.refuse(KERBEROS_SERVICE_KEY, f"{KERBEROS_SERVICE_KEY} and sasl.jaas.config's serviceName differ: keep one")
    if not (service or in_jaas):
        raise BadInput(f"sasl.mechanism GSSAPI needs {KERBEROS_SERVICE_KEY} (the primary of the brokers' Kerberos "
                       f"principal, usually kafka)")
    principal = options.get("principal", "").strip() or None
    if options.get("useKeyTab", "false").lower() == "true":
        keytab = options["keyTab"]
        lines.checked("sasl.jaas.config", lambda: _readable_keytab(keytab))
        return KerberosLogin(service or in_jaas, principal, keytab)
    return KerberosLogin(service or in_jaas, principal, ticket_cache=options.get("ticketCache", "").strip() or None)


def _readable_keytab(path):
    try:
        with open(path, "rb") as handle:
            magic = handle.read(2)
    except OSError as error:
        raise BadInput(f"Krb5LoginModule's keyTab {shown(path, 200)}: {error.strerror or type(error).__name__}"
                       ) from None
    if magic not in KEYTAB_MAGICS:
        raise BadInput(f"Krb5LoginModule's keyTab {shown(path, 200)} is not a Kerberos keytab file")


def _one_of(lines, login, option, key):
    """A credential given as the JAAS option `option` or as the property `key` (Kafka 4.1), not both."""
    if option in login.options and key in lines:
        lines.refuse(key, f"{key} and sasl.jaas.config's {option} both give it: keep one")
    return login.options.get(option, lines.get(key))


def _refresh_factor(lines):
    low, high = REFRESH_FACTOR_RANGE
    try:
        factor = float(lines.get(REFRESH_FACTOR_KEY, DEFAULT_REFRESH_FACTOR))
    except ValueError:
        factor = None
    if factor is None or not low <= factor <= high:
        lines.refuse(REFRESH_FACTOR_KEY, f"{REFRESH_FACTOR_KEY} must be a number from {low} to {high}")
    return factor


def _timeout_s(lines, key):
    if key not in lines:
        return None
    value = lines.get(key)
    if not value.isdigit() or int(value) == 0:
        lines.refuse(key, f"{key} must be a positive number of milliseconds")
    return int(value) / 1000


def _jaas(text):
    try:
        return jaas.parse(text)
    except BadInput as error:
        raise BadInput(f"sasl.jaas.config {error}") from error


def _store_type(lines, key):
    value = lines.get(key, DEFAULT_STORE_TYPE).upper()
    if value not in key_stores.STORE_TYPES:
        lines.refuse(key, f"{key} must be one of {', '.join(key_stores.STORE_TYPES)}")
    return value


def _trust(lines):
    """(PEM text of the trusted certificates or None, where they came from)."""
    if "ssl.ca.location" in lines and "ssl.truststore.location" in lines:
        lines.refuse("ssl.truststore.location", "ssl.truststore.location and ssl.ca.location both name the trusted "
                                                "certificates: keep one")
    if "ssl.truststore.location" in lines:
        path, kind = lines.get("ssl.truststore.location"), _store_type(lines, "ssl.truststore.type")
        pem = lines.checked("ssl.truststore.location",
                            lambda: key_stores.trusted(path, kind, lines.get("ssl.truststore.password")))
        return pem, f"ssl.truststore.location {path}"
    if "ssl.ca.location" in lines:
        path = lines.get("ssl.ca.location")
        pem = lines.checked("ssl.ca.location", lambda: key_stores.trusted(path, "PEM", None, "ssl.ca.location"))
        return pem, f"the CA file {path}"
    return None, None


def _identity(lines):
    """The client's Identity for mutual TLS, or None."""
    if "ssl.keystore.location" in lines and "ssl.certificate.location" in lines:
        lines.refuse("ssl.keystore.location", "ssl.keystore.location and ssl.certificate.location both name the "
                                              "client certificate: keep one")
    key_password = lines.get("ssl.key.password")
    if "ssl.keystore.location" in lines:
        path, kind = lines.get("ssl.keystore.location"), _store_type(lines, "ssl.keystore.type")
        return lines.checked("ssl.keystore.location", lambda: key_stores.identity(
            path, kind, lines.get("ssl.keystore.password"), key_password))
    if "ssl.certificate.location" in lines:
        path, key_path = lines.get("ssl.certificate.location"), lines.get("ssl.key.location")
        return lines.checked("ssl.certificate.location", lambda: key_stores.identity(
            path, "PEM", None, key_password, key_path, "ssl.certificate.location"))
    if "ssl.key.location" in lines:
        lines.refuse("ssl.key.location", "ssl.key.location needs ssl.certificate.location")
    return None


def _hostname_verification(lines):
    value = lines.get(HOSTNAME_KEY)
    if value is None:
        return {}
    if value.lower() not in HOSTNAME_VERIFICATION:
        lines.refuse(HOSTNAME_KEY, f"{HOSTNAME_KEY} must be https (verify the broker's host name) or empty (do not)")
    return {HOSTNAME_KEY: HOSTNAME_VERIFICATION[value.lower()]}


def _parse(lines):
    given = _Lines(_raw(lines))
    sasl, login = _sasl(given)
    oauth = _oauth(given, login)
    msk_iam = _msk_iam(given, login)
    if msk_iam is not None:  # the Python clients speak MSK IAM as OAUTHBEARER, with the tokens msk_iam signs
        sasl["sasl.mechanism"] = OAUTHBEARER
    kerberos = _kerberos(given, login)
    settings = {**sasl, **_hostname_verification(given)}
    ca_pem, origin = _trust(given)
    if ca_pem is not None:
        settings["ssl.ca.pem"] = ca_pem
    identity = _identity(given)
    if identity is not None:
        settings.update({"ssl.certificate.pem": identity.chain, "ssl.key.pem": identity.key,
                         "ssl.key.password": identity.key_password})
    ignored = tuple((k, n) for k, (_, n) in given.raw.items() if k in JAVA_ONLY)
    if login is not None:
        line = given.raw["sasl.jaas.config"][1]
        ignored += tuple((f"sasl.jaas.config's {o}", line) for o in login.options if o in jaas.AWS_TUNING_OPTIONS)
    config = ClientConfig(settings, origin, ignored, oauth, msk_iam, kerberos)
    if identity is not None:  # the key must belong to the certificate: found now, not as a refused handshake
        key = "ssl.keystore.location" if "ssl.keystore.location" in given else "ssl.certificate.location"
        given.checked(key, lambda: _loaded(config))
    return config


def _loaded(config):
    try:
        ssl_context(config)
    except ssl.SSLError as error:
        raise BadInput(f"the client key does not match its certificate ({error.reason or 'unusable'})") from error


def read_config(path, named="--command-config"):
    """The ClientConfig of `path` (an empty one for None: plaintext). Anything wrong with the file, a line,
    or a store it names: BadInput, naming the file as `named` (the flag, or where a fleet file gives it), the key
    and line, never a value. Read once per client."""
    if path is None:
        return ClientConfig()
    with reading_input(f"{named} {shown(path, 200)}"):
        return _parse(read_text(path, MAX_FILE_BYTES).splitlines())


def ignored_note(config):
    """The one note line about ignored Java-only keys, or None."""
    if not config.ignored:
        return None
    keys = ", ".join(f"{key} (line {line})" for key, line in config.ignored)
    return f"--command-config: ignored, as they only tune the Java client: {keys}"


def ssl_context(config):
    """The SSLContext kafka-python (and the connection diagnosis) use, from `config`'s PEM text: TLS 1.2 or
    later, the trusted certificates (the system's without any), hostname verification as configured, and
    the client certificate. The key passes through a file in a private directory (mode 0700) for the
    moment load_cert_chain reads it (Python loads a certificate chain from files only), still encrypted."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = config.checks_hostname
    if "ssl.ca.pem" in config.settings:
        context.load_verify_locations(cadata=config.settings["ssl.ca.pem"])
    else:
        context.load_default_certs()
    if "ssl.certificate.pem" in config.settings:
        with tempfile.TemporaryDirectory(prefix="reassign-monitor-tls-") as private:
            chain = os.path.join(private, "client.pem")
            descriptor = os.open(chain, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(config.settings["ssl.key.pem"] + config.settings["ssl.certificate.pem"])
            context.load_cert_chain(chain, password=config.settings["ssl.key.password"])
    return context


def kafka_python_settings(config):
    settings = {CLIENT_SETTINGS[k][0]: v for k, v in config.settings.items() if CLIENT_SETTINGS[k][0]}
    if config.kerberos is not None:
        settings["sasl_kerberos_service_name"] = config.kerberos.service_name
    if config.protocol in ("SSL", "SASL_SSL"):
        settings["ssl_context"] = ssl_context(config)
    return settings


def confluent_settings(config, bootstrap_servers):
    return {"bootstrap.servers": bootstrap_servers, **{CLIENT_SETTINGS[k][1]: v for k, v in config.settings.items()}}


def principal_of(config):
    """`User:NAME` of the SASL user, or None (plaintext, TLS without SASL, OAUTHBEARER: the broker decides; an
    OAUTHBEARER principal is its token's subject, streaming.cluster.oauth). A Kerberos principal's name is its
    primary (`kerberos_user`)."""
    name = config.settings.get("sasl.username")
    if name is None and config.kerberos is not None and config.kerberos.principal:
        name = kerberos_user(config.kerberos.principal)
    return f"User:{name}" if name else None


def kerberos_user(principal):
    """The user name the brokers' default sasl.kerberos.principal.to.local.rules (DEFAULT) give `principal`
    (`primary[/instance]@REALM`): its primary (Kafka's docs, "Authentication using SASL/Kerberos")."""
    return principal.split("@", 1)[0].split("/", 1)[0]
