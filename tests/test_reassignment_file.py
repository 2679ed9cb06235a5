"""streaming.vocabulary.reassignment_file: Kafka's reassignment JSON, every malformed input as a table."""

import json

import pytest

from streaming.vocabulary.errors import EXIT_BAD_INPUT, BadInput
from streaming.vocabulary.reassignment_file import PartitionMove, load, parse, to_json


def doc(*partitions, version=1):
    return json.dumps({"version": version, "partitions": list(partitions)})


def entry(**fields):
    return {"topic": "t", "partition": 0, "replicas": [1, 2], **fields}


MALFORMED = [
    # id, text, words the one-line message must contain
    ("empty-text", "", "not valid JSON"),
    ("not-json", "{version: 1}", "not valid JSON"),
    ("truncated", '{"version": 1, "partitions": [', "not valid JSON"),
    ("top-level-list", "[]", "expected a JSON object"),
    ("top-level-string", '"x"', "expected a JSON object"),
    ("no-version", json.dumps({"partitions": []}), "unsupported version None"),
    ("version-2", doc(entry(), version=2), "unsupported version 2"),
    ("version-string", doc(entry(), version="1"), "unsupported version '1'"),
    ("no-partitions", json.dumps({"version": 1}), "'partitions' must be a list"),
    ("partitions-object", json.dumps({"version": 1, "partitions": {}}), "'partitions' must be a list"),
    ("entry-not-object", doc("t-0"), "partitions[0]: expected an object"),
    ("no-topic", doc({"partition": 0, "replicas": [1]}), "'topic' must be a non-empty string"),
    ("empty-topic", doc(entry(topic="")), "'topic' must be a non-empty string"),
    ("topic-number", doc(entry(topic=5)), "'topic' must be a non-empty string"),
    ("no-partition", doc({"topic": "t", "replicas": [1]}), "'partition' must be an integer >= 0"),
    ("negative-partition", doc(entry(partition=-1)), "'partition' must be an integer >= 0"),
    ("partition-string", doc(entry(partition="0")), "'partition' must be an integer >= 0"),
    ("partition-float", doc(entry(partition=1.5)), "'partition' must be an integer >= 0"),
    ("partition-bool", doc(entry(partition=True)), "'partition' must be an integer >= 0"),
    ("no-replicas", doc({"topic": "t", "partition": 0}), "'replicas' must be a non-empty list"),
    ("empty-replicas", doc(entry(replicas=[])), "'replicas' must be a non-empty list"),
    ("negative-broker", doc(entry(replicas=[1, -2])), "broker ids >= 0"),
    ("broker-string", doc(entry(replicas=["1"])), "broker ids >= 0"),
    ("broker-bool", doc(entry(replicas=[True])), "broker ids >= 0"),
    ("replicas-not-list", doc(entry(replicas=1)), "'replicas' must be a non-empty list"),
    ("duplicate-broker", doc(entry(replicas=[1, 1])), "lists a broker twice"),
    ("log-dirs-too-short", doc(entry(log_dirs=["any"])), "'log_dirs' must list one directory"),
    ("log-dirs-empty-string", doc(entry(log_dirs=["any", ""])), "'log_dirs' must list one directory"),
    ("log-dirs-not-list", doc(entry(log_dirs="any")), "'log_dirs' must list one directory"),
    ("no-partitions", doc(), "'partitions' lists no partition"),
    ("duplicate-partition", doc(entry(), entry(replicas=[3])), "t-0 appears more than once"),
    ("second-entry-bad", doc(entry(), entry(partition=1, replicas=[-1])), "t-1: 'replicas'"),
]


@pytest.mark.parametrize("text, words", [pytest.param(t, w, id=i) for i, t, w in MALFORMED])
def test_malformed(text, words):
    with pytest.raises(BadInput) as raised:
        parse(text)
    message = str(raised.value)
    assert words in message
    assert "\n" not in message
    assert raised.value.exit_code == EXIT_BAD_INPUT


VALID = [
    # id, text, require_replicas, moves
    ("one", doc(entry()), True, (PartitionMove("t", 0, (1, 2)),)),
    ("log-dirs", doc(entry(log_dirs=["any", "/d"])), True, (PartitionMove("t", 0, (1, 2), ("any", "/d")),)),
    ("extra-keys-ignored", json.dumps({"version": 1, "partitions": [entry(x=1)], "comment": "x"}), True,
     (PartitionMove("t", 0, (1, 2)),)),
    ("same-partition-two-topics", doc(entry(), entry(topic="u")), True,
     (PartitionMove("t", 0, (1, 2)), PartitionMove("u", 0, (1, 2)))),
    ("cancel-needs-no-replicas", doc({"topic": "t", "partition": 3}), False, (PartitionMove("t", 3, ()),)),
]


def test_an_empty_list_where_the_caller_allows_it():  # progress: a file listing nothing reports nothing
    assert parse(doc(), allow_empty=True) == ()


@pytest.mark.parametrize("text, require_replicas, moves", [pytest.param(t, r, m, id=i) for i, t, r, m in VALID])
def test_valid(text, require_replicas, moves):
    assert parse(text, require_replicas) == moves


def test_load_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(doc(entry(partition=-3)))
    with pytest.raises(BadInput, match=r"^--reassignment-json-file .*bad\.json: partitions\[0\]"):
        load(path)


LOAD_ERRORS = [
    # id, how to make the path, words
    ("missing", lambda p: p / "absent.json", "No such file"),
    ("directory", lambda p: p, "Is a directory"),
    ("not-utf8", lambda p: (p / "latin.json").write_bytes(b'{"version": 1, "partitions": ["\xff"]}') and p / "latin.json",
     "not UTF-8"),
]


@pytest.mark.parametrize("make, words", [pytest.param(m, w, id=i) for i, m, w in LOAD_ERRORS])
def test_load_errors(tmp_path, make, words):
    with pytest.raises(BadInput, match=words):
        load(make(tmp_path))


def test_rollback_json_round_trips():
    text = to_json({("t", 1): [3, 1], ("t", 0): [2]})
    assert parse(text) == (PartitionMove("t", 0, (2,), ("any",)), PartitionMove("t", 1, (3, 1), ("any", "any")))
