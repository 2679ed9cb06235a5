"""`sasl.jaas.config`, read as Kafka's Java client reads it (org.apache.kafka.common.security.JaasConfig):
`LoginModuleClass controlFlag key=value ... ;`, tokenized as java.io.StreamTokenizer does with Kafka's
settings, so a value the Java tools accept gives the same user name and password here.

What StreamTokenizer does that matters for credentials:
- a value is a quoted string (`"..."` or `'...'`) or a word (starting with a letter, `_`, `$` or a
  character from U+00A0 up, going on over those, digits, `.` and `-`); a bare number (`password=123`) or
  any other character is not a value;
- inside quotes, `\\n \\t \\r \\b \\f \\a \\v` and octal `\\ddd` are escapes and any other `\\x` is `x`;
  a quoted string also ends at a line break or at the end of the text;
- `/* */` is a comment, and `/` (so `//` too) comments out the rest of the line; whitespace (any
  character up to U+0020) separates tokens.

The SCRAM and PLAIN login modules carry a user name and a password; the OAUTHBEARER login module the client
credentials of an OIDC token endpoint (`clientId`, `clientSecret`, `scope`) and, for an https endpoint, the
trust store of its CA as `ssl.truststore.*` options (Kafka's JaasOptionsUtils reads them there), or, in AWS MSK
IAM's OAUTHBEARER form, the AWS options of AWS's IAMLoginModule (`awsProfileName`, `awsRoleArn`, ...: AWS's
aws-msk-iam-auth library reads them from either module). Which of the two an OAUTHBEARER module is, is the login
callback handler's to say (streaming.vocabulary.client_config). The Kerberos login module (GSSAPI) takes a keytab
and principal, or the ticket cache (the options of the JDK's Krb5LoginModule that a client logging in without a
prompt uses). Messages name option keys and the module class, never a value: a value may be a password.
"""

from dataclasses import dataclass

from streaming.vocabulary.errors import BadInput

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
MSK_IAM_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"  # AWS's aws-msk-iam-auth, mechanism AWS_MSK_IAM
KERBEROS_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
PASSWORD_MODULES = (SCRAM_MODULE, PLAIN_MODULE)
SUPPORTED_MODULES = (*PASSWORD_MODULES, OAUTHBEARER_MODULE, MSK_IAM_MODULE, KERBEROS_MODULE)
PASSWORD_OPTIONS = ("username", "password", "tokenauth")  # what ScramLoginModule and PlainLoginModule read
# What OAuthBearerLoginModule's client-credentials login reads (Kafka's docs, "OAUTHBEARER": clientId, clientSecret,
# scope; the token endpoint's trust store as JAAS options).
OAUTH_TRUST_OPTIONS = ("ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password")
OAUTH_OPTIONS = ("clientId", "clientSecret", "scope", *OAUTH_TRUST_OPTIONS)
# What AWS's MSKCredentialProvider (in AWS's aws-msk-iam-auth jar) reads from the login module's options:
# where the AWS credentials come from. AWS_TUNING_OPTIONS only tune the Java library: accepted, ignored.
AWS_PROFILE_OPTION, AWS_ROLE_OPTION = "awsProfileName", "awsRoleArn"
AWS_SESSION_NAME_OPTION, AWS_STS_REGION_OPTION, AWS_EXTERNAL_ID_OPTION = \
    "awsRoleSessionName", "awsStsRegion", "awsRoleExternalId"
AWS_OPTIONS = (AWS_PROFILE_OPTION, AWS_ROLE_OPTION, AWS_SESSION_NAME_OPTION, AWS_STS_REGION_OPTION,
               AWS_EXTERNAL_ID_OPTION)
AWS_TUNING_OPTIONS = ("awsDebugCreds", "awsMaxRetries", "awsMaxBackOffTimeMs")
# The role's own static keys in the file: refused (a secret key in the file, where a profile does better).
AWS_KEY_OPTIONS = ("awsRoleAccessKeyId", "awsRoleSecretAccessKey", "awsRoleSessionToken")
# What Krb5LoginModule reads that a client logging in without a prompt uses (the JDK's Krb5LoginModule
# documentation): a keytab and its principal, or the ticket cache; `serviceName` is Kafka's JAAS form of
# sasl.kerberos.service.name. The others only tune the JDK's login and change nothing here.
KERBEROS_OPTIONS = ("useKeyTab", "keyTab", "principal", "storeKey", "useTicketCache", "ticketCache", "serviceName",
                    "doNotPrompt", "isInitiator", "refreshKrb5Config", "renewTGT", "debug")
