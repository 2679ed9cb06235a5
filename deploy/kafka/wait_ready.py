"""Wait until a cluster's metadata lists the expected number of brokers, each accepting connections:
wait_ready.py BOOTSTRAP N SECONDS [COMMAND_CONFIG]. (After a restart the metadata can still list a
broker's previous incarnation as alive while its new JVM is not listening yet.) COMMAND_CONFIG: client
properties for a secured cluster, read as the tool reads --command-config. The brokers come from a
Metadata request, which every Kafka version answers (kafka-python's describe_cluster fails before 3.7)."""

import socket
import sys
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from streaming.vocabulary.client_config import confluent_settings, read_config  # noqa: E402  (after the path to the repository)


def _listening(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def main(bootstrap, expected, seconds, command_config=None):
    admin = AdminClient({**confluent_settings(read_config(command_config), bootstrap), "log_level": 0})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            brokers = admin.list_topics(timeout=3).brokers.values()
            if len(brokers) >= expected and all(_listening(b.host, b.port) for b in brokers):
                return 0
        except Exception:  # not up yet: any failure means try again until the deadline
            pass
        time.sleep(0.5)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), *sys.argv[4:5]))
