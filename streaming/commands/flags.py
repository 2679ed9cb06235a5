"""argparse types of the flags several commands share: a bad value is a one-line usage error (exit 2)
raised while parsing, before any command code runs."""

import argparse
import re

from streaming.vocabulary import durations
from streaming.vocabulary.cluster_name import NAME, NAME_RULE
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput
from streaming.vocabulary.kafka_limits import INT32_MAX, PORT_MAX, topic_name_problem

# HOST:PORT, the host a DNS name, an IPv4 address or a bracketed IPv6 address. The port is required, as
# Kafka's own tools require it ("Invalid url in bootstrap.servers"): a guessed 9092 would turn a forgotten
# port into a wait for the timeout and an "unreachable" that hides the typo.
_SERVER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?")
MAX_HOST_LENGTH = 253  # a DNS name's limit
MAX_BOOTSTRAP_SERVERS = 100
TIMEOUT_BOUNDS_S = (0.01, 3600.0)  # below 10 ms no request completes; above an hour is a typo

timeout = durations.flag(*TIMEOUT_BOUNDS_S)


def bootstrap_servers(text):
    """HOST:PORT[,HOST:PORT...], each port 1-65535."""
    servers = text.split(",")
    if len(servers) > MAX_BOOTSTRAP_SERVERS:
        raise argparse.ArgumentTypeError(f"more than {MAX_BOOTSTRAP_SERVERS} servers")
    for server in servers:
        match = _SERVER.fullmatch(server)
        if not match:
            raise argparse.ArgumentTypeError(f"{shown(server)!r} is not HOST:PORT")
        if len(match.group(1)) > MAX_HOST_LENGTH:
            raise argparse.ArgumentTypeError(f"host {shown(match.group(1))!r} is longer than {MAX_HOST_LENGTH} characters")
        if match.group(2) is None:
            raise argparse.ArgumentTypeError(f"{shown(server)!r} has no port: give HOST:PORT, as Kafka's tools require")
        if not 1 <= int(match.group(2)) <= PORT_MAX:
            raise argparse.ArgumentTypeError(f"port {match.group(2)} in {shown(server)!r} is not 1-{PORT_MAX}")
    return text


def cluster_name(text):
    """A cluster's name for its `cluster` label and record field (streaming.vocabulary.cluster_name)."""
    if not NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{shown(text)!r} is not a cluster name: {NAME_RULE}")
    return text


def given_cluster_name(args):
    """The cluster's name the operator gave (its name in --clusters FILE, or --cluster-name), None when none was:
    streaming.vocabulary.cluster_name.name_of then names it by its bootstrap servers."""
    return args.cluster or args.cluster_name


def topic_name(text):
    problem = topic_name_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"topic name {shown(text)!r} {problem}")
    return text


def positive_count(text):
    """A count limit: 1 to 2^31-1."""
    if not re.fullmatch(r"[0-9]{1,10}", text) or not 1 <= int(text) <= INT32_MAX:
        raise argparse.ArgumentTypeError(f"{shown(text)!r} is not a whole number from 1 to {INT32_MAX}")
    return int(text)




_REQUEST_ID = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{4}")  # streaming.control.ownership.records.new_request_id


def request_id(text):
    if not _REQUEST_ID.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{shown(text)!r} is not a request id (like 20261123T180000.000Z-1a2b)")
    return text


def checked(parse):
    """An argparse `type` from a vocabulary parser that raises BadInput: a bad value is a usage error (exit 2)."""
    def parse_flag(text):
        try:
            return parse(text)
        except BadInput as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse_flag.__name__ = parse.__name__
    return parse_flag