KERBEROS_FLAGS = ("useKeyTab", "storeKey", "useTicketCache", "doNotPrompt", "isInitiator", "refreshKrb5Config",
                  "renewTGT", "debug")
MODULE_OPTIONS = (*PASSWORD_OPTIONS, *OAUTH_OPTIONS, *AWS_OPTIONS, *AWS_TUNING_OPTIONS, *AWS_KEY_OPTIONS,
                  *KERBEROS_OPTIONS)
CONTROL_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
QUOTES = "\"'"


@dataclass(frozen=True)
class Login:
    """A login module and its options. `username` and `password` for SCRAM and PLAIN (None for OAUTHBEARER)."""
    module: str
    options: dict

    @property
    def username(self):
        return self.options.get("username")

    @property
    def password(self):
        return self.options.get("password")


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "quoted", "number" or the character itself ("=", ";", ...)
    text: str = ""


def _is_word_start(c):
    return "a" <= c.lower() <= "z" or c in "_$" or "\u00a0" <= c


def _is_word_char(c):
    return _is_word_start(c) or "0" <= c <= "9" or c in ".-"


def _is_number_start(text, i):
    """parseNumbers: a digit or `.` starts a number, and `-` does when a digit or `.` follows."""
    c, following = text[i], text[i + 1:i + 2]
    return "0" <= c <= "9" or c == "." or (c == "-" and following != "" and ("0" <= following <= "9" or following == "."))


