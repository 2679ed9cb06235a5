"""What the door decides from a Kafka version's answers, on plain data (no cluster): the KIP-455 floor from
ApiVersions, the cluster's brokers from any version of DescribeCluster (or Metadata), and the throttled-replicas
list an APPEND makes where the broker would get it wrong. The same decisions on real clusters of every supported
version: tests/test_compat_cluster.py."""

import pytest

from streaming.cluster.reads import cluster_rows
from streaming.vocabulary.config_keys import appends_lead_with_a_comma
from streaming.vocabulary.kafka_apis import below_the_floor
from streaming.vocabulary.throttle_entries import appended

# ApiVersions of a Kafka 2.8.2 broker as kafka-python received it (measured): API key -> (min, max).
KAFKA_2_8 = {0: (0, 9), 1: (0, 12), 2: (0, 6), 3: (0, 11), 4: (0, 5), 5: (0, 3), 6: (0, 7), 7: (0, 3), 8: (0, 8),
             9: (0, 7), 10: (0, 3), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1),
             18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3),
             26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4), 33: (0, 2),
             34: (0, 2), 35: (0, 2), 36: (0, 2), 37: (0, 3), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2),
             42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1),
             50: (0, 0), 51: (0, 0), 56: (0, 0), 57: (0, 0), 60: (0, 0), 61: (0, 0)}
# Kafka 2.3 answers up to IncrementalAlterConfigs (44): no KIP-455 (45, 46), nor anything later.
KAFKA_2_3 = {key: versions for key, versions in KAFKA_2_8.items() if key <= 44}
KAFKA_2_4 = {key: versions for key, versions in KAFKA_2_8.items() if key <= 47}

FLOOR_CASES = [
    # id, ApiVersions, version the library infers, refused
    ("2.3-refused", KAFKA_2_3, (2, 3), True),
    ("2.4-floor", KAFKA_2_4, (2, 4), False),
    ("2.8", KAFKA_2_8, (2, 8), False),
    ("only-list-missing", {k: v for k, v in KAFKA_2_8.items() if k != 46}, (2, 8), True),
    ("only-alter-missing", {k: v for k, v in KAFKA_2_8.items() if k != 45}, (2, 8), True),
    ("nothing-known", {}, None, True),
]


@pytest.mark.parametrize("api_versions, seen_as, refused", [pytest.param(*c[1:], id=c[0]) for c in FLOOR_CASES])
def test_the_kip455_floor_is_decided_from_api_versions(api_versions, seen_as, refused):
    line = below_the_floor(api_versions, seen_as)
    assert (line is not None) == refused
    if refused:
        assert line.startswith("Kafka 2.4 or newer is needed: the cluster lacks ") and "KIP-455" in line
        assert line.endswith("nothing was changed") and "\n" not in line
        assert ("answers as Kafka 2.3" in line) == (seen_as == (2, 3))


def test_the_floor_names_each_missing_api():
    assert "lacks ListPartitionReassignments and AlterPartitionReassignments (KIP-455)" in below_the_floor(KAFKA_2_3)
    assert "lacks AlterPartitionReassignments (KIP-455)" in below_the_floor({46: (0, 0)})


BROKER = {"host": "127.0.0.1", "port": 9092, "rack": None}
CLUSTER_CASES = [
    # id, the answer's fields as the door reads them (kafka-python's to_dict at the negotiated version), rows
    ("describe-cluster-v0 (2.8-3.6)", {"cluster_id": "c", "controller_id": 1, "brokers": [
        {"broker_id": 2, **BROKER}, {"broker_id": 1, **BROKER}]}, [(2, True), (1, True)]),
    ("describe-cluster-v1 (3.7-3.9): a fenced broker is absent", {"cluster_id": "c", "endpoint_type": 1, "brokers": [
        {"broker_id": 1, **BROKER}, {"broker_id": 2, **BROKER}]}, [(1, True), (2, True)]),
    ("describe-cluster-v2 (4.0+): a fenced broker is listed", {"cluster_id": "c", "endpoint_type": 1, "brokers": [
        {"broker_id": 1, **BROKER, "is_fenced": False}, {"broker_id": 3, **BROKER, "is_fenced": True}]},
     [(1, True), (3, False)]),
    ("metadata (before 2.8)", {"cluster_id": "c", "controller_id": 2, "brokers": [{"node_id": 3, **BROKER}]},
     [(3, True)]),
]


@pytest.mark.parametrize("answer, rows", [pytest.param(*c[1:], id=c[0]) for c in CLUSTER_CASES])
def test_the_cluster_is_read_from_any_version_of_its_answer(answer, rows):
    cluster_id, brokers = cluster_rows(answer)
    assert cluster_id == "c" and [(b["broker"], b["alive"]) for b in brokers] == rows


APPEND_CASES = [
    # id, value the topic config holds (None: no value), entries appended, the list SET instead
    ("unset", None, "0:1", "0:1"),
    ("empty", "", "0:1,1:2", "0:1,1:2"),
    ("kept-first", "1:2", "0:1", "1:2,0:1"),
    ("already-there", "0:1,1:2", "1:2", "0:1,1:2"),
    ("leading-comma-dropped", ",0:1", "0:2", "0:1,0:2"),
    ("blanks-trimmed", " 0:1 , ", " 0:2", "0:1,0:2"),
    ("all-replicas-as-kafka-appends", "*", "0:1", "*,0:1"),
]


@pytest.mark.parametrize("value, items, expected", [pytest.param(*c[1:], id=c[0]) for c in APPEND_CASES])
def test_an_append_made_by_hand_has_no_empty_entry(value, items, expected):
    assert appended(value, items) == expected


@pytest.mark.parametrize("version, leads", [((2, 8), True), ((3, 3), True), ((3, 4), False), ((3, 6), False),
                                            ((4, 1), False)])
def test_which_brokers_append_after_a_comma(version, leads):
    assert appends_lead_with_a_comma(version) == leads
