"""History over polls: rates, stall time, state and transitions. Pure.

`step(memory, current, now_ms)` takes what is remembered of some replica moves and this poll's replica rows
(streaming.core.measure's columns, plus `finished` rows for moves that left the reassignment), and returns
the memory to keep and the rows to report, all columns (streaming.vocabulary.columns). The clock is an argument;
each row is stepped against its remembered row found by key. The job steps a state bucket's moves at once
(streaming.spark.stateful), `progress --watch` every moving replica of its poll: the same step.

Rates are exponentially weighted over `rate_window_s` with the weight of each sample set by the time
since the previous one (polls need not be evenly spaced, and a restarted job resumes mid-window). Until a
move has been seen for a window, a sample weighs at least its share of the time since the move was first
seen, so the rate is then the mean since first seen: a throttled copy arrives in bursts (Kafka's quota lets a
fetch through, then holds the next until its window's average is under the rate), and a first sample taken
in a pause (0 B/s) must not hold the rate near 0 for a whole window, as it did when it seeded the average.
A move's ETA is not history's: it comes from the budget model over every move of the poll
(streaming.core.budget_view), where the moves meet.
"""

from dataclasses import dataclass

import numpy as np

from streaming.core.classify import classify
from streaming.vocabulary.columns import NO_STATE, Columns, empty, lookup, partition_ids, replica_keys
from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.replica_row import BOOL, FIELDS, FLOAT, INT, KEY, STATE, STRING
from streaming.vocabulary.snapshot import BOOL as BOOL_TYPE, FLOAT64, INT32, INT64, STRING as STRING_TYPE
from streaming.vocabulary.states import ReplicaState

# One remembered row per unfinished move. The job checkpoints these rows as an Arrow IPC blob with this
# schema, so names and types are a stored format: changing one makes old checkpoints unreadable.
MEMORY_SCHEMA = (("topic", STRING_TYPE), ("partition", INT32), ("broker", INT32), ("intra_broker", BOOL_TYPE),
                 ("first_seen_ms", INT64), ("last_ts_ms", INT64), ("last_numerator", FLOAT64),
                 ("last_denominator", FLOAT64), ("copy_rate", FLOAT64), ("leader_rate", FLOAT64),
                 ("last_growth_ms", INT64), ("state", STRING_TYPE), ("state_since_ms", INT64))
# The memory as columns: the state by value (the blob holds its name).
MEMORY_KINDS = {"topic": STRING, "partition": INT, "broker": INT, "intra_broker": BOOL, "first_seen_ms": INT,
                "last_ts_ms": INT, "last_numerator": FLOAT, "last_denominator": FLOAT, "copy_rate": FLOAT,
                "leader_rate": FLOAT, "last_growth_ms": INT, "state": STATE, "state_since_ms": INT}
# The report's columns: the replica row but the ETA, which the budget model adds.
REPORT_KINDS = {name: kind for name, kind in FIELDS.items() if name != "eta_seconds"}


@dataclass(frozen=True)
class Settings:
    stall_after_s: float = STALL_AFTER_S
    rate_window_s: float = RATE_WINDOW_S


def empty_memory():
    return empty(MEMORY_KINDS)


def smoothed(previous_rate, sample, dt_s, seen_s, window_s):
    """The rate blended with a new sample covering the last `dt_s` of the `seen_s` since the move was first
    seen, by weight 1 - exp(-dt/window) or, while that is larger, dt/seen (the mean since first seen: module
    docstring; 1 when seen is 0); a missing side (NaN) yields the other."""
    blend = ~np.isnan(previous_rate) & ~np.isnan(sample)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(seen_s != 0, dt_s / np.where(seen_s != 0, seen_s, 1.0), 1.0)
        weight = np.maximum(1.0 - np.exp(-dt_s / window_s), share)
        blended = previous_rate + weight * (sample - previous_rate)
    return np.where(blend, blended, np.where(np.isnan(previous_rate), sample, previous_rate))


def per_second(now, before, dt_s):
    """The growth from `before` to `now` per second; NaN when either is unknown or no time passed."""
    return (now - before) / dt_s


def elapsed_s(last_ts_ms, seen, now_ms):
    """Seconds since the remembered poll; NaN when first seen or when no time passed (no rate sample)."""
    return np.where(seen & (now_ms > last_ts_ms), (now_ms - last_ts_ms) / 1000.0, np.nan)


