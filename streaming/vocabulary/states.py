"""Every set of states, each an enum defined once.

Replica move states (`ReplicaState`) are ordered by severity and serialized by name: a partition's state is the
worst state among its moving replicas, so the order here is the order operators triage in - a broker that is
down hides everything else; a finished move is the least interesting thing there is.

The states of what the job's controller writes to the ownership topic are serialized by value (the strings in
the records, the progress topic's `plan` records and the plan metrics' `state` label): an ownership record's
(`OwnershipState`; a plan's wave is an ownership record, so a wave's state is one of these), a plan's
(`PlanState`) and a partition's within a plan (`PlanPartitionState`).

A replica's status in `progress --reassignment-json-file` (`Kip179Status`) is worded as Kafka's own
kafka-reassign-partitions --verify words it, and serialized by value.
"""

from enum import IntEnum, StrEnum


class ReplicaState(IntEnum):
    COMPLETED = 0  # partition no longer reassigning, broker in the replica set
    CANCELLED = 1  # partition no longer reassigning, broker not in the replica set
    IN_SYNC = 2  # joined the ISR while the partition still reassigns
    COPYING = 3  # bytes arriving
    PENDING = 4  # no bytes yet
    # the job gets no answer from the destination or the leader while Kafka lists that broker alive: the move's
    # progress is not seen (a hung broker before Kafka fences it, a network path the job lacks and Kafka has)
    UNOBSERVED = 5
    FALLING_BEHIND = 6  # the leader grows at least as fast as the copy: cannot finish at this throttle
    STALLED = 7  # not in ISR and no numerator growth for --stall-after
    BROKER_OFFLINE = 8  # destination or leader broker not alive by Kafka's view, or its connection refused


FINISHED_STATES = frozenset({ReplicaState.COMPLETED, ReplicaState.CANCELLED})
STATE_NAMES = tuple(state.name for state in ReplicaState)
# The states /metrics shows: a finished move's series vanish (its COMPLETED or CANCELLED is a progress-topic record).
MOVING_STATE_NAMES = tuple(state.name for state in ReplicaState if state not in FINISHED_STATES)


class OwnershipState(StrEnum):
    PENDING = "pending"  # written before any config is altered; its request may still be setting throttles
    STARTED = "started"  # Kafka accepted its moves (a wave: only those accepted are kept)
    ABORTED = "aborted"  # nothing was accepted, or setting its throttles failed: what it set is taken out
    DONE = "done"  # every throttle it claimed is gone (removed, restored, or changed by someone else)


class PlanState(StrEnum):
    RUNNING = "running"  # submits a wave as slots free
    PAUSED = "paused"  # submits nothing; what moves keeps moving
    CANCELLED = "cancelled"  # its partitions in flight reverted, its pending ones never submitted
    DONE = "done"  # nothing pending or in flight is left


class PlanPartitionState(StrEnum):
    """In the order of a plan's report and its records' `partitions` object."""
    PENDING = "pending"  # waiting for a slot
    IN_FLIGHT = "in_flight"  # submitted by the plan and reassigning (or finishing) to its target
    DONE = "done"  # at its target
    CANCELLED = "cancelled"  # submitted, then reverted: never submitted again
    LEFT_ALONE = "left_alone"  # reassigned or moved by someone else: never overwritten
    FAILED = "failed"  # the plan can never move it: its topic deleted, or refused by Kafka for good


class Kip179Status(StrEnum):
    """In the order of streaming.core.kip179's rules; "Behind: N bytes (x%)" is BEHIND's, with its numbers."""
    UNKNOWN_TOPIC = "Unknown topic"
    UNKNOWN_PARTITION = "Unknown partition"
    UNKNOWN_BROKER = "Unknown broker"
    NOT_HOSTED = "Broker does not host this partition"
    IN_SYNC = "In sync"
    BEHIND = "Behind"  # the prefix of every "Behind: ..." status; also its name when statuses are counted
    BEHIND_UNKNOWN = "Behind: unknown"
