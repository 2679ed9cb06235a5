"""The controller's own picture keeps the rates and ETAs the batch it replaces measured (sinks.carried_rates)."""

import pytest

from sinks.carried_rates import carried
from sinks.metric_names import ETA, REPLICA_COPY_RATE, REPLICA_ETA
from sinks.prometheus import Picture, SnapshotCollector
from streaming.vocabulary.columns import from_rows


def replica(topic="t", partition=0, broker=2, rate=None, eta=None, intra_broker=False, state="COPYING"):
    return {"topic": topic, "partition": partition, "broker": broker, "intra_broker": intra_broker,
            "state": state, "copy_rate": rate, "eta_seconds": eta}


def picture(rows, poll_s, rate=None, eta=None):
    return Picture(replicas=from_rows(rows), last_poll_s=poll_s,
                   summary={"bytes_remaining": 1, "rate_bytes_per_sec": rate, "eta_seconds": eta})


# (what the batch's picture at 100 s had, what the controller's own poll at 104 s knows, the (rate, ETA) shown)
CASES = [
    pytest.param(replica(rate=5e5, eta=30.0), replica(), (5e5, 26.0), id="both-carried-the-eta-counts-down"),
    pytest.param(replica(rate=5e5, eta=30.0), replica(eta=20.0), (5e5, 20.0), id="an-eta-of-its-own-is-kept"),
    pytest.param(replica(rate=5e5, eta=3.0), replica(), (5e5, 0.0), id="an-eta-never-below-zero"),
    pytest.param(replica(broker=3, rate=5e5, eta=30.0), replica(), (None, None), id="another-replica-gives-nothing"),
    pytest.param(replica(rate=5e5, eta=30.0, intra_broker=True), replica(), (None, None),
                 id="the-same-broker-between-log-dirs-is-another-move"),
    pytest.param(replica(), replica(), (None, None), id="nothing-measured-nothing-carried"),
    pytest.param(replica(rate=5e5, eta=30.0), replica(state="BROKER_OFFLINE"), (None, None),
                 id="a-move-whose-broker-stopped-answering-is-not-measured"),
]


@pytest.mark.parametrize("batch_row, own_row, expected", CASES)
def test_a_row_keeps_what_the_batch_measured(batch_row, own_row, expected):
    shown = carried(picture([own_row], 104.0), picture([batch_row], 100.0), 100.0)
    [row] = shown.replicas.rows()
    assert (row["copy_rate"], row["eta_seconds"]) == expected


def test_the_summary_keeps_the_batch_rate_and_counts_its_eta_down():
    shown = carried(picture([replica()], 104.0), picture([replica()], 100.0, rate=7e5, eta=50.0), 100.0)
    assert (shown.summary["rate_bytes_per_sec"], shown.summary["eta_seconds"]) == (7e5, 46.0)


def values(collector, metric):
    return [s.value for family in collector.collect() if family.name == metric.name for s in family.samples]


def test_metrics_keep_the_rate_while_a_batch_is_late_and_take_the_next_batchs():
    collector = SnapshotCollector("c")
    collector.update(picture([replica(rate=5e5, eta=30.0)], 100.0, rate=5e5, eta=30.0))
    collector.offer(picture([replica()], 104.0))  # the controller's own poll: no batch state
    assert (values(collector, REPLICA_COPY_RATE), values(collector, REPLICA_ETA), values(collector, ETA)) == (
        [5e5], [26.0], [26.0])
    collector.offer(picture([replica()], 106.0))  # and again a trigger later: from the picture it replaces
    assert values(collector, REPLICA_ETA) == [24.0]
    collector.update(picture([replica(rate=2e5, eta=90.0)], 108.0, rate=2e5, eta=90.0))  # the next batch's own
    assert (values(collector, REPLICA_COPY_RATE), values(collector, REPLICA_ETA)) == ([2e5], [90.0])
