"""The errors the tool reports, each with the exit code the CLI turns it into.

    MonitorError
    +-- BadInput            exit 2: the operator's input is wrong (file, flags, unknown ids)
    +-- ClusterError        exit 3: the cluster is unreachable or refused the request
        +-- Unreachable
        +-- Refused         (authorization, policy, or a Kafka error code on the request)

Library exceptions are mapped to these once, in `from_kafka_error`, keeping the cause.
"""

EXIT_OK = 0
EXIT_IN_PROGRESS = 1
EXIT_BAD_INPUT = 2
EXIT_CLUSTER = 3


class MonitorError(Exception):
    exit_code = EXIT_CLUSTER


class BadInput(MonitorError):
    exit_code = EXIT_BAD_INPUT


class ClusterError(MonitorError):
    exit_code = EXIT_CLUSTER


class Unreachable(ClusterError):
    pass


class Refused(ClusterError):
    pass


def from_kafka_error(error, doing):
    """Our exception for a kafka-python or confluent-kafka error raised while `doing` something."""
    import kafka.errors as kerrors

    name = type(error).__name__
    text = str(error) or name
    if isinstance(error, (kerrors.KafkaConnectionError, kerrors.KafkaTimeoutError)):
        return Unreachable(f"{doing}: cluster unreachable ({name})")
    if "Authorization" in name or "AUTHORIZATION" in text or "Authentication" in name:
        return Refused(f"{doing}: not authorized ({text})")
    if isinstance(error, kerrors.KafkaError):
        return Refused(f"{doing}: {text}")
    return ClusterError(f"{doing}: {text}")
