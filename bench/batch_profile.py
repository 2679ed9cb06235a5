"""Where one micro-batch's time goes, outside Spark: the job's batch path in one process, stage by stage.

The same synthetic snapshot as bench/stream.py (`replicas` moves, one adding replica per partition, each
copying 1 MB per poll), through the source's rows, each state bucket's stateful step (as the executors run
it, one after the other here), the state blobs, and the driver's batch handler (Arrow rows to dicts,
assemble, the Prometheus picture), with no Spark scheduling and no Kafka writes. Two warm-up polls, then
`--polls` measured ones; each stage's seconds are the median over them, in CPU seconds of this process
(time.process_time: on the shared 2-core machine wall time swings with the other jobs' load, CPU time
much less). `--cprofile FILE` writes a
cProfile of the measured polls (read it with `python -m pstats FILE`).

    .venv/bin/python bench/batch_profile.py [--replicas 100000] [--polls 2] [--cprofile FILE]
"""

import argparse
import cProfile
import collections
import json
import os
import shutil
import subprocess
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402

from bench.results import markdown_table, write_section  # noqa: E402
from bench.stream import synthetic_snapshot  # noqa: E402
from sinks.prometheus import MonitorMetrics  # noqa: E402
from streaming.core.history import Settings  # noqa: E402
from streaming.spark import job, outputs, stateful  # noqa: E402
from streaming.spark.source import ROW_SCHEMA, STATE_BUCKETS, snapshot_rows, to_batch  # noqa: E402

WARMUP = 2
# Not streaming.spark.codec's table: this file also runs against older trees (--before) whose codec has none.
SPARK_TYPES = {"string": pa.string(), "binary": pa.binary(), "int": pa.int32(), "long": pa.int64(),
               "double": pa.float64(), "boolean": pa.bool_()}
OUTPUT_ARROW = pa.schema([(name, SPARK_TYPES[kind]) for name, (kind, _) in stateful.OUTPUT_FIELDS.items()])


class CountingWriter:
    """Writes nothing; keeps how many records the last write had."""

    def write(self, keyed_values):
        self.last = len(keyed_values)


class Timer:
    """Seconds per stage name, summed within a poll, kept per poll."""

    def __init__(self):
        self.polls, self.current = [], collections.Counter()

    @contextmanager
    def stage(self, name):
        started = time.process_time()
        try:
            yield
        finally:
            self.current[name] += time.process_time() - started

    def wrap(self, module, name, label):
        """Time every call of module.name under `label` (the module's own callers see the wrapper); a name
        the module does not have (older code, run with --before's tree on PYTHONPATH) is left out."""
        if not hasattr(module, name):
            return
        inner = getattr(module, name)

        def timed(*args, **kwargs):
            with self.stage(label):
                return inner(*args, **kwargs)
        setattr(module, name, timed)

    def next_poll(self):
        self.polls.append(self.current)
        self.current = collections.Counter()


class State:
    """A group state as the stateful function sees it (get / exists / update / remove)."""

    def __init__(self, blob=None):
        self.blob = blob

    @property
    def exists(self):
        return self.blob is not None

    @property
    def get(self):
        return (self.blob,)

    def update(self, value):
        self.blob = value[0]

    def remove(self):
        self.blob = None


class Frame:
    """What foreachBatch hands the handler: here only toArrow()."""

    def __init__(self, table):
        self.table = table

    def toArrow(self):
        return self.table


def _arrow(frame):
    """A bucket's output frame as Arrow (the cluster bucket's frame: null where it has no values)."""
    return pa.Table.from_pydict({field.name: pa.array(frame[field.name], field.type, from_pandas=True) for field in OUTPUT_ARROW},
                                schema=OUTPUT_ARROW)


def one_poll(poll_id, replicas, states, tracker, handler, timer):
    with timer.stage("source: synthetic snapshot"):
        snapshot = synthetic_snapshot(replicas, poll_id, int(time.time() * 1000))
    with timer.stage("source: snapshot tables to Arrow IPC slices"):
        batch = to_batch(snapshot_rows(poll_id, snapshot, STATE_BUCKETS)).to_pandas()
    outputs_ = []
    for bucket, rows in batch.groupby("bucket"):
        state = states.setdefault(bucket, State())
        with timer.stage("stateful step, all buckets"):
            outputs_ += list(tracker((bucket,), iter([rows.reset_index(drop=True)]), state))
    with timer.stage("bucket frames to Arrow (Spark's part, approximated)"):
        table = pa.concat_tables([_arrow(frame) for frame in outputs_])
    with timer.stage("driver: batch handler"):
        handler(Frame(table), poll_id)
    if handler.last_output is not None:
        timer.current["  records written (not seconds)"] = len(handler.last_output.records)
    timer.next_poll()


WHOLE = "one poll, in all"


