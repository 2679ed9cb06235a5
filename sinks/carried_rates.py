"""What a picture of the controller's own poll cannot know, carried from the batch's picture it replaces.

A rate needs the batch's state (the rate window's samples), so the controller's own picture while a batch is late
(docs/architecture.md "The controller") has no measured copy rate and, where the throttles do not give one, no ETA. Shown as they
are, a move's rate and ETA would vanish from /metrics for as long as a batch is late (a slow Spark, a hung broker)
and come back with the next batch: gaps in every dashboard panel and alert over them. Instead each row in the same
state as in the last batch keeps that batch's rate, and its ETA less the seconds between the two polls, until a batch
measures them again; a row whose state changed (a broker that stopped answering) has none: nothing measured it.
"""

from dataclasses import replace

import numpy as np

from streaming.vocabulary.columns import lookup, partition_ids, replica_keys

# (column, whether it counts down with the time between the two polls)
MEASURED = (("copy_rate", False), ("eta_seconds", True))
SUMMARY_MEASURED = (("rate_bytes_per_sec", False), ("eta_seconds", True))


def carried(newer, older, older_poll_s):
    """`newer` (a Picture of the controller's own poll) with the copy rate and ETA it does not know taken from the
    same row of `older` (the Picture it replaces, whose rows come from the poll at `older_poll_s`): the ETA less the
    seconds between the two polls, never below 0. Rows `older` did not have stay unknown."""
    elapsed_s = max((newer.last_poll_s or 0.0) - older_poll_s, 0.0)
    summary = dict(newer.summary)
    for name, counts_down in SUMMARY_MEASURED:
        if summary.get(name) is None and older.summary.get(name) is not None:
            summary[name] = max(older.summary[name] - (elapsed_s if counts_down else 0.0), 0.0)
    return replace(newer, summary=summary,
                   replicas=_carry(newer.replicas, older.replicas, _replica_keys, elapsed_s),
                   partitions=_carry(newer.partitions, older.partitions, _partition_keys, elapsed_s),
                   topics=_carry(newer.topics, older.topics, _topic_keys, elapsed_s))


def _carry(newer, older, keys_of, elapsed_s):
    if not len(newer) or not len(older) or "topic" not in newer or "topic" not in older:
        return newer
    newer_keys, older_keys = keys_of(newer, older)
    at, found = lookup(older_keys, newer_keys)
    if "state" in newer and "state" in older:  # a move whose state changed (a broker stopped answering): not measured
        found &= newer["state"] == older["state"][at]
    columns = {}
    for name, counts_down in MEASURED:
        if name in newer and name in older:
            unknown = np.isnan(newer[name]) & found
            before = older[name][at] - (elapsed_s if counts_down else 0.0)
            columns[name] = np.where(unknown, np.maximum(before, 0.0), newer[name])
    return newer.with_columns(**columns)


def _partition_keys(newer, older):
    return partition_ids((newer["topic"], newer["partition"]), (older["topic"], older["partition"]))


def _replica_keys(newer, older):
    ids = _partition_keys(newer, older)
    return [replica_keys(pid, table["broker"], table.get("intra_broker", np.zeros(len(table), bool)))
            for pid, table in zip(ids, (newer, older))]


def _topic_keys(newer, older):
    return partition_ids((newer["topic"], np.zeros(len(newer), np.int64)),
                         (older["topic"], np.zeros(len(older), np.int64)))
