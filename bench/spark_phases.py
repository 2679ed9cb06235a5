"""Where a micro-batch's wall time goes inside Spark, batch by batch (bench/stream.py's phase table).

Three sources, each measured, none inferred by subtraction alone:
- the query's progress (StreamingQueryProgress.durationMs): latestOffset, planning (getBatch +
  queryPlanning), addBatch (the stateful query run by foreachBatch, the handler included), walCommit,
  commitOffsets, triggerExecution (the whole batch);
- the batch handler's own clock: `toArrow` of the stateful output (runs the source and stateful stages
  and brings the rows to the driver) and the handler's Python after it (the sinks);
- Spark's event log (a bench-only setting: `EVENT_LOG_ARGS` before the JVM starts), read after the
  session stops: per batch, the wall time of the source stage and of the stateful stage, and inside the
  stateful stage the task metrics Spark sums over its 4 tasks (2 at a time on 2 cores): Python code,
  Python worker start of a task, state store update and commit, JVM garbage collection. A reused worker
  (spark.python.worker.reuse) starts its clock for the next task as soon as it finished the last one
  (pyspark/daemon.py loops into worker.main, which reads the time before it waits for the task), so that
  metric holds the idle time between tasks and batches as well: not a cost of the batch.
"""

import glob
import json
import os
import statistics

# Uncompressed, so the bench reads it with the standard library.
EVENT_LOG_ARGS = "--conf spark.eventLog.enabled=true --conf spark.eventLog.compress=false --conf spark.eventLog.dir={}"

# (row label, key in a batch's phases); indented rows are parts of the row above. Seconds, per batch.
PHASE_ROWS = (
    ("latestOffset", "latestOffset"),
    ("planning (getBatch + queryPlanning)", "planning"),
    ("addBatch", "addBatch"),
    ("&nbsp;&nbsp;handler: toArrow (both stages + rows to the driver)", "to_arrow"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;source stage (poll or synthetic snapshot, shuffle write)", "source_stage"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;stateful stage (applyInPandasWithState)", "stateful_stage"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;Python code, summed over 4 tasks", "python_code"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;Python worker start of a task, summed (a reused worker's wait for it included)", "python_init"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;state store update, summed", "state_update"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;state store commit, summed", "state_commit"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;JVM GC, summed", "jvm_gc"),
    ("&nbsp;&nbsp;&nbsp;&nbsp;between the stages and after (scheduling, rows to the driver)", "to_arrow_rest"),
    ("&nbsp;&nbsp;handler: sinks (the driver's Python after toArrow)", "sinks"),
    ("&nbsp;&nbsp;foreachBatch dispatch (addBatch - handler)", "dispatch"),
    ("walCommit", "walCommit"),
    ("commitOffsets", "commitOffsets"),
    ("triggerExecution (the batch)", "triggerExecution"),
)
STATEFUL_METRICS = {"python_code": "time to execute Python code", "python_init": "time to initialize Python workers",
                    "state_update": "time to update", "state_commit": "time to commit changes",
                    "jvm_gc": "internal.metrics.jvmGCTime"}


def progress_phases(progress):
    """{phase: seconds} of one StreamingQueryProgress (a dict)."""
    ms = progress["durationMs"]
    return {"latestOffset": ms.get("latestOffset", 0) / 1000, "planning": (ms.get("getBatch", 0) + ms.get("queryPlanning", 0)) / 1000,
            "addBatch": ms.get("addBatch", 0) / 1000, "walCommit": ms.get("walCommit", 0) / 1000,
            "commitOffsets": ms.get("commitOffsets", 0) / 1000, "triggerExecution": ms["triggerExecution"] / 1000}


def _events(directory):
    for path in sorted(glob.glob(os.path.join(directory, "**", "*"), recursive=True)):
        if os.path.isfile(path) and not os.path.basename(path).startswith((".", "appstatus")):
            with open(path) as lines:
                yield from (json.loads(line) for line in lines if line.strip())


def stage_phases(directory, query_id):
    """{batch id: {phase: seconds}} of the query's stages in the event log under `directory`: the first stage
    of a batch's job is the source stage, the last the stateful stage."""
    batch_of_stage, stages = {}, {}
    for event in _events(directory):
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            properties = event.get("Properties") or {}
            if f"id = {query_id}" in properties.get("spark.job.description", ""):
                for position, stage_id in enumerate(sorted(event["Stage IDs"])):
                    batch_of_stage[stage_id] = (int(properties["streaming.sql.batchId"]), position,
                                                len(event["Stage IDs"]))
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            stages[info["Stage ID"]] = info
    phases = {}
    for stage_id, (batch_id, position, count) in batch_of_stage.items():
        info = stages.get(stage_id)
        if info is None:
            continue
        wall = (info["Completion Time"] - info["Submission Time"]) / 1000
        mine = phases.setdefault(batch_id, {})
        if position == 0:
            mine["source_stage"] = wall
        if position == count - 1:
            mine["stateful_stage"] = wall
            values = {a["Name"]: a.get("Value") for a in info.get("Accumulables", [])}
            for phase, name in STATEFUL_METRICS.items():
                mine[phase] = float(values.get(name, 0)) / 1000
    return phases


def batch_phases(progress, handler_timings, stages):
    """{batch id: {phase: seconds}}: the progress, the handler's (batch id, toArrow s, sinks s) and the
    event log's stages joined by batch id (batches missing from any of them are left out)."""
    timings = {batch_id: (to_arrow, sinks) for batch_id, to_arrow, sinks in handler_timings}
    joined = {}
    for item in progress:
        batch_id = item["batchId"]
        if batch_id not in timings or batch_id not in stages:
            continue
        phases = {**progress_phases(item), **stages[batch_id]}
        phases["to_arrow"], phases["sinks"] = timings[batch_id]
        phases["to_arrow_rest"] = phases["to_arrow"] - phases["source_stage"] - phases["stateful_stage"]
        phases["dispatch"] = phases["addBatch"] - phases["to_arrow"] - phases["sinks"]
        joined[batch_id] = phases
    return joined


def medians(batches):
    """{phase: p50 seconds} over a list of per-batch {phase: seconds}."""
    return {key: statistics.median(b[key] for b in batches) for _, key in PHASE_ROWS if batches}
