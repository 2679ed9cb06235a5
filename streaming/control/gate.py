"""The gate between the job's controller and the streaming source: should the next trigger run a batch, and
which moves must it report whether or not its poll still lists them?

The controller (streaming.control.controller, in the `run` process) writes it every tick; the source's `latestOffset`
(streaming.spark.source) reads it. Spark runs a Python streaming source's offset calls in a Python process
of its own that the driver's JVM starts on the driver's machine, whatever the master: two processes on one
machine, so the gate is a small file there, replaced atomically.

It fails open: a missing, unreadable or stale gate (the controller stopped or is stuck in a long call) means
"run a batch", which is what the job would do without a controller.
"""

import json
import os
from dataclasses import dataclass

STALE_AFTER_MS = 30_000


@dataclass(frozen=True)
class Decision:
    """`unreported`: ListPartitionReassignments rows (streaming.vocabulary.snapshot "reassignments") of moves the
    controller listed that no batch has reported yet. The batch they are handed to carries them in its end offset:
    it reports each (finished, when its poll no longer lists it: a move shorter than the wait for a batch), and so
    does its replay after a crash, whose fresh poll may find them ended and whose state never saw them. `listed`:
    while the controller of the cluster answers nobody, the controller's last list (its door's `listed_or_last`),
    which the batch's poll takes instead of asking (no reassignment changes meanwhile); None otherwise. `unanswered`:
    ((broker, Unix ms), ...) of the brokers the controller's door holds as unresponsive and since when, which the
    batch's door holds too instead of waiting out a request deadline on each first (streaming.cluster.held)."""
    wanted: bool
    unreported: tuple = ()
    listed: tuple | None = None
    unanswered: tuple = ()


def write(path, reason, now_ms, unreported=(), listed=None, unanswered=None):
    """Record the controller's decision: `reason` is why a batch is wanted, None when none is; `unanswered`:
    {broker: Unix ms since it has not answered} (Decision)."""
    temporary = f"{path}.tmp"
    with open(temporary, "w") as out:
        json.dump({"reason": reason, "ts_ms": int(now_ms), "unreported": list(unreported),
                   "listed": None if listed is None else list(listed),
                   "unanswered": sorted([int(b), int(ms)] for b, ms in (unanswered or {}).items())}, out)
    os.replace(temporary, path)


def read(path, now_ms):
    try:
        with open(path) as gate:
            decision = json.load(gate)
        fresh = now_ms - int(decision["ts_ms"]) <= STALE_AFTER_MS
        listed = decision.get("listed")
        return Decision(wanted=not fresh or decision["reason"] is not None,
                        unreported=tuple(decision.get("unreported") or ()) if fresh else (),
                        listed=tuple(listed) if fresh and listed is not None else None,
                        unanswered=tuple((int(b), int(ms)) for b, ms in decision.get("unanswered") or ()) if fresh
                        else ())
    except (OSError, ValueError, KeyError, TypeError):
        return Decision(wanted=True)
