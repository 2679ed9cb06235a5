"""Helpers for the execute/verify/cancel/janitor cluster tests: run the CLI in-process, read throttle
configs, wait for reassignments. Everything targets the session's local cluster (127.0.0.1)."""

import io
import json
import uuid
import time
from contextlib import redirect_stderr, redirect_stdout

from kafka.admin import ConfigResource, ConfigResourceType

from streaming.cli import main
from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from tests.kafka_fixtures import wait_for

BROKERS = (1, 2, 3)
MB = 1_000_000


def cli(*argv, connect=None):
    """(exit code, stdout, stderr) of `reassign-monitor ARGV`, run in this process; `connect`: the admin door
    (default: the real cluster's)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main([str(a) for a in argv], connect=connect)
        except SystemExit as exit_:  # argparse usage errors
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def write_plan(path, moves):
    """moves: [(topic, partition, replicas)] -> a reassignment JSON file."""
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r)} for t, p, r in moves]}))
    return path


def throttles(cluster, topics, admin=None):
    """{(topic, kind): frozenset of entries | "*"} and {(broker, kind): rate} as the cluster shows them; asked
    through `admin` (a test's client, kept open), else a client of its own."""
    client = admin or cluster.admin()
    try:
        described = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
                                            + [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in BROKERS])
    finally:
        if admin is None:
            client.close()
    shown = {}
    for topic in topics:
        for kind, key in TOPIC_THROTTLE_KEYS.items():
            value = described.get("topic", {}).get(topic, {}).get(key, {}).get("value")
            if value:
                shown[(topic, kind)] = "*" if value == "*" else frozenset(value.split(","))
    for broker in BROKERS:
        for kind, key in BROKER_THROTTLE_KEYS.items():
            value = described.get("broker", {}).get(str(broker), {}).get(key, {}).get("value")
            if value:
                shown[(broker, kind)] = int(value)
    return shown


def expect_throttles(cluster, topics, expected, timeout_s=15):
    """Wait until the configs equal `expected` (config changes reach every broker asynchronously)."""
    return wait_for(lambda: throttles(cluster, topics) == expected, timeout_s,
                    message=f"throttles == {expected} (now {throttles(cluster, topics)})")


def reassigning(cluster, attempts=3):
    """The partitions reassigning now. A client made while a broker rejoins (after SIGCONT) may be told a controller
    its metadata does not list yet (kafka-python: UnknownBrokerIdError): a new client asks again."""
    from kafka.errors import UnknownBrokerIdError

    for attempt in range(attempts):
        admin = cluster.admin()
        try:
            return {(tp.topic, tp.partition) for tp in admin.list_partition_reassignments()}
        except UnknownBrokerIdError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)
        finally:
            admin.close()


def replicas(cluster, topic, partition):
    admin = cluster.admin()
    try:
        for described in admin.describe_topics([topic]):
            for p in described["partitions"]:
                if p["partition_index"] == partition:
                    return list(p["replica_nodes"])
    finally:
        admin.close()
    return None


def wait_done(cluster, partitions, timeout_s=120):
    wait_for(lambda: not (reassigning(cluster) & set(partitions)), timeout_s, interval_s=0.3,
             message=f"{sorted(partitions)} to finish reassigning")


def ownership_topic():
    return f"own-{uuid.uuid4().hex[:8]}"


def clear_broker_throttles(cluster):
    cluster.set_configs(broker_configs={b: {key: None for key in BROKER_THROTTLE_KEYS.values()} for b in BROKERS})


def cancel_everything(cluster):
    from kafka import TopicPartition

    admin = cluster.admin()
    try:
        ongoing = admin.list_partition_reassignments()
        if ongoing:
            admin.alter_partition_reassignments({TopicPartition(tp.topic, tp.partition): None for tp in ongoing})
    finally:
        admin.close()