def _tokens(text):
    """The tokens of `text` as StreamTokenizer with Kafka's settings yields them."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c <= " ":
            i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c == "/":  # `//`, and a lone `/` too: '/' is StreamTokenizer's comment character
            while i < n and text[i] not in "\r\n":
                i += 1
        elif c in QUOTES:
            i, value = _quoted(text, i + 1, c)
            yield _Token("quoted", value)
        elif _is_number_start(text, i):
            start = i  # a number token has no string value: never a value of an option
            i += 1
            while i < n and ("0" <= text[i] <= "9" or text[i] == "."):
                i += 1
            yield _Token("number", text[start:i])
        elif _is_word_start(c):
            start = i
            while i < n and _is_word_char(text[i]):
                i += 1
            yield _Token("word", text[start:i])
        else:
            i += 1
            yield _Token(c)


def _quoted(text, i, quote):
    """(index after the string, its value) for a string opened just before `i`."""
    out, n = [], len(text)
    while i < n and text[i] != quote and text[i] not in "\r\n":
        c = text[i]
        i += 1
        if c == "\\" and i < n:
            c, i = _escape(text, i)
        out.append(c)
    if i < n and text[i] == quote:
        i += 1
    return i, "".join(out)


def _escape(text, i):
    """The character an escape starting at `i` (after the backslash) stands for, and the index after it."""
    first = text[i]
    if "0" <= first <= "7":
        value, j = int(first), i + 1
        limit = 3 if first <= "3" else 2  # \377 at most, as StreamTokenizer reads it
        while j < len(text) and j - i < limit and "0" <= text[j] <= "7":
            value, j = value * 8 + int(text[j]), j + 1
        return chr(value), j
    return ESCAPES.get(first, first), i + 1


def _module_named(name):
    """How a refused module is named: its class only when it looks like one (a typo's text could be a secret)."""
    short = name.rsplit(".", 1)[-1]  # the class without its package: one line, no Java-looking path
    return short if short.endswith("LoginModule") else "an unknown login module"


def parse(text):
    """The Login of a client `sasl.jaas.config` value. Anything Java would refuse, more than one module, a
    module other than SCRAM, PLAIN, OAUTHBEARER, AWS's IAMLoginModule or Kerberos, a SCRAM or PLAIN module without
    username or password, an OAUTHBEARER, IAM or Kerberos module with an option it does not read, a Kerberos login
    that would prompt: BadInput."""
    tokens = list(_tokens(text))
    if not tokens:
        raise BadInput("is empty")
    if tokens[0].kind != "word":
        raise BadInput("does not start with a login module class")
    module = tokens[0].text
    if module not in SUPPORTED_MODULES:
        raise BadInput(f"login module {_module_named(module)} is not supported: use "
                       f"ScramLoginModule (SCRAM-SHA-256/512), PlainLoginModule (PLAIN), OAuthBearerLoginModule "
                       f"(OAUTHBEARER), IAMLoginModule (AWS MSK IAM) or Krb5LoginModule (GSSAPI)")
    if len(tokens) < 2 or tokens[1].kind != "word" or tokens[1].text.upper() not in CONTROL_FLAGS:
        raise BadInput(f"the control flag after {_module_named(module)} must be one of {', '.join(f.lower() for f in CONTROL_FLAGS)}")
    options, i = {}, 2
    while i < len(tokens) and tokens[i].kind != ";":
        key = tokens[i]
        if key.kind not in ("word", "quoted"):
            raise BadInput("expected key=value options after the control flag")
        value = tokens[i + 2] if i + 2 < len(tokens) and tokens[i + 1].kind == "=" else None
        if value is None or value.kind not in ("word", "quoted"):
            raise BadInput(f"no value for option {_option_named(key.text)} (quote values: key=\"value\")")
        options[key.text] = value.text
        i += 3
    if i >= len(tokens):
        raise BadInput("is not terminated by a semicolon")
    if i + 1 < len(tokens):
        raise BadInput("holds more than one login module (a client takes exactly one)")
    if module == OAUTHBEARER_MODULE:
        return Login(module, _oauth_options(options))
    if module == MSK_IAM_MODULE:
        return Login(module, _known_options(options, "IAMLoginModule", AWS_OPTIONS + AWS_TUNING_OPTIONS))
    if module == KERBEROS_MODULE:
        return Login(module, _kerberos_options(options))
    if options.get("tokenauth", "").lower() == "true":  # the clients here send no SCRAM token extension
        raise BadInput("tokenauth=true (delegation token login) is not supported yet")
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        raise BadInput(f"{_module_named(module)} needs {' and '.join(missing)}")
    return Login(module, options)


def _oauth_options(options):
    """OAuthBearerLoginModule's options, each one it reads for the client-credentials login or AWS MSK IAM's
    OAUTHBEARER form. Its unsecured development tokens (`unsecuredLogin*` options, no token endpoint) are refused by
    name."""
    for key in options:
        if key.startswith("unsecuredLogin"):
            raise BadInput("unsecured OAUTHBEARER tokens (unsecuredLogin* options) are not supported: use a token "
                           "endpoint (sasl.oauthbearer.token.endpoint.url)")
    return _known_options(options, "OAuthBearerLoginModule", OAUTH_OPTIONS + AWS_OPTIONS + AWS_TUNING_OPTIONS)


def _known_options(options, module, supported):
    """`options`, each of them in `supported`; AWS's static role keys refused by name."""
    for key in options:
        if key in AWS_KEY_OPTIONS:
            raise BadInput(f"{module} option {key} is not supported: keep AWS keys out of this file (an AWS profile, "
                           f"the environment or the host's role gives them)")
        if key not in supported:
            raise BadInput(f"{module} option {_option_named(key)} is not supported (supported: {', '.join(supported)})")
    return options


def _kerberos_options(options):
    """Krb5LoginModule's options for a login without a prompt: `useKeyTab=true` with `keyTab` and `principal`, or
    `useTicketCache=true` (`ticketCache`: another cache than the default, `principal`: the one expected in it)."""
    for key, value in options.items():
        if key not in KERBEROS_OPTIONS:
            raise BadInput(f"Krb5LoginModule option {_option_named(key)} is not supported (supported: "
                           f"{', '.join(KERBEROS_OPTIONS)})")
        if key in KERBEROS_FLAGS and value.lower() not in ("true", "false"):
            raise BadInput(f"Krb5LoginModule option {key!r} must be true or false")
    keytab, cache = (options.get(flag, "false").lower() == "true" for flag in ("useKeyTab", "useTicketCache"))
    if keytab:
        missing = [k for k in ("keyTab", "principal") if not options.get(k, "").strip()]
        if missing:
            raise BadInput(f"Krb5LoginModule with useKeyTab=true needs {' and '.join(missing)}")
    elif not cache:
        raise BadInput("Krb5LoginModule needs useKeyTab=true (with keyTab and principal) or useTicketCache=true: "
                       "without either it would prompt for a password")
    for key, needs in (("keyTab", "useKeyTab"), ("ticketCache", "useTicketCache")):
        if key in options and options.get(needs, "false").lower() != "true":
            raise BadInput(f"Krb5LoginModule option {key!r} needs {needs}=true")
    return options


def _option_named(key):
    """An option is named only when it is one of the modules' own: a misplaced token could be a secret."""
    return repr(key) if key in MODULE_OPTIONS else "(an option)"
