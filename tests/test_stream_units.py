"""The streaming pieces on plain data: source rows and their buckets, the bucket tracker and its state
blob, batch outputs, records against the shipped JSON Schema, Prometheus samples per detail level,
durations."""

import json
import math
import time
from dataclasses import replace
from operator import itemgetter

import jsonschema
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sinks import metric_names as m
from sinks import records
from sinks.prometheus import Picture, samples
from sinks.records import SCHEMA_PATH
from streaming.spark import codec
from streaming.vocabulary.durations import seconds
from streaming.vocabulary.errors import BadInput
from streaming.core.history import MEMORY_SCHEMA, REPORT_KINDS, Settings
from streaming.core.measure import READ, replica_progress
from streaming.core.snapshot_columns import from_snapshot
from streaming.spark.job import batch_rows, may_stop_now
from streaming.spark.outputs import assemble, poll_facts
from streaming.vocabulary.columns import from_rows as columns_of, state_codes
from streaming.vocabulary.replica_row import BOOL, INT, STRING
from streaming.vocabulary.snapshot import SCHEMAS, PollError, Snapshot, combine, from_rows, table
from streaming.spark.source import (CLUSTER_BUCKET, LISTED, POLL_TABLE, UNANSWERED, UNREPORTED, PollStreamReader, poll_rows, snapshot_rows,
                                    with_unreported)
from streaming.control import gate
from streaming.spark.stateful import (OUTPUT_COLUMNS, REPLICA_KIND, REPORTED_KINDS, read_memory, replica_frame,
                                      track_bucket, write_memory)
from streaming.vocabulary.defaults import RECORD_ROW_BUDGET
from streaming.vocabulary.states import MOVING_STATE_NAMES, PlanState

VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
BUCKETS = 4


def cluster_snapshot(ts_ms, copied, moving=True):
    partitions = [{"topic": f"t{i}", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1]} for i in range(6)]
    log_dirs = [{"broker": b, "log_dir": "d", "topic": f"t{i}", "partition": 0, "size": 1000 if b == 1 else copied,
                 "offset_lag": 0, "is_future": False} for i in range(6) for b in (1, 2)]
    return from_rows(
        ts_ms, "cluster-x",
        brokers=[{"broker": b, "alive": True} for b in (1, 2, 3)],
        log_dirs_answered=[{"broker": b} for b in (1, 2, 3)],
        partitions=partitions, log_dirs=log_dirs,
        reassignments=[{"topic": f"t{i}", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []}
                       for i in range(6)] if moving else [],
        topic_throttles=[{"topic": "t0", "kind": "leader", "value": "0:1"}, {"topic": "t1", "kind": "follower", "value": "*"}],
        broker_throttles=[{"broker": 1, "kind": "leader", "rate": 1000}])


def source_frame(poll_id, snapshot):
    return pd.DataFrame(snapshot_rows(poll_id, snapshot, BUCKETS), columns=["poll_id", "ts_ms", "bucket", "table", "payload"])


def test_every_bucket_gets_the_brokers_and_the_cluster_bucket_gets_the_cluster_tables():
    frame = source_frame(1, cluster_snapshot(1000, 10))
    assert set(frame.loc[frame["table"] == "brokers", "bucket"]) == set(range(BUCKETS)) | {CLUSTER_BUCKET}
    cluster = frame.loc[frame["bucket"] == CLUSTER_BUCKET, "table"]
    # log_dirs here holds only future logs, with who answered: the janitor's alter-log-dirs rule needs them
    # partitions here holds only those reassigning (their ISR): the reasons need it (streaming.core.diagnosis)
    assert set(cluster) == {"brokers", "log_dirs_answered", "log_dirs", "reassignments", "topic_throttles",
                            "broker_throttles", "partitions", POLL_TABLE}
    shipped = frame.loc[(frame["bucket"] == CLUSTER_BUCKET) & (frame["table"].isin(["log_dirs", "partitions"]))]
    decoded = codec.decode_tables(shipped["table"], shipped["payload"])
    assert decoded["log_dirs"] == []  # no future log in this poll
    snap = cluster_snapshot(1000, 10)
    assert sorted((p["topic"], p["partition"]) for p in decoded["partitions"]) == sorted(
        (r["topic"], r["partition"]) for r in snap["reassignments"])


def test_bucket_slices_reassemble_the_snapshot():
    snap = cluster_snapshot(1000, 10)
    frame = source_frame(1, snap)
    partitioned = frame.loc[(frame["bucket"] != CLUSTER_BUCKET) & (frame["table"] == "log_dirs")]
    log_dirs = codec.decode_tables(partitioned["table"], partitioned["payload"])["log_dirs"]
    key = itemgetter("topic", "partition", "broker")
    read = READ["log_dirs"]  # the columns the buckets read, of every log of a moving partition
    assert sorted(log_dirs, key=key) == sorted(({c: row[c] for c in read} for row in snap["log_dirs"]), key=key)


