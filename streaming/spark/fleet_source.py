"""The fleet job's streaming source: one micro-batch polls every cluster of the fleet that wants a batch, one input
partition per cluster, so that the clusters' polls run side by side on the executors (on a Spark cluster, spread over
its workers). docs/architecture.md "The fleet job".

Each cluster keeps the offsets of streaming.spark.source (its poll number and what its controller hands over), under
its name: {"clusters": {NAME: {"poll": n, ..., "target": how to reach it}}}. Its own controller's gate decides whether
it is polled (streaming.control.gate), and its own trigger interval how often: a cluster whose interval is longer than
the job's trigger is polled only once that long has passed since its last poll. A batch is planned when any cluster
advanced, and polls only those. The target (servers, client file, timeout) travels in the offset, so a replay after a
restart polls the clusters the batch was planned for even if the fleet file changed since.

A cluster's poll is bounded (`poll_deadline`, twice the job's trigger): a cluster that hangs is reported as a failed
poll once the deadline passes, and the batch, which every other cluster's poll is part of, ends. Its poll goes on in a
thread of its own; until that thread ends, the worker process reports that cluster's later polls as failed at once
instead of starting another on the same door.
"""

import json
import os
import threading
import time

from pyspark.sql.datasource import DataSource, DataSourceStreamReader

from streaming.spark.job_log import log_line
from streaming.spark.source import (SOURCE_SCHEMA, STATE_BUCKETS, Target, advanced, decision_of, failed_poll,
                                    partition_of, poll_rows, polled_rows, to_batch)
from streaming.vocabulary.defaults import TRIGGER_INTERVAL_S

FLEET_SOURCE_NAME = "kafka_reassignment_fleet_poll"
CLUSTERS = "clusters"  # the offsets' key of the clusters' own offsets
TARGET = "target"  # a cluster offset's key of where it is polled
# A cluster polled every `interval_s` is due again after this share of it: triggers fire a little early or late.
DUE_SHARE = 0.9


def roster_option(members):
    """The source's `roster` option: [(Target, gate path, interval s)] as JSON."""
    return json.dumps([{TARGET: target.options(), "gate": gate_path, "interval_s": interval_s}
                       for target, gate_path, interval_s in members])


def roster_of(text):
    return [(Target.of(member[TARGET]), member["gate"], float(member["interval_s"])) for member in json.loads(text)]


def fleet_offset(start, roster, now_s, last_polled):
    """The end offset after `start` (pure but for `last_polled`, {name: Unix s} of each cluster's last planned poll,
    updated for the clusters it advances): each cluster of `roster` [(Target, gate Decision, interval s)] advanced
    as its gate decides once its interval has passed; clusters no longer in the roster left out. `start` itself when
    no cluster advanced: Spark plans no batch."""
    before = start.get(CLUSTERS, {})
    end, moved = {}, False
    for target, decision, interval_s in roster:
        first = before.get(target.name, {"poll": 0})
        due = now_s - last_polled.get(target.name, float("-inf")) >= DUE_SHARE * interval_s
        cluster_end = advanced(first, decision) if due else first
        if cluster_end is not first:
            moved = True
            last_polled[target.name] = now_s
            cluster_end = {**cluster_end, TARGET: target.options()}
        end[target.name] = cluster_end
    return {CLUSTERS: end} if moved else start


def fleet_partitions(start, end):
    """One input partition per cluster whose poll number moved from `start` to `end`."""
    before = start.get(CLUSTERS, {})
    return [partition_of(cluster_end, Target.of(cluster_end[TARGET]))
            for name, cluster_end in end.get(CLUSTERS, {}).items()
            if int(cluster_end["poll"]) > int(before.get(name, {"poll": 0})["poll"])]


_polls = {}  # per worker process: Target -> the thread of its poll under way
POLLS_HERE = "this executor's worker process polls it"  # logged once per cluster and process: where the polls run


def _first_poll_here(target):
    if target not in _polls:
        log_line(f"[{target.name}] {POLLS_HERE} (pid {os.getpid()})")


def bounded_rows(target, partition, buckets, deadline_s):
    """The rows of `target`'s poll, or a failed poll's once `deadline_s` has passed (its poll goes on alone)."""
    _first_poll_here(target)
    running = _polls.get(target)
    if running is not None and running.is_alive():
        return _failed_rows(partition, buckets, f"its poll before, started on this executor, has not ended (longer "
                                                f"than {deadline_s:g}s)", 0.0)
    answer = {}
    started = time.monotonic()
    thread = threading.Thread(target=lambda: answer.update(rows=polled_rows(target, partition, buckets)),
                              name=f"poll {target.name}", daemon=True)
    _polls[target] = thread
    thread.start()
    thread.join(deadline_s)
    if "rows" in answer:
        return answer["rows"]
    return _failed_rows(partition, buckets, f"no answer within {deadline_s:g}s (twice the trigger interval)",
                        time.monotonic() - started)


def _failed_rows(partition, buckets, why, duration_s):
    return poll_rows(partition.poll_id, failed_poll(int(time.time() * 1000), TimeoutError(why), duration_s), buckets)


class FleetStreamReader(DataSourceStreamReader):
    def __init__(self, options):
        self.options = dict(options)
        self.buckets = int(self.options.get("buckets", STATE_BUCKETS))
        self.deadline_s = float(self.options.get("poll_deadline", 2 * TRIGGER_INTERVAL_S))
        self.last_polled = {}

    def initialOffset(self):
        return {CLUSTERS: {}}

    def latestOffset(self, start, limit):
        now_s = time.time()
        roster = [(target, decision_of(gate_path, now_s * 1000), interval_s)
                  for target, gate_path, interval_s in roster_of(self.options["roster"])]
        return fleet_offset(start, roster, now_s, self.last_polled)

    def partitions(self, start, end):
        return fleet_partitions(start, end)

    def read(self, partition):
        target = partition.target
        return iter([to_batch(bounded_rows(target, partition, self.buckets, self.deadline_s), target.name)])

    def commit(self, end):
        pass


class FleetDataSource(DataSource):
    """Options: roster (roster_option: the clusters, fixed for the query's life: a reload of the fleet file starts the
    query anew, streaming.spark.driver), buckets, poll_deadline (s)."""

    @classmethod
    def name(cls):
        return FLEET_SOURCE_NAME

    def schema(self):
        return SOURCE_SCHEMA

    def streamReader(self, schema):
        return FleetStreamReader(self.options)
