"""What a finished Spark batch hands the job's controller: the batch computes progress, states and records and
writes them; it never acts on the cluster. The controller (streaming.control.controller) reads these findings on
its own thread and decides what to change."""

from dataclasses import dataclass


@dataclass(frozen=True)
class BatchFindings:
    batch_id: int
    snapshot: object  # streaming.vocabulary.snapshot.Snapshot: the cluster tables of the batch's poll
    tracks_moves: bool  # after this batch the state still tracks an unfinished move (its end is still to report)
    reported: frozenset  # (topic, partition) of every move the batch reported, finished ones included
    falling_behind: frozenset = frozenset()  # brokers a FALLING_BEHIND inter-broker move goes into or out of
    throttles_binding: frozenset = frozenset()  # brokers whose throttle sets some move's share (the budget model)
    plans_reported: tuple = ()  # request ids of the plans whose `plan` records the batch wrote
