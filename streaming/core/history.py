"""What needs history: copy rate, leader growth rate, ETA, stall time, state transitions. Pure.

`step(previous, current, now_ms, settings)` takes the remembered rows of some replica moves and this
poll's replica rows (the progress core's output, plus `finished` rows for moves that left the
reassignment), and returns the rows to remember and the rows to report. The clock is an argument;
everything is vectorized over the rows of one state bucket.

Rates are exponentially weighted over `rate_window_s` with the weight of each sample set by the time
since the previous one (polls need not be evenly spaced, and a restarted job resumes mid-window).
"""

from dataclasses import dataclass

import numpy as np
import pandas as pd

from streaming.core.progress import eta_seconds, with_states
from streaming.vocabulary.replica_row import KEY
from streaming.vocabulary.defaults import RATE_WINDOW_S, STALL_AFTER_S
from streaming.vocabulary.states import ReplicaState

MEMORY_COLUMNS = KEY + ["first_seen_ms", "last_ts_ms", "last_numerator", "last_denominator", "copy_rate",
                        "leader_rate", "last_growth_ms", "state", "state_since_ms"]
MEMORY_DTYPES = {"topic": "object", "partition": "int32", "broker": "int32", "intra_broker": "bool",
                 "first_seen_ms": "int64", "last_ts_ms": "int64", "last_numerator": "float64",
                 "last_denominator": "float64", "copy_rate": "float64", "leader_rate": "float64",
                 "last_growth_ms": "int64", "state": "object", "state_since_ms": "int64"}
REPORT_HISTORY_COLUMNS = ["copy_rate", "leader_rate", "eta_seconds", "stalled_seconds", "observed_seconds",
                          "state", "previous_state", "state_since_ms", "transition"]


@dataclass(frozen=True)
class Settings:
    stall_after_s: float = STALL_AFTER_S
    rate_window_s: float = RATE_WINDOW_S


def empty_memory():
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in MEMORY_DTYPES.items()})


def _smoothed(previous_rate, sample, dt_s, window_s):
    weight = 1.0 - np.exp(-dt_s / window_s)
    blended = previous_rate + weight * (sample - previous_rate)
    return np.where(np.isnan(previous_rate), sample, np.where(np.isnan(sample), previous_rate, blended))


def step(previous, current, now_ms, settings=Settings()):
    """(memory to keep, report rows). Finished rows are reported once and forgotten."""
    rows = current.merge(previous.rename(columns={"state": "previous_state"}), on=KEY, how="left")
    seen_before = rows["last_ts_ms"].notna().to_numpy()
    dt_s = np.where(seen_before, (now_ms - rows["last_ts_ms"].astype("float64")) / 1000.0, np.nan)
    dt_s = np.where(dt_s > 0, dt_s, np.nan)
    numerator = rows["numerator"].astype("float64").to_numpy()
    denominator = rows["denominator"].astype("float64").to_numpy()
    last_numerator = rows["last_numerator"].astype("float64").to_numpy()
    last_denominator = rows["last_denominator"].astype("float64").to_numpy()

    copy_rate = _smoothed(rows["copy_rate"].astype("float64").to_numpy(), (numerator - last_numerator) / dt_s,
                          dt_s, settings.rate_window_s)
    leader_rate = _smoothed(rows["leader_rate"].astype("float64").to_numpy(),
                            (denominator - last_denominator) / dt_s, dt_s, settings.rate_window_s)
    grew = ~seen_before | (numerator > last_numerator)
    last_growth_ms = np.where(grew, now_ms, rows["last_growth_ms"].fillna(now_ms).astype("int64"))
    first_seen_ms = np.where(seen_before, rows["first_seen_ms"].fillna(now_ms), now_ms).astype("int64")

    report = rows[current.columns].copy()
    finished = report["finished"].to_numpy()
    # A finished move is reported with the last bytes seen while it moved; a completed one is whole.
    report.loc[finished, "numerator"] = pd.array(np.where(np.isnan(last_numerator), np.nan, last_numerator),
                                                 dtype="Int64")[finished]
    report.loc[finished, "denominator"] = pd.array(last_denominator, dtype="Int64")[finished]
    report["copy_rate"] = copy_rate
    report["leader_rate"] = leader_rate
    moving = ~(report["in_isr"].to_numpy() | report["finished"].to_numpy())
    report["stalled_seconds"] = np.where(moving, (now_ms - last_growth_ms) / 1000.0, 0.0)
    report["observed_seconds"] = (now_ms - first_seen_ms) / 1000.0
    report["eta_seconds"] = np.where(moving, eta_seconds(np.maximum(denominator - numerator, 0.0), copy_rate,
                                                         leader_rate), 0.0)
    report["was_in_sync"] = (rows["previous_state"] == ReplicaState.IN_SYNC.name).to_numpy()
    report = with_states(report, settings.stall_after_s, settings.rate_window_s)
    # A finished move is whole only when it completed; otherwise it reports how far it got.
    last_progress = np.minimum(last_numerator / np.maximum(last_denominator, 1.0), 1.0)
    completed = (report["state"] == ReplicaState.COMPLETED.name).to_numpy()
    report.loc[finished, "progress"] = np.where(completed, 1.0, last_progress)[finished]
    report["previous_state"] = rows["previous_state"].to_numpy()
    report["transition"] = (report["previous_state"] != report["state"]).to_numpy()
    report["state_since_ms"] = np.where(report["transition"], now_ms,
                                        rows["state_since_ms"].fillna(now_ms)).astype("int64")

    keep = ~finished
    memory = pd.DataFrame({
        **{c: report[c] for c in KEY},
        "first_seen_ms": first_seen_ms, "last_ts_ms": now_ms,
        # An unknown numerator keeps the last known one, so one missed poll does not reset the rate.
        "last_numerator": np.where(np.isnan(numerator), last_numerator, numerator),
        "last_denominator": np.where(np.isnan(denominator), last_denominator, denominator),
        "copy_rate": copy_rate, "leader_rate": leader_rate, "last_growth_ms": last_growth_ms,
        "state": report["state"], "state_since_ms": report["state_since_ms"],
    })[keep].astype(MEMORY_DTYPES).reset_index(drop=True)
    return memory, report.reset_index(drop=True)
