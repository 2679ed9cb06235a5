"""Snapshot tables to and from bytes (Arrow IPC streams), and their split into state buckets.

The streaming source ships each snapshot table slice as one binary cell, so Spark moves a few dozen
rows per poll whatever the cluster's size, and the stateful operator decodes them vectorized.
"""

import pandas as pd
import pyarrow as pa

from streaming.vocabulary.snapshot import PARTITION_KEYED, SCHEMAS


def encode(frame, schema=None):
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decode(payload):
    return pa.ipc.open_stream(payload).read_all().to_pandas()


def encode_table(name, frame):
    return encode(frame, SCHEMAS[name])


def decode_tables(names, payloads):
    """{table name: DataFrame}, concatenating every payload of the same table."""
    frames = {}
    for name, payload in zip(names, payloads):
        frames.setdefault(name, []).append(decode(payload))
    return {name: pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
            for name, parts in frames.items()}


def bucket_of(frame, buckets):
    """A stable bucket per (topic, partition): the same in every process and every run."""
    if frame.empty:
        return pd.Series([], dtype="int64")
    hashed = pd.util.hash_pandas_object(frame[["topic", "partition"]], index=False)
    return (hashed % buckets).astype("int64")


def split_by_bucket(tables, buckets):
    """{bucket: {table name: slice}} for the partition-keyed ones of `tables` ({name: frame}); every
    bucket appears, even empty."""
    split = {b: {} for b in range(buckets)}
    for name in PARTITION_KEYED:
        frame = tables.get(name)
        if frame is None or frame.empty:
            continue
        for bucket, part in frame.groupby(bucket_of(frame, buckets).to_numpy()):
            split[int(bucket)][name] = part.reset_index(drop=True)
    return split

