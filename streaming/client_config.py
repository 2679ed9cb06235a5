"""`--command-config FILE`: Kafka client properties (as `kafka-reassign-partitions` takes them), turned
into the settings of each client library we use. Only the keys below are understood; any other key
is bad input, so a typo cannot silently drop security settings."""

from streaming.errors import BadInput

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


def read_properties(path):
    """key=value lines; '#' and '!' start comments. Missing or unreadable file: BadInput."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as error:
        raise BadInput(f"--command-config {path}: {error.strerror}") from error
    properties = {}
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        key, sep, value = stripped.partition("=")
        if not sep:
            raise BadInput(f"--command-config {path}:{number}: expected key=value")
        properties[key.strip()] = value.strip()
    unknown = sorted(set(properties) - set(KAFKA_PYTHON_KEYS))
    if unknown:
        raise BadInput(f"--command-config {path}: unsupported keys {', '.join(unknown)}")
    return properties


def kafka_python_settings(path):
    if not path:
        return {}
    properties = read_properties(path)
    settings = {KAFKA_PYTHON_KEYS[k]: v for k, v in properties.items() if KAFKA_PYTHON_KEYS[k]}
    if properties.get("ssl.endpoint.identification.algorithm") == "":
        settings["ssl_check_hostname"] = False
    return settings


def confluent_settings(path, bootstrap_servers):
    settings = {"bootstrap.servers": bootstrap_servers}
    if path:
        settings.update(read_properties(path))
    return settings