# (topic, partition) -> bucket with 4 and with 16 buckets, as pandas' object hash of the pair gave them when
# the job's state was first checkpointed: a different bucket would lose every tracked move's history.
BUCKETS_OF = [
    ("a", 0, 3, 3), ("a", 1, 2, 14), ("a", 7, 3, 15), ("a", 49, 0, 4),
    ("orders", 0, 0, 4), ("orders", 1, 1, 9), ("orders", 7, 0, 8), ("orders", 49, 3, 3),
    ("x-y_z.1", 0, 0, 0), ("x-y_z.1", 1, 1, 13), ("x-y_z.1", 7, 0, 12), ("x-y_z.1", 49, 3, 7),
    ("__consumer_offsets", 0, 1, 1), ("__consumer_offsets", 1, 0, 12), ("__consumer_offsets", 7, 1, 13),
    ("__consumer_offsets", 49, 2, 6),
]


def bucket_of(keys, buckets):
    """The bucket the source ships each (topic, partition) of `keys` to, read back from its slices."""
    rows = [{"topic": topic, "partition": partition, "replicas": [1], "adding": [2], "removing": []}
            for topic, partition in keys]
    where = {(row["topic"], row["partition"]): bucket
             for bucket, payloads in codec.encode_by_bucket({"reassignments": rows}, buckets).items()
             if "reassignments" in payloads for row in codec.decode(payloads["reassignments"])}
    return [where[key] for key in keys]


@pytest.mark.parametrize("topic, partition, of_4, of_16", BUCKETS_OF, ids=[f"{t}-{p}" for t, p, _, _ in BUCKETS_OF])
def test_a_partition_keeps_the_bucket_its_state_was_checkpointed_in(topic, partition, of_4, of_16):
    assert bucket_of([(topic, partition)], 4) == [of_4]
    assert bucket_of([(topic, partition)], 16) == [of_16]


def test_a_partition_s_bucket_does_not_depend_on_the_other_keys_hashed_with_it():
    keys = [(topic, partition) for topic, partition, _, _ in BUCKETS_OF]
    assert bucket_of(keys, 4) == [of_4 for _, _, of_4, _ in BUCKETS_OF]
    assert bucket_of(keys, 16) == [of_16 for _, _, _, of_16 in BUCKETS_OF]


def test_the_buckets_get_the_log_rows_progress_reads_and_it_reads_the_same_from_them():
    """Logs of partitions not reassigning stay out of the buckets unless a future log (an intra-broker move) is
    there; replica_progress over the buckets' slices is replica_progress over the whole poll."""
    snap = cluster_snapshot(1000, 10)
    steady = [{"broker": b, "log_dir": "d", "topic": "s", "partition": p, "size": 50, "offset_lag": 0,
               "is_future": False} for p in range(3) for b in (1, 2)]
    future = [{"broker": 2, "log_dir": "f", "topic": "s", "partition": 1, "size": 20, "offset_lag": 4,
               "is_future": True}]
    snap = from_rows(snap.ts_ms, snap.cluster_id, **{**snap.tables, "log_dirs": snap["log_dirs"] + steady + future})
    frame = source_frame(1, snap)
    partitioned = frame.loc[(frame["bucket"] != CLUSTER_BUCKET) & (frame["table"] == "log_dirs")]
    shipped = codec.decode_tables(partitioned["table"], partitioned["payload"])["log_dirs"]
    assert sorted((r["topic"], r["partition"], r["broker"], r["is_future"]) for r in shipped if r["topic"] == "s") == [
        ("s", 1, 1, False), ("s", 1, 2, False), ("s", 1, 2, True)]
    buckets = frame.loc[frame["bucket"] != CLUSTER_BUCKET]
    from_buckets = [row for _, rows in buckets.groupby("bucket")
                    for row in replica_progress(codec.snapshot_columns(rows["table"].tolist(), rows["payload"].tolist(),
                                                                       snap.ts_ms)).rows()]
    key = itemgetter("topic", "partition", "broker", "intra_broker")
    assert sorted(from_buckets, key=key) == sorted(replica_progress(from_snapshot(snap)).rows(), key=key)
    assert any(row["intra_broker"] for row in from_buckets)


def split_into_parts(snapshot):
    """The parts a poll is made of (streaming.cluster.poller): the cluster part and one log-dirs part per broker."""
    log_dirs = snapshot["log_dirs"]
    cluster = Snapshot(snapshot.ts_ms, snapshot.cluster_id,
                       {n: t for n, t in snapshot.tables.items() if n not in ("log_dirs", "log_dirs_answered")},
                       requests=5, duration_s=0.3)
    brokers = [Snapshot(snapshot.ts_ms, "", {"log_dirs": [row for row in log_dirs if row["broker"] == b],
                                             "log_dirs_answered": table("log_dirs_answered", [{"broker": b}])},
                        requests=1, duration_s=0.1 * b)
               for b in sorted(snapshot.answered_brokers())]
    return cluster, brokers


def parts_frame(poll_id, parts):
    rows = [row for part in parts for row in snapshot_rows(poll_id, part, BUCKETS)]
    return pd.DataFrame(rows, columns=["poll_id", "ts_ms", "bucket", "table", "payload"])