def step(memory, current, now_ms, settings=Settings()):
    """(memory to keep, report in `current` order). Finished rows are reported once and forgotten."""
    remembered_ids, current_ids = partition_ids((memory["topic"], memory["partition"]),
                                                (current["topic"], current["partition"]))
    at, seen = lookup(replica_keys(remembered_ids, memory["broker"], memory["intra_broker"]),
                      replica_keys(current_ids, current["broker"], current["intra_broker"]))

    def recalled(name, otherwise):
        values = memory[name]
        return np.where(seen, values[at] if len(values) else otherwise, otherwise)

    numerator, denominator = current["numerator"], current["denominator"]
    last_numerator, last_denominator = recalled("last_numerator", np.nan), recalled("last_denominator", np.nan)
    dt_s = elapsed_s(recalled("last_ts_ms", 0), seen, now_ms)
    first_seen_ms = recalled("first_seen_ms", now_ms)
    seen_s = (now_ms - first_seen_ms) / 1000.0
    window_s = settings.rate_window_s
    copy_rate = smoothed(recalled("copy_rate", np.nan), per_second(numerator, last_numerator, dt_s), dt_s, seen_s,
                         window_s)
    leader_rate = smoothed(recalled("leader_rate", np.nan), per_second(denominator, last_denominator, dt_s), dt_s,
                           seen_s, window_s)
    grew = ~seen | (numerator > last_numerator)
    last_growth_ms = np.where(grew, now_ms, recalled("last_growth_ms", now_ms))

    finished, in_isr = current["finished"], current["in_isr"]
    moving = ~(in_isr | finished)
    previous_state = recalled("state", NO_STATE).astype(np.int8)
    # A finished move is reported with the last bytes seen while it moved; a completed one is whole.
    reported_numerator = np.where(finished, last_numerator, numerator)
    facts = current.with_columns(
        numerator=reported_numerator, copy_rate=copy_rate, leader_rate=leader_rate,
        stalled_seconds=np.where(moving, (now_ms - last_growth_ms) / 1000.0, 0.0), observed_seconds=seen_s,
        was_in_sync=previous_state == ReplicaState.IN_SYNC.value)
    state = classify(facts, settings.stall_after_s, settings.rate_window_s)
    # A finished move is whole only when it completed; otherwise it reports how far it got.
    last_progress = np.minimum(last_numerator / np.maximum(last_denominator, 1.0), 1.0)
    progress = np.where(finished, np.where(state == ReplicaState.COMPLETED.value, 1.0, last_progress),
                        current["progress"])
    transition = previous_state != state
    state_since_ms = np.where(transition, now_ms, recalled("state_since_ms", now_ms))
    report = Columns({
        **{name: current[name] for name in ("topic", "partition", "broker", "intra_broker")},
        "numerator": reported_numerator, "denominator": np.where(finished, last_denominator, denominator),
        "progress": progress, "in_isr": in_isr, "leader": current["leader"], "offset_lag": current["offset_lag"],
        "messages_behind_estimate": current["messages_behind_estimate"], "remote_bytes": current["remote_bytes"],
        "copy_rate": copy_rate, "leader_rate": leader_rate, "stalled_seconds": facts["stalled_seconds"], "state": state,
        "previous_state": previous_state, "state_since_ms": state_since_ms.astype(np.int64),
        "transition": transition}, len(current))

    kept = ~finished
    # An unknown numerator keeps the last known one, so one missed poll does not reset the rate.
    kept_memory = Columns({
        **{name: current[name][kept] for name in KEY}, "first_seen_ms": first_seen_ms[kept].astype(np.int64),
        "last_ts_ms": np.full(int(kept.sum()), now_ms, dtype=np.int64),
        "last_numerator": np.where(np.isnan(numerator), last_numerator, numerator)[kept],
        "last_denominator": np.where(np.isnan(denominator), last_denominator, denominator)[kept],
        "copy_rate": copy_rate[kept], "leader_rate": leader_rate[kept],
        "last_growth_ms": last_growth_ms[kept].astype(np.int64), "state": state[kept],
        "state_since_ms": state_since_ms[kept].astype(np.int64)}, int(kept.sum()))
    return kept_memory, report
