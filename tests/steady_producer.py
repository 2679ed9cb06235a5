"""A producer that writes to one partition at a steady rate while a move runs, and the two rates that the
throttle tests compare: a fixed throttle of OUTGROWN_RATE sits in FALLING_BEHIND under PRODUCED_BYTES_PER_S
(tests/test_job_cluster.py), where `--throttle auto` starting at the same rate finishes the move
(tests/test_job_janitor_cluster.py)."""

import os
import threading
import time

from confluent_kafka import Producer

PRODUCED_BYTES_PER_S = 600_000
OUTGROWN_RATE = 100_000  # bytes/s: a sixth of what the producer writes


class SteadyProducer:
    """Writes to one partition at about `bytes_per_s` until stopped (a thread: the move's leader keeps growing)."""

    def __init__(self, cluster, topic, partition, bytes_per_s, record_bytes=10_000):
        self.stopped = threading.Event()
        producer = Producer({**cluster.settings(), "linger.ms": 20, "compression.type": "none"})

        def run():
            interval = record_bytes / bytes_per_s
            deadline = time.monotonic()
            while not self.stopped.is_set():
                producer.produce(topic, os.urandom(record_bytes), partition=partition)
                producer.poll(0)
                deadline += interval
                self.stopped.wait(max(0.0, deadline - time.monotonic()))
            producer.flush(30)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopped.set()
        self.thread.join(60)
