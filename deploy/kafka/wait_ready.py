"""Wait until a cluster's metadata lists the expected number of brokers: wait_ready.py BOOTSTRAP N SECONDS."""

import sys
import time

from kafka import KafkaAdminClient


def main(bootstrap, expected, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, bootstrap_timeout_ms=3000, request_timeout_ms=3000)
            try:
                brokers = admin.describe_cluster()["brokers"]
            finally:
                admin.close()
            if len(brokers) >= expected:
                return 0
        except Exception:  # not up yet: any failure means try again until the deadline
            pass
        time.sleep(0.5)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