def measure(replicas, polls, cprofile=None):
    """{stage label: [CPU seconds of each measured poll]}, stages in the order they first ran."""
    timer = Timer()
    # Names of this tree and of the older ones --before runs (a name a tree lacks is left out of its table).
    for module, name, label in (
            (stateful.codec, "decode", "  state + tables: Arrow IPC decode"),
            (stateful.codec, "snapshot_columns", "  tables: Arrow IPC to columns"),
            (stateful, "read_memory", "  state: Arrow IPC to columns"),
            (stateful, "replica_progress", "  replica_progress"),
            (stateful, "finished_replicas", "  finished_replicas"),
            (stateful, "step", "  history step (rates, classify)"),
            (stateful, "step_columns", "  history step in columns (rates, classify)"),
            (stateful, "replica_frame", "  output frame for Spark"),
            (stateful, "write_memory", "  state: columns to Arrow IPC"),
            (outputs, "partition_rollup", "    partition rollup"),
            (job, "partition_rollups", "  driver: partition rollup in columns"),
            (stateful.codec, "encode", "  state blobs and poll facts: Arrow IPC encode"),
            (job, "batch_rows", "  driver: Arrow rows to dicts (columns: Arrow to columns)"),
            (outputs, "diagnosed", "    budget model + reasons"),
            (outputs, "partition_etas", "    partition ETAs"),
            (outputs.records, "rewritten", "    records: which rows"),
            (outputs.records, "replica_records", "    replica records"),
            (outputs.records, "partition_records", "    partition records"),
            (outputs, "topic_rollup", "    topic rollup"),
            (job, "assemble", "  driver: assemble"),
            (stateful, "track_bucket", "  track_bucket")):
        timer.wrap(module, name, label)
    metrics = MonitorMetrics("bench")
    handler = job.BatchHandler(CountingWriter(), metrics, out=None)
    timer.wrap(metrics.snapshot, "update", "  driver: Prometheus picture")
    tracker = stateful.make_tracker(Settings())
    states = {}
    for poll_id in range(1, WARMUP + 1):
        one_poll(poll_id, replicas, states, tracker, handler, timer)
    profiler = cProfile.Profile() if cprofile else None
    for poll_id in range(WARMUP + 1, WARMUP + polls + 1):
        if profiler:
            profiler.enable()
        one_poll(poll_id, replicas, states, tracker, handler, timer)
        if profiler:
            profiler.disable()
    if profiler:
        profiler.dump_stats(cprofile)
    measured = timer.polls[WARMUP:]
    stages = {name: [poll[name] for poll in measured] for name in measured[0]}
    stages[WHOLE] = [sum(s for n, s in poll.items() if not n.startswith(" ")) for poll in measured]
    return stages


PAIR_ORDER = ["before", "after", "after", "before"]


def run_pairs(before_tree, replicas, polls):
    """({arm: {stage: pooled seconds}}, [(arm, load at start, load at end)]) of A B B A child runs."""
    before_tree = Path(before_tree).resolve()
    shutil.copytree(ROOT / "bench", before_tree / "bench", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "RESULTS.md"))
    trees = {"before": before_tree, "after": ROOT}
    pooled, loads = {"before": {}, "after": {}}, []
    with tempfile.TemporaryDirectory() as scratch:
        for n, arm in enumerate(PAIR_ORDER):
            out = Path(scratch) / f"{n}.json"
            print(f"{arm} (run {n + 1} of {len(PAIR_ORDER)}, {trees[arm]})...", flush=True)
            start_load = os.getloadavg()[0]
            subprocess.run([sys.executable, str(trees[arm] / "bench" / "batch_profile.py"), "--replicas",
                            str(replicas), "--polls", str(polls), "--json", str(out)],
                           cwd=trees[arm], env={**os.environ, "PYTHONPATH": str(trees[arm])}, check=True)
            loads.append((arm, start_load, os.getloadavg()[0]))
            for stage, seconds in json.loads(out.read_text()).items():
                pooled[arm][stage] = pooled[arm].get(stage, []) + seconds
    return pooled, loads


TITLE = "Where a batch's time goes at 100,000 moving replicas (bench/batch_profile.py --before)"


def _median(seconds):
    return f"{statistics.median(seconds):.2f}" if seconds else "-"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=100_000)
    parser.add_argument("--polls", type=int, default=2)
    parser.add_argument("--cprofile", help="write a cProfile of the measured polls to this file")
    parser.add_argument("--before", help="a tree with older code: run paired against it, write RESULTS.md")
    parser.add_argument("--json", help="(child of --before) write {stage: seconds per poll} here")
    args = parser.parse_args()
    if args.before:
        pooled, loads = run_pairs(args.before, args.replicas, args.polls)
        stages = list(pooled["after"]) + [s for s in pooled["before"] if s not in pooled["after"]]
        table = markdown_table(["stage (indented: part of the stage above)", "before CPU s", "after CPU s"],
                               [[stage.replace("  ", "&nbsp;&nbsp;"), _median(pooled["before"].get(stage, [])),
                                 _median(pooled["after"].get(stage, []))] for stage in stages])
        print(table)
        write_section(TITLE, f"{args.replicas} synthetic moving replicas (bench/stream.py's snapshot), the job's "
                      "batch path in one process outside Spark: source rows, the 4 buckets' stateful step one "
                      "after the other, the driver's batch handler (no Kafka writes). CPU seconds of the process "
                      f"per poll, median of {args.polls} polls after {WARMUP} warm-up per run, runs A B B A, two "
                      "per arm pooled; 1-minute load average at the start / end of each run: "
                      + ", ".join(f"{arm} {a:.1f} / {b:.1f}" for arm, a, b in loads) + ".\n\n" + table)
        return
    stages = measure(args.replicas, args.polls, args.cprofile)
    if args.json:
        Path(args.json).write_text(json.dumps(stages))
        return
    print(f"{args.replicas} replicas, CPU seconds, median of {args.polls} polls after {WARMUP} warm-up, "
          f"1-minute load {os.getloadavg()[0]:.1f}")
    for name, seconds in stages.items():
        print(f"{name:<55} {statistics.median(seconds):7.2f}")


if __name__ == "__main__":
    main()