def track_all(frames):
    """Run the tracker over consecutive polls' source frames, bucket by bucket, like Spark would."""
    memories, outputs = {}, []
    for frame in frames:
        for bucket, rows in frame.loc[frame["bucket"] != CLUSTER_BUCKET].groupby("bucket"):
            memory, out = track_bucket(rows, memories.get(bucket), Settings())
            memories[bucket] = memory
            outputs.append(out)
    return memories, pd.concat(outputs, ignore_index=True)


def as_report(rows):
    """Report rows (dicts) as the history step gives them to replica_frame: columns."""
    return columns_of([{name: row[name] for name in REPORT_KINDS} for row in rows], REPORT_KINDS)


def reported(out):
    """The replica rows in tracker output frames (one blob a bucket and poll), as a frame."""
    return pd.DataFrame(codec.decode_columns(list(out["payload"]), REPORTED_KINDS).rows())


def test_tracker_reports_each_move_once_per_poll_and_completion_once():
    frames = [source_frame(1, cluster_snapshot(0, 0)), source_frame(2, cluster_snapshot(10_000, 500)),
              source_frame(3, cluster_snapshot(20_000, 1000, moving=False))]
    memories, blobs = track_all(frames)
    assert (blobs["kind"] == REPLICA_KIND).all()
    out = reported(blobs)
    assert out.groupby("poll_id").size().to_dict() == {1: 6, 2: 6, 3: 6}
    assert set(out.loc[out["poll_id"] == 3, "state"]) == {"COMPLETED"}
    assert out.loc[out["poll_id"] == 2, "copy_rate"].tolist() == [50.0] * 6
    assert all(memory is None for memory in memories.values())


def finished_snapshot(ts_ms, replicas):
    """The poll after every cluster_snapshot move left the list, each partition's replica set now `replicas`."""
    snapshot = cluster_snapshot(ts_ms, 1000, moving=False)
    partitions = [{**row, "replicas": replicas, "isr": replicas} for row in snapshot["partitions"]]
    return with_unreported(from_rows(ts_ms, "cluster-x", **{**snapshot.tables, "partitions": partitions}),
                           cluster_snapshot(0, 0)["reassignments"])


@pytest.mark.parametrize("replicas_after, state", [([1, 2], "COMPLETED"), ([1], "CANCELLED")],
                         ids=["completed", "cancelled"])
def test_a_move_the_watch_saw_but_no_batch_polled_is_reported_finished_once(replicas_after, state):
    """The idle job's first batch polls after a short move ended: the controller hands that move over with the
    batch's offsets (streaming.control.gate) and the batch reports its transition, then forgets it."""
    memories, blobs = track_all([source_frame(1, finished_snapshot(5_000, replicas_after))])
    out = reported(blobs)
    assert sorted(zip(out["topic"], out["broker"], out["state"])) == [(f"t{i}", 2, state) for i in range(6)]
    assert all(memory is None for memory in memories.values())


def test_a_handed_over_move_the_state_already_tracks_is_reported_once():
    frames = [source_frame(1, cluster_snapshot(0, 0)), source_frame(2, finished_snapshot(10_000, [1, 2]))]
    out = reported(track_all(frames)[1])
    assert out.groupby("poll_id").size().to_dict() == {1: 6, 2: 6}
    assert set(out.loc[out["poll_id"] == 2, "state"]) == {"COMPLETED"}


