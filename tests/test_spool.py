"""The progress spool (sinks.spool) on a real directory, with a publish function standing in for Kafka's producer:
what is written is durable before it is delivered, delivered in order and once acknowledged deleted, kept on a
failed delivery, found again by the next start, and bounded. Kafka itself: tests/test_job_cluster.py (the
SIGKILL and restart of the job) and tests/test_faults_stop_cluster.py (a hung broker)."""

import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sinks import spool as s
from tests.kafka_fixtures import wait_for


class Kafka:
    """A publish function: records what it was given, fails while `failing`, blocks while `held` is clear."""

    def __init__(self):
        self.delivered, self.calls, self.failing = [], 0, False
        self.held = threading.Event()
        self.held.set()

    def __call__(self, keyed):
        self.calls += 1
        self.held.wait(10)
        if self.failing:
            raise TimeoutError("not acknowledged in time")
        self.delivered += keyed


def batch(batch_id, n=3):
    return [(f"t:{p}:1", f'{{"batch_id":{batch_id},"p":{p}}}'.encode()) for p in range(n)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=20), st.binary(max_size=50)), max_size=20))
def test_encode_decode_round_trip(keyed):
    assert s.decode(s.encode(keyed)) == keyed


@pytest.mark.parametrize("name, parsed", [
    (s.file_name(7, 12), (7, 12)),
    ("000000000007-12.partial", None),
    ("offsets", None),
    ("x-1.records", None),
], ids=["records", "partial", "other", "not-a-sequence"])
def test_file_names(name, parsed):
    assert s.parse_name(name) == parsed


def test_a_write_is_on_disk_when_it_returns_and_delivered_in_order(tmp_path):
    kafka = Kafka()
    spool = s.Spool(tmp_path / "spool", kafka)  # not started: nothing is delivered yet
    for batch_id in range(3):
        spool.write(batch(batch_id))
    assert spool.backlog_records == 9 and len(os.listdir(tmp_path / "spool")) == 3
    spool.start()
    wait_for(lambda: spool.backlog_records == 0, 10, interval_s=0.05)
    spool.close(1)
    assert kafka.delivered == batch(0) + batch(1) + batch(2)
    assert os.listdir(tmp_path / "spool") == []


def test_a_hung_delivery_never_holds_a_write(tmp_path):
    kafka = Kafka()
    kafka.held.clear()
    spool = s.Spool(tmp_path, kafka).start()
    try:
        spool.write(batch(0))
        wait_for(lambda: kafka.calls == 1, 10, interval_s=0.05)  # the sender waits on Kafka
        spool.write(batch(1))  # returns at once
        assert spool.backlog_records == 6
    finally:
        kafka.held.set()
    wait_for(lambda: spool.backlog_records == 0, 10, interval_s=0.05)
    spool.close(1)
    assert kafka.delivered == batch(0) + batch(1)


def test_a_failed_delivery_is_retried_in_order_and_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(s, "FIRST_RETRY_S", 0.05)
    kafka, failures = Kafka(), []
    kafka.failing = True
    spool = s.Spool(tmp_path, kafka, on_failure=lambda error, backlog: failures.append((str(error), backlog)))
    spool.write(batch(0))
    spool.start()
    wait_for(lambda: len(failures) >= 2, 10, interval_s=0.05)
    spool.write(batch(1))
    kafka.failing = False
    wait_for(lambda: spool.backlog_records == 0, 10, interval_s=0.05)
    spool.close(1)
    assert kafka.delivered == batch(0) + batch(1)
    assert failures[0] == ("not acknowledged in time", 3)


def test_the_next_start_delivers_what_was_left_first_and_drops_partial_files(tmp_path):
    kafka = Kafka()
    kafka.failing = True
    first = s.Spool(tmp_path, kafka)
    first.write(batch(0))
    first.write(batch(1))
    (tmp_path / "000000000002-3.partial").write_bytes(s.encode(batch(99))[:10])  # a crash mid-write
    kafka.failing = False
    second = s.Spool(tmp_path, kafka)
    assert second.backlog_records == 6
    second.write(batch(2))
    second.start()
    wait_for(lambda: second.backlog_records == 0, 10, interval_s=0.05)
    second.close(1)
    assert kafka.delivered == batch(0) + batch(1) + batch(2)


@pytest.mark.parametrize("delivered_after_s, raises", [(0.1, False), (None, True)],
                         ids=["waits-for-the-sender", "times-out"])
def test_a_full_spool_makes_the_write_wait(tmp_path, delivered_after_s, raises):
    kafka = Kafka()
    kafka.held.clear()
    one_batch = len(s.encode(batch(0)))
    spool = s.Spool(tmp_path, kafka, max_bytes=one_batch, full_wait_s=1.0).start()
    spool.write(batch(0))
    wait_for(lambda: kafka.calls == 1, 10, interval_s=0.05)
    if delivered_after_s is not None:
        threading.Timer(delivered_after_s, kafka.held.set).start()
    try:
        if raises:
            with pytest.raises(TimeoutError, match="progress spool holds"):
                spool.write(batch(1))
        else:
            spool.write(batch(1))
    finally:
        kafka.held.set()
    wait_for(lambda: spool.backlog_records == 0, 10, interval_s=0.05)
    spool.close(1)
    assert kafka.delivered == batch(0) + ([] if raises else batch(1))


def test_close_stops_within_its_bound_and_keeps_the_rest_on_disk(tmp_path):
    import time

    kafka = Kafka()
    kafka.held.clear()
    spool = s.Spool(tmp_path, kafka).start()
    spool.write(batch(0))
    started = time.monotonic()
    spool.close(0.2)
    closed_s = time.monotonic() - started
    try:
        assert closed_s < 2.0
        assert s.Spool(tmp_path, kafka).backlog_records == 3  # what the next start finds and delivers first
    finally:
        kafka.held.set()
