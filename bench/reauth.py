"""OAUTHBEARER sessions across token lifetimes (KIP-368 re-authentication), on a secured 3-node cluster of its own
(tests/secure_cluster.py: OAUTHBEARER validated by Kafka's OIDC validator, tokens living 60 s, the brokers'
`connections.max.reauth.ms` 60 s, so a session ends with its token unless the client re-authenticates).

For DURATION seconds, every 2 s: a door (kafka-python, the admin calls) lists the reassignments, and a librdkafka
producer with the door's `oauth_cb` writes a record. Reported per client library: calls made, calls failed, and
whether the connections were kept (librdkafka: connects and disconnects per broker from its statistics;
kafka-python: re-authentications it logged, and connections it closed) - a client that does not re-authenticate
has its connection closed by the broker once the session lifetime passes, and connects again. Also the tokens
the issuer handed out.

Prints a markdown table and writes it to bench/RESULTS.md, section "OAUTHBEARER re-authentication
(bench/reauth.py)".

    .venv/bin/python bench/reauth.py [--duration 150]
    (CLUSTER_DIR, KAFKA_BASE_PORT: the cluster's directory and ports, default .local-cluster/bench-reauth, 35490)
"""

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import markdown_table, write_section  # noqa: E402  (after the path to the repository)
from streaming.cluster import acls, oauth  # noqa: E402
from streaming.cluster.admin import KafkaClusterAdmin  # noqa: E402
from streaming.vocabulary import client_config  # noqa: E402
from tests.secure_cluster import REAUTH_MS, SecureCluster  # noqa: E402
from tests.oidc_issuer import TOKEN_LIFETIME_S  # noqa: E402

SECTION = "OAUTHBEARER re-authentication (bench/reauth.py)"
ROOT = Path(__file__).resolve().parents[1]


class Lines(logging.Handler):
    """Counts the log lines of a logger that contain `marker`."""

    def __init__(self, marker):
        super().__init__(logging.DEBUG)
        self.marker, self.count = marker, 0

    def emit(self, record):
        if self.marker in record.getMessage():
            self.count += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=150.0)
    args = parser.parse_args()
    cluster = SecureCluster(Path(os.environ.get("CLUSTER_DIR", ROOT / ".local-cluster" / "bench-reauth")),
                            int(os.environ.get("KAFKA_BASE_PORT", "35490")))
    scheduled, closed = Lines("Scheduling SASL re-authentication"), Lines("Connection lost")
    for handler in (scheduled, closed):
        logger = logging.getLogger("kafka.net")
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)
    try:
        cluster.up()
        topic = cluster.unique_topic("reauth")
        cluster.create_topic(topic, {0: [1, 2, 3]})
        grants = [*acls.grants("progress"), acls.Grant(acls.TOPIC, topic, "Write", "")]
        config = cluster.principal("bench-reauth", grants, tempfile.mkdtemp(), client_config.OAUTHBEARER)
        row = measure(cluster, config, topic, args.duration, scheduled, closed)
    finally:
        cluster.down()
    body = (f"{time.strftime('%Y-%m-%d')}, 2 cores, Kafka 4.1.1, tokens living {TOKEN_LIFETIME_S} s, "
            f"connections.max.reauth.ms {REAUTH_MS}, one call a library every 2 s for {args.duration:g} s.\n\n"
            + markdown_table(("client", "calls", "failed", "kept its connections", "tokens issued"), row))
    print(body)
    write_section(SECTION, body)


def measure(cluster, config, topic, duration_s, scheduled, closed):
    from confluent_kafka import Producer

    found = client_config.read_config(config)
    statistics, failed_writes = [], []
    producer = Producer({**client_config.confluent_settings(found, cluster.bootstrap),
                         **oauth.confluent_settings(oauth.Tokens(found.oauth, 10)), "statistics.interval.ms": 5000,
                         "stats_cb": lambda text: statistics.append(json.loads(text)), "log_level": 0})
    admin = KafkaClusterAdmin(cluster.bootstrap, str(config), 10.0)
    calls, failed_calls, writes = 0, 0, 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < duration_s:
            try:
                admin.list_reassignments()
            except Exception:  # counted: the measure is whether any call fails
                failed_calls += 1
            calls += 1
            producer.produce(topic, b"x", on_delivery=lambda error, _: error and failed_writes.append(error))
            writes += 1
            producer.poll(0)
            time.sleep(2)
        producer.flush(10)
        producer.poll(6)  # one more statistics report
    finally:
        admin.close()
    brokers = statistics[-1]["brokers"].values() if statistics else ()
    connects = sum(b["connects"] for b in brokers if b["nodeid"] >= 0)
    disconnects = sum(b["disconnects"] for b in brokers if b["nodeid"] >= 0)
    issued = len(cluster.issuer.issued)
    return [("kafka-python (admin calls)", calls, failed_calls,
             f"{scheduled.count} re-authentications scheduled, {closed.count} connections lost", issued),
            ("librdkafka (producer)", writes, len(failed_writes),
             f"{connects} connects, {disconnects} disconnects over 3 brokers", issued)]


if __name__ == "__main__":
    main()