def test_the_offsets_carry_the_watch_handover_and_stay_put_while_idle(tmp_path):
    path = str(tmp_path / "gate.json")
    reader = PollStreamReader({"bootstrap": "127.0.0.1:1", "gate": path})
    moved = {"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []}
    gate.write(path, "left_unreported", time.time() * 1000, [moved])
    end = reader.latestOffset({"poll": 4}, None)
    assert end == {"poll": 5, UNREPORTED: [moved]}
    assert [p.unreported for p in reader.partitions({"poll": 4}, json.loads(json.dumps(end)))] == [(moved,)]
    gate.write(path, None, time.time() * 1000)
    assert reader.latestOffset(end, None) == end  # no batch: the same offset, handover included
    # The gate written before the controller heard the batch ending at `end` reported the move: not handed again.
    gate.write(path, "left_unreported", time.time() * 1000, [moved])
    assert reader.latestOffset(json.loads(json.dumps(end)), None) == {"poll": 6}


def test_the_offsets_carry_the_watch_list_while_the_controller_is_silent(tmp_path):
    path = str(tmp_path / "gate.json")
    reader = PollStreamReader({"bootstrap": "127.0.0.1:1", "gate": path})
    moving = {"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []}
    gate.write(path, "reassigning", time.time() * 1000, listed=[moving])
    end = json.loads(json.dumps(reader.latestOffset({"poll": 4}, None)))
    assert end == {"poll": 5, LISTED: [moving]}
    assert [p.listed for p in reader.partitions({"poll": 4}, end)] == [(moving,)]
    gate.write(path, "reassigning", time.time() * 1000)
    assert [p.listed for p in reader.partitions(end, reader.latestOffset(end, None))] == [None]


def test_the_offsets_carry_the_brokers_the_controller_holds_as_unresponsive(tmp_path):
    path = str(tmp_path / "gate.json")
    reader = PollStreamReader({"bootstrap": "127.0.0.1:1", "gate": path})
    gate.write(path, "reassigning", time.time() * 1000, unanswered={3: 1795665700123})
    end = json.loads(json.dumps(reader.latestOffset({"poll": 4}, None)))
    assert end == {"poll": 5, UNANSWERED: [[3, 1795665700123]]}
    assert [p.unanswered for p in reader.partitions({"poll": 4}, end)] == [{3: 1795665700123}]
    gate.write(path, "reassigning", time.time() * 1000)  # it answers again: nothing handed over
    assert [p.unanswered for p in reader.partitions(end, reader.latestOffset(end, None))] == [{}]


# A memory blob as the job wrote it from pandas frames (history.MEMORY_DTYPES before the core dropped pandas).
PANDAS_MEMORY_DTYPES = {"topic": "object", "partition": "int32", "broker": "int32", "intra_broker": "bool",
                        "first_seen_ms": "int64", "last_ts_ms": "int64", "last_numerator": "float64",
                        "last_denominator": "float64", "copy_rate": "float64", "leader_rate": "float64",
                        "last_growth_ms": "int64", "state": "object", "state_since_ms": "int64"}
MEMORY_ROWS = [
    {"topic": "t0", "partition": 0, "broker": 2, "intra_broker": False, "first_seen_ms": 0, "last_ts_ms": 10_000,
     "last_numerator": 500.0, "last_denominator": 1000.0, "copy_rate": 50.0, "leader_rate": 0.0,
     "last_growth_ms": 10_000, "state": "COPYING", "state_since_ms": 0},
    {"topic": "t1", "partition": 3, "broker": 1, "intra_broker": True, "first_seen_ms": 10_000, "last_ts_ms": 10_000,
     "last_numerator": None, "last_denominator": None, "copy_rate": None, "leader_rate": None,
     "last_growth_ms": 10_000, "state": "BROKER_OFFLINE", "state_since_ms": 10_000},
]


def pandas_memory_blob(rows):
    """The blob as streaming.spark.codec.encode wrote it from a memory frame (nulls were NaN there)."""
    frame = pd.DataFrame(rows).astype(PANDAS_MEMORY_DTYPES)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("blob", [pandas_memory_blob, lambda rows: codec.encode(rows, MEMORY_SCHEMA)],
                         ids=["written-from-pandas", "written-from-rows"])
def test_a_checkpointed_memory_decodes_to_its_rows(blob):
    """A checkpoint written before the state step went to columns resumes with its rows."""
    assert codec.decode(blob(MEMORY_ROWS)) == MEMORY_ROWS
    assert read_memory(blob(MEMORY_ROWS)).rows() == MEMORY_ROWS


def test_a_memory_written_from_columns_is_the_stored_format_an_older_job_reads():
    blob = write_memory(read_memory(codec.encode(MEMORY_ROWS, MEMORY_SCHEMA)))
    assert codec.read(blob).schema == codec.arrow_schema(MEMORY_SCHEMA)
    assert codec.decode(blob) == MEMORY_ROWS


def row_by_row_blob(rows, columns):
    """The blob as streaming.spark.codec.encode wrote it before it went column by column (pyarrow's from_pylist)."""
    table = pa.Table.from_pylist(rows, schema=codec.arrow_schema(columns))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


# A log row with every kind of null, and one missing a column: encoded column by column they read back as
# pyarrow's row-by-row conversion wrote them (a missing column is null in both).
LOG_ROWS = [{"broker": 1, "log_dir": "/d", "topic": "t", "partition": 0, "size": 5, "offset_lag": None, "is_future": False},
            {"broker": 2, "log_dir": None, "topic": "t", "partition": 1, "size": None, "is_future": True}]


@pytest.mark.parametrize("name, rows", [("log_dirs", LOG_ROWS), ("reassignments", [
    {"topic": "t", "partition": 0, "replicas": [1, 2], "adding": [2], "removing": []},
    {"topic": "u", "partition": 3, "replicas": None, "adding": [None, 4], "removing": None}]),
    ("memory", MEMORY_ROWS)], ids=["log-dirs-with-nulls-and-a-missing-column", "lists-and-null-lists", "memory"])
def test_a_table_encoded_column_by_column_decodes_as_row_by_row(name, rows):
    columns = MEMORY_SCHEMA if name == "memory" else SCHEMAS[name]
    assert codec.decode(codec.encode(rows, columns)) == codec.decode(row_by_row_blob(rows, columns))


def test_the_output_frame_carries_a_report_row_to_spark_unchanged():
    """Through Arrow, as Spark takes the frame and as the driver's batch reads it: ints stay ints, null stays None."""
    _, out = track_all([source_frame(1, cluster_snapshot(0, 0)), source_frame(2, cluster_snapshot(10_000, 500))])
    _, rows = batch_rows(pa.Table.from_pandas(out, preserve_index=False))
    report = [{**row, "previous_state": None, "numerator": None} for row in rows.rows()]
    frame = replica_frame(as_report(report), 3, 20_000)
    assert list(frame.columns) == OUTPUT_COLUMNS
    _, back = batch_rows(pa.Table.from_pandas(frame, preserve_index=False))
    assert back.rows() == [{**row, "poll_id": 3, "ts_ms": 20_000} for row in report]
    assert isinstance(back.rows()[0]["denominator"], int) and back.rows()[0]["numerator"] is None


def test_a_poll_combined_from_its_parts_tracks_exactly_like_one_made_whole():
    snapshots = [cluster_snapshot(0, 0), cluster_snapshot(10_000, 500), cluster_snapshot(20_000, 1000, moving=False)]
    whole = reported(track_all([source_frame(i, s) for i, s in enumerate(snapshots)])[1])
    combined = [combine([cluster, *brokers], s.ts_ms, 0.3) for s in snapshots for cluster, brokers in [split_into_parts(s)]]
    from_parts = reported(track_all([source_frame(i, s) for i, s in enumerate(combined)])[1])
    key = ["poll_id", "topic", "partition", "broker"]
    pd.testing.assert_frame_equal(from_parts.sort_values(key).reset_index(drop=True),
                                  whole.sort_values(key).reset_index(drop=True))


UNUSABLE_POLLS = [
    ("cluster-undescribed", "", ()),
    ("reassignments-failed", "cluster-x", (PollError("ListPartitionReassignments", "boom"),)),
    ("metadata-failed", "cluster-x", (PollError("Metadata", "boom"),)),
]


@pytest.mark.parametrize("cluster_id, errors", [pytest.param(c, e, id=i) for i, c, e in UNUSABLE_POLLS])
def test_an_unusable_poll_yields_only_its_facts_so_progress_and_history_stay_as_they_were(cluster_id, errors):
    snapshot = replace(cluster_snapshot(10_000, 1000, moving=False), cluster_id=cluster_id, errors=errors)
    rows = poll_rows(2, snapshot, BUCKETS)
    assert [(bucket, table) for _, _, bucket, table, _ in rows] == [(CLUSTER_BUCKET, POLL_TABLE)]
    facts = poll_facts(codec.decode(rows[0][4]))
    assert not facts.ok and facts.errors == errors


def test_poll_facts_of_parts_add_requests_and_errors_and_take_the_slowest_part():
    cluster, brokers = split_into_parts(cluster_snapshot(0, 0))
    brokers[1] = Snapshot(0, "", {}, requests=1, errors=(PollError("DescribeLogDirs", "timeout"),), duration_s=0.9)
    frame = parts_frame(1, [cluster, *brokers])
    cluster_rows = frame.loc[frame["bucket"] == CLUSTER_BUCKET]
    facts = poll_facts(codec.decode_tables(cluster_rows["table"], cluster_rows["payload"])[POLL_TABLE])
    assert (facts.cluster_id, facts.requests, facts.duration_s, facts.ok) == ("cluster-x", 8, 0.9, True)
    assert facts.errors == (PollError("DescribeLogDirs", "timeout"),)


def batch_output(batch_id=7, in_isr=(), states=None, budget=None, steady=False):
    """The records and picture of a second poll of six moving replicas (1000-byte targets, 500 copied);
    `in_isr`: topics whose replica already joined the ISR (it counts whole in every rollup); `states`: each
    replica's state instead of the step's; `budget`: the record row budget instead of the default; `steady`: no
    row in transition (in the second poll each went PENDING -> COPYING)."""
    frames = [source_frame(1, cluster_snapshot(0, 0)), source_frame(2, cluster_snapshot(10_000, 500))]
    _, out = track_all(frames)
    _, replicas = batch_rows(pa.Table.from_pandas(out.loc[out["poll_id"] == 2], preserve_index=False))
    replicas = replicas.with_columns(in_isr=replicas["in_isr"] | np.isin(replicas["topic"], list(in_isr)))
    if states is not None:
        order = np.argsort(replicas["topic"])
        replicas = replicas.take(order).with_columns(state=state_codes(states))
    if steady:
        replicas = replicas.with_columns(transition=np.zeros(len(replicas), bool))
    cluster = frames[1].loc[frames[1]["bucket"] == CLUSTER_BUCKET]
    tables = codec.decode_tables(cluster["table"], cluster["payload"])
    facts = poll_facts(tables.pop(POLL_TABLE))
    return assemble(replicas, tables, facts, batch_id, cluster="cluster-x",
                    record_budget=RECORD_ROW_BUDGET if budget is None else budget)


def test_batch_records_are_valid_and_keyed_as_the_contract_says():
    output = batch_output()
    keys = [key for key, _ in output.records]
    assert "t0:0:2" in keys and "t0:0" in keys and "reassignment" in keys
    for _, value in output.records:
        VALIDATOR.validate(json.loads(value))
    summary = json.loads(dict(output.records)["reassignment"])
    assert (summary["partitions_total"], summary["bytes_total"], summary["bytes_remaining"]) == (6, 6000, 3000)
    assert summary["rate_bytes_per_sec"] == pytest.approx(300.0)


def test_schema_rejects_a_record_outside_the_contract():
    value = json.loads(batch_output().records[0][1])
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate({**value, "progress": 1.5})
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate({**value, "unexpected": 1})


REPLICA = {"ts_ms": 10_000, "topic": "t0", "partition": 0, "broker": 2, "intra_broker": False, "state": "COPYING",
           "previous_state": "COPYING", "transition": False, "state_since_ms": 0, "numerator": 500,
           "denominator": 1000, "progress": 0.5, "in_isr": False, "copy_rate": 50.0, "eta_seconds": 10.0,
           "stalled_seconds": 0.0, "messages_behind_estimate": None, "remote_bytes": 0}
# Typical numbers of a replica record, and the value its JSON held when pandas' to_json (15 decimals)
# wrote it: the same values now.
RECORD_NUMBERS = [
    ("progress", 0.5, 0.5), ("progress", 0.375, 0.375), ("progress", 1.0, 1.0), ("progress", 0.1, 0.1),
    ("rate_bytes_per_sec", 300.0, 300.0), ("rate_bytes_per_sec", 12345678.9, 12345678.900000000372529),
    ("eta_seconds", 12.345, 12.345000000000001), ("eta_seconds", 86400.0, 86400.0),
    ("numerator", 123456789012, 123456789012), ("messages_behind_estimate", None, None),
    ("messages_behind_estimate", math.nan, None), ("eta_seconds", math.inf, None),
    ("remote_bytes", 36_000_000, 36_000_000), ("remote_bytes", math.nan, None),
]
RECORD_FIELD = {"rate_bytes_per_sec": "copy_rate"}


def replica_record(field, value):
    [(_, encoded)] = records.replica_records(columns_of([{**REPLICA, RECORD_FIELD.get(field, field): value}]),
                                             10_000, 7, "cluster-id-x", cluster="cluster-x")
    return json.loads(encoded)


@pytest.mark.parametrize("field, value, written", RECORD_NUMBERS,
                         ids=[f"{f}={v!r}" for f, v, _ in RECORD_NUMBERS])
def test_record_numbers_hold_the_values_they_held_when_pandas_wrote_them(field, value, written):
    record = replica_record(field, value)
    assert record[field] == written and type(record[field]) is type(written)


PARTITION = {"topic": "t0", "partition": 0, "state": "COPYING", "bytes_done": 500.0, "bytes_total": 1000.0,
             "progress": 0.5, "copy_rate": 50.0, "eta_seconds": 10.0, "remote_bytes": 38_000_000.0}
RECORD_ROWS = [
    # id, kind, row, fields the record must carry
    ("replica-moving", "replica", REPLICA,
     {"message": None, "numerator": 500, "rate_bytes_per_sec": 50.0, "intra_broker": False}),
    ("replica-new-future-log", "replica",
     {**REPLICA, "topic": 'we"ird\u00e9', "intra_broker": True, "previous_state": None, "transition": True,
      "numerator": None, "denominator": None, "progress": None, "copy_rate": 1 / 3, "messages_behind_estimate": 1e21},
     {"topic": 'we"ird\u00e9', "message": "NEW -> COPYING", "intra_broker": True, "numerator": None,
      "rate_bytes_per_sec": 1 / 3, "messages_behind_estimate": 1e21}),
    ("partition-half-done", "partition", PARTITION,
     {"numerator": 500, "denominator": 1000, "bytes_total": 1000, "bytes_remaining": 500, "message": None,
      "remote_bytes": 38_000_000}),
    ("partition-no-target", "partition",
     {**PARTITION, "bytes_done": 0.0, "bytes_total": 0.0, "progress": None, "copy_rate": 0.0, "eta_seconds": None},
     {"numerator": 0, "denominator": None, "bytes_total": 0, "bytes_remaining": 0, "progress": None}),
]


@pytest.mark.parametrize("kind, row, fields", [pytest.param(k, r, f, id=i) for i, k, r, f in RECORD_ROWS])
def test_replica_and_partition_records_are_json_dumps_text_of_their_values(kind, row, fields):
    write = records.replica_records if kind == "replica" else records.partition_records
    [(_, encoded)] = write(columns_of([row]), 10_000, 7, "cluster-id-x", cluster="cluster-x")
    value = json.loads(encoded)
    assert encoded == records.encode(value)
    assert {name: value[name] for name in fields} == fields
    assert (value["cluster"], value["cluster_id"]) == ("cluster-x", "cluster-id-x")
    VALIDATOR.validate(value)


def test_a_number_with_more_than_15_decimals_is_written_exactly():
    """The one difference from pandas, which rounded to 15 decimal places (0.333333333333333 here)."""
    assert replica_record("progress", 1 / 3)["progress"] == 1 / 3


MOVE_KINDS = {"topic": STRING, "partition": INT, "broker": INT, "intra_broker": BOOL, "transition": BOOL}


def moves(n, transitions=()):
    """`n` replica rows of 50-partition topics, the positions in `transitions` changing state this batch."""
    return columns_of([{"topic": f"topic-{i // 50}", "partition": i % 50, "broker": 2, "intra_broker": False,
                        "transition": i in transitions} for i in range(n)], MOVE_KINDS)


@pytest.mark.parametrize("n, budget", [(0, 5), (5, 5), (4, 5), (1, 1)], ids=["none", "at-budget", "under", "one"])
def test_every_row_is_written_every_batch_while_the_steady_ones_fit_the_budget(n, budget):
    for batch_id in range(3):
        assert records.rewritten(moves(n), batch_id, budget).all()


@pytest.mark.parametrize("n, budget", [(1_000, 100), (1_001, 100), (250, 7)], ids=["even", "one-over", "odd"])
def test_past_the_budget_each_steady_row_is_written_once_every_few_batches_and_every_transition_always(n, budget):
    transitions = {3, 77, n - 1}
    rows = moves(n, transitions)
    every = -(-(n - len(transitions)) // budget)
    written = [records.rewritten(rows, batch_id, budget) for batch_id in range(10, 10 + every)]
    counts = sum(mask.astype(int) for mask in written)
    steady = np.array([i not in transitions for i in range(n)])
    assert (counts[steady] == 1).all()  # once in `every` consecutive batches, whichever they are
    assert (counts[~steady] == every).all()  # transitions: every batch
    # A partition's replicas share their turn (a partition's record is written with theirs).
    partitions = np.array([i % 50 for i in range(n)])
    topics = np.array([i // 50 for i in range(n)])
    for mask in written:
        turn = mask & steady
        assert all(turn[(topics == t) & (partitions == p) & steady].all() for t, p in zip(topics[turn], partitions[turn]))


def test_a_batch_past_the_budget_writes_its_transitions_the_steady_rows_in_turn_and_every_rollup_row():
    output = batch_output(budget=2, steady=True)  # six moving replicas, one per partition
    keys = [key for key, _ in output.records]
    replicas = [key for key in keys if key.count(":") == 2]
    partitions = [key for key in keys if key.count(":") == 1]
    assert 0 < len(replicas) < 6 and sorted(partitions) == sorted(k.rsplit(":", 1)[0] for k in replicas)
    assert "reassignment" in keys and len(batch_output(budget=6, steady=True).records) == 6 + 6 + 1


@pytest.mark.parametrize("states, tracked, behind", [
    (["COPYING"] * 6, {f"t{i}" for i in range(6)}, set()),
    (["COMPLETED"] * 5 + ["FALLING_BEHIND"], {"t5"}, {1, 2}),
    (["CANCELLED"] * 6, set(), set()),
], ids=["moving", "finished-and-behind", "all-finished"])
def test_a_batch_says_what_its_state_still_tracks_what_it_reported_and_which_brokers_fall_behind(states, tracked,
                                                                                                behind):
    output = batch_output(states=states)
    assert output.reported_partitions() == {(f"t{i}", 0) for i in range(6)}
    assert output.tracked_partitions() == {(topic, 0) for topic in tracked}
    assert output.falling_behind_brokers() == behind


ROLLUP_AGREEMENT = [
    # record field, the partition-detail gauge that must show the same number
    ("numerator", m.REPLICA_COPIED_BYTES), ("denominator", m.REPLICA_TARGET_BYTES),
    ("progress", m.REPLICA_PROGRESS_RATIO), ("rate_bytes_per_sec", m.REPLICA_COPY_RATE),
    ("eta_seconds", m.REPLICA_ETA),
]


@pytest.mark.parametrize("field, metric", ROLLUP_AGREEMENT, ids=[f for f, _ in ROLLUP_AGREEMENT])
def test_partition_records_and_partition_metrics_agree_on_the_same_batch(field, metric):
    output = batch_output(in_isr=("t1",))  # bytes done (1000) differ from bytes copied (500) there
    records = {key: json.loads(value) for key, value in output.records}
    partition_rows = [v for v in records.values() if v["kind"] == "partition"]
    shown = {labels: value for metric_, _, labels, value in samples(output.picture, "partition") if metric_ is metric}
    assert partition_rows and len(shown) == len(partition_rows)
    for row in partition_rows:
        expected = row[field]
        assert shown.get((row["topic"], str(row["partition"]))) == pytest.approx(expected), (field, row)


def label_sets(picture, detail, metric):
    return {labels for metric_, names, labels, _ in samples(picture, detail) if metric_ is metric}


@pytest.mark.parametrize("detail, labels", [
    ("replica", ("t0", "0", "2")), ("partition", ("t0", "0")), ("topic", ("t0",))], ids=["replica", "partition", "topic"])
def test_metrics_detail_bounds_the_labels(detail, labels):
    picture = batch_output().picture
    assert labels in label_sets(picture, detail, m.REPLICA_PROGRESS_RATIO)
    assert len(label_sets(picture, detail, m.REPLICA_PROGRESS_RATIO)) == 6


def test_throttle_samples_count_entries_and_star_as_minus_one():
    values = {(metric.name, labels): value for metric, _, labels, value in samples(batch_output().picture)}
    assert values[(m.TOPIC_THROTTLED_REPLICAS.name, ("t0", "leader"))] == 1
    assert values[(m.TOPIC_THROTTLED_REPLICAS.name, ("t1", "follower"))] == -1
    assert values[(m.BROKER_THROTTLE_RATE.name, ("1", "leader"))] == 1000


def test_an_empty_picture_has_no_replica_series_and_every_moving_partition_state():
    names = [(metric.name, labels) for metric, _, labels, _ in samples(Picture())]
    assert not [n for n, _ in names if n.startswith("kafka_reassignment_replica_")]
    # COMPLETED and CANCELLED are records
    assert sorted(labels[0] for n, labels in names if n == m.PARTITIONS.name) == sorted(MOVING_STATE_NAMES)


@pytest.mark.parametrize("text, expected", [("500ms", 0.5), ("10s", 10), ("10m", 600), ("2h", 7200), ("15", 15)],
                         ids=["ms", "s", "m", "h", "bare"])
def test_durations(text, expected):
    assert seconds(text) == expected


@pytest.mark.parametrize("text", ["", "ten", "-1s", "0s", "5d"], ids=["empty", "word", "negative", "zero", "days"])
def test_bad_durations(text):
    with pytest.raises(BadInput):
        seconds(text)


@pytest.mark.parametrize("finished_at_request, trigger_active, finished_now, may_stop", [
    (7, False, 7, True),    # idle between triggers
    (-1, False, -1, True),  # before the first batch, idle
    (7, True, 7, False),    # batch 8 still running
    (7, True, 8, True),     # batch 8 finished; batch 9 started at once (batches back to back)
    (-1, True, -1, False),  # the first batch still running
    (-1, True, 0, True),
])
def test_the_job_stops_once_the_batch_running_at_the_request_finished(finished_at_request, trigger_active,
                                                                      finished_now, may_stop):
    assert may_stop_now(finished_at_request, trigger_active, finished_now) is may_stop


def test_a_batch_reports_the_active_plans_from_its_own_rows_and_tables():
    """The batch handler's plan rows (streaming.control.plans.report) on a real batch's replica rows and tables:
    six partitions in flight (500 of 1000 bytes copied), one pending; the record follows the schema."""
    from types import SimpleNamespace

    from streaming.control.plans.step import Step
    from streaming.control.ownership.plans import Plan
    from streaming.control.plans.scheduler import Limits
    from streaming.control.ownership.records import Move
    from streaming.spark.job import BatchHandler
    from streaming.control.plans.advancer import PlanStatus

    output = batch_output()
    moves = tuple(Move(f"t{i}", 0, (1,), (1, 2)) for i in range(7))
    plan = Plan("p1", PlanState.RUNNING, 0, 0, Limits(6), moves, throttle=10**6)
    states = {**{(f"t{i}", 0): "in_flight" for i in range(6)}, ("t6", 0): "pending"}
    seen = Step(plan, {}, states=states, sizes={(f"t{i}", 0): 1000 for i in range(7)})
    controller = SimpleNamespace(plan_statuses=lambda: {"p1": PlanStatus("p1", PlanState.RUNNING, plan=plan, seen=seen)})
    handler = BatchHandler(None, None, controller)
    [row] = handler._plan_rows(output, 10_000)
    assert (row["bytes_total"], row["bytes_remaining"], row["partitions"]["in_flight"]) == (7000, 4000, 6)
    assert row["eta_seconds"] is not None and row["rate_bytes_per_sec"] == pytest.approx(300.0)
    VALIDATOR.validate(records.plan_record(row, 10_000, 7, "cluster-id-x", cluster="cluster-x"))


@pytest.mark.parametrize("shown, more", [(20, []), (3, ["  ... and 3 more (every move: /metrics, the progress topic)"])],
                         ids=["all-fit", "the-worst-first"])
def test_a_batch_prints_its_summary_and_the_worst_moves_first(monkeypatch, shown, more):
    """Without --quiet a batch prints a line per move it shows, the worst first, at most DESCRIBED_ROWS: the six
    moves of batch_output, one of them STALLED."""
    from streaming.spark import outputs

    monkeypatch.setattr(outputs, "DESCRIBED_ROWS", shown)
    lines = outputs.describe(batch_output(states=["STALLED", "COPYING", "COPYING", "COPYING", "COPYING", "COPYING"]))
    lines = lines.splitlines()
    assert lines[0].startswith("6 replica moves") and "STALLED" in lines[1]
    assert len(lines) == 1 + min(shown, 6) + len(more) and lines[1 + min(shown, 6):] == more


def test_a_destination_dropped_before_any_batch_is_reported_cancelled():
    """The controller hands over a move whose target changed before any batch reported it with both destinations
    (streaming.control.duties.handover.with_dropped): the batch reports the one dropped as CANCELLED and the other
    as moving."""
    snapshot = cluster_snapshot(5_000, 500)
    dropped = [{**row, "adding": [*row["adding"], 3]} for row in snapshot["reassignments"]]
    memories, blobs = track_all([source_frame(1, with_unreported(snapshot, dropped))])
    out = reported(blobs)
    assert set(out.loc[out["broker"] == 3, "state"]) == {"CANCELLED"}
    assert "CANCELLED" not in set(out.loc[out["broker"] == 2, "state"])
