"""`--command-config FILE`: Kafka client properties (as `kafka-reassign-partitions` takes them), turned
into the settings of each client library we use. Only the keys below are understood; any other key
is bad input, so a typo cannot silently drop security settings."""

import os

from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput, reading_input
from streaming.vocabulary.operator_file import read_text

# Java/librdkafka property -> kafka-python keyword.
KAFKA_PYTHON_KEYS = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.endpoint.identification.algorithm": None,  # handled below: "" turns hostname checks off
}


# Values that are names, not secrets: checked here so a typo is bad input, not a refused connection.
ALLOWED_VALUES = {
    "security.protocol": ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    "sasl.mechanism": ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
}
FILE_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")
# A client config is a handful of lines; a cap keeps a wrong path (a log, /dev/zero) out of memory.
MAX_FILE_BYTES = 1024 * 1024


def _parse(lines):
    """key=value lines; '#' and '!' start comments. Messages name keys and line numbers, never values:
    a value may be a password."""
    properties = {}
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        key, sep, value = stripped.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise BadInput(f"line {number}: expected key=value")
        if key not in KAFKA_PYTHON_KEYS:
            raise BadInput(f"line {number}: unsupported key {shown(key)!r} (supported: {', '.join(KAFKA_PYTHON_KEYS)})")
        if key in properties:
            raise BadInput(f"line {number}: {key} is set twice")
        if key in ALLOWED_VALUES and value not in ALLOWED_VALUES[key]:
            raise BadInput(f"line {number}: {key} must be one of {', '.join(ALLOWED_VALUES[key])}")
        if key in FILE_KEYS and not os.path.isfile(value):
            raise BadInput(f"line {number}: {key} does not name a readable file")
        properties[key] = value
    if properties.get("security.protocol", "").startswith("SASL_") and "sasl.mechanism" not in properties:
        raise BadInput("security.protocol SASL_* needs sasl.mechanism")
    if "sasl.mechanism" in properties and not {"sasl.username", "sasl.password"} <= set(properties):
        raise BadInput("sasl.mechanism needs sasl.username and sasl.password")
    return properties


def read_properties(path):
    """The properties of `path` ({} for None, no file: plaintext). Anything wrong with the file or a line
    (an empty path too): BadInput. Read once per client; the settings below are derived from what it returns."""
    if path is None:
        return {}
    with reading_input(f"--command-config {shown(path, 200)}"):
        return _parse(read_text(path, MAX_FILE_BYTES).splitlines())


def kafka_python_settings(properties):
    settings = {KAFKA_PYTHON_KEYS[k]: v for k, v in properties.items() if KAFKA_PYTHON_KEYS[k]}
    if properties.get("ssl.endpoint.identification.algorithm") == "":
        settings["ssl_check_hostname"] = False
    return settings


def confluent_settings(properties, bootstrap_servers):
    return {"bootstrap.servers": bootstrap_servers, **properties}


def principal_of(properties):
    """`User:NAME` of the SASL user, or None (plaintext, TLS without SASL: the broker decides)."""
    name = properties.get("sasl.username")
    return f"User:{name}" if name else None
