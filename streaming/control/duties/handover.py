"""What the batch handler's thread (Spark's foreachBatch) and the controller's threads share, in one place under one
lock: the findings of the batches finished since the last tick, what the last batch still tracks, when batches ran
and wrote, and the moves listed that no batch has reported yet. Every other piece of the controller's state is its
own thread's; the busy look reads only `facts()`, a frozen copy."""

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class BatchFacts:
    """The batches as of one moment (`Handover.facts`)."""
    batches_done: int
    last_batch_id: int
    tracks_moves: bool
    throttles_to_clear: bool
    last_batch_s: float  # clock seconds the last successful batch was handed over
    last_batch_ran_s: float  # ... the last batch ran, its poll failed or not
    writing_since_s: float | None  # a batch waits for its records' acknowledgement since then
    unreported: tuple  # ListPartitionReassignments rows of moves no batch has reported yet, oldest first


def as_listed(move):
    """An ownership Move as ListPartitionReassignments listed it while it ran (streaming.vocabulary.snapshot
    "reassignments": the target, then the replicas it removes)."""
    removing = [b for b in move.sources if b not in move.target]
    return {"topic": move.topic, "partition": move.partition, "replicas": [*move.target, *removing],
            "adding": list(move.destinations), "removing": removing}


def with_dropped(row, before):
    """`row`, the move of a partition as listed now, still adding the replicas `before` (the row kept for it, or None)
    added: a destination dropped by a changed target before any batch reported the move is reported too (its
    CANCELLED), not lost with the row it was listed in."""
    if before is None:
        return row
    dropped = [b for b in before["adding"] if b not in row["adding"]]
    return {**row, "adding": [*row["adding"], *dropped]} if dropped else row


class Handover:
    def __init__(self, started_s):
        self._lock = threading.Lock()
        self._findings = []  # BatchFindings handed over since the last tick, oldest first
        self._batches_done = 0
        self._last_batch_id = -1
        self._tracks_moves = False
        self._throttles_to_clear = False
        self._last_batch_s = self._last_batch_ran_s = started_s
        self._writing_since_s = None
        # Moves listed that no batch has reported yet ((topic, partition) -> ListPartitionReassignments row),
        # and the partitions a batch reported while they are still listed (not handed over again).
        self._unreported, self._reported = {}, set()

    def hand_over(self, findings, clears_all, now_s):
        """After a successful batch (streaming.control.findings.BatchFindings); `clears_all`: under
        `--throttle-cleanup all`, whether its poll shows throttles to clear."""
        with self._lock:
            self._batches_done += 1
            self._last_batch_id = findings.batch_id
            self._tracks_moves = findings.tracks_moves
            self._throttles_to_clear = clears_all
            self._last_batch_s = self._last_batch_ran_s = now_s
            self._reported |= findings.reported
            for partition in findings.reported:
                self._unreported.pop(partition, None)
            self._findings.append(findings)

    def throttles_read(self, clears_all):
        """The controller read the throttles itself (no batch ran for a trigger); `clears_all`: as in `hand_over`,
        from that read. The newest read decides, a batch's or this one."""
        with self._lock:
            self._throttles_to_clear = clears_all

    def batch_ran(self, now_s):
        with self._lock:
            self._last_batch_ran_s = now_s

    def writing(self, since_s):
        """A batch's durable write began at `since_s` (None: it ended)."""
        with self._lock:
            self._writing_since_s = since_s

    def take(self):
        """The findings handed over since the last take, oldest first."""
        with self._lock:
            taken, self._findings = self._findings, []
        return taken

    def note_listed(self, listed, unseen):
        """Moves adding a replica that no batch reported are kept until one does (`hand_over`), listed or not;
        `listed`: the tick's list; `unseen`: (topic, partition) -> ownership Move of the moves that came and went
        between two looks."""
        with self._lock:
            self._reported &= set(listed)  # a partition that left and moves again is a new move
            self._keep([*listed.items(), *((p, as_listed(m)) for p, m in unseen.items())])

    def note_shown(self, rows):
        """The moves of a whole poll the controller showed on /metrics (its first look, a poll while a batch is late):
        kept like listed ones, so every replica /metrics showed has its records, its end included."""
        with self._lock:
            self._keep([((row["topic"], row["partition"]), row) for row in rows])

    def _keep(self, moves):
        for partition, row in moves:
            if row["adding"] and partition not in self._reported:
                self._unreported[partition] = with_dropped(row, self._unreported.get(partition))

    def facts(self):
        with self._lock:
            return BatchFacts(self._batches_done, self._last_batch_id, self._tracks_moves, self._throttles_to_clear,
                              self._last_batch_s, self._last_batch_ran_s, self._writing_since_s,
                              tuple(self._unreported.values()))
