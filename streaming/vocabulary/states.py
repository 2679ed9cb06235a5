"""Replica move states, ordered by severity, serialized by name.

A partition's state is the worst state among its moving replicas, so the order here is the
order operators triage in: a broker that is down hides everything else; a finished move is
the least interesting thing there is.
"""

from enum import IntEnum


class ReplicaState(IntEnum):
    COMPLETED = 0  # partition no longer reassigning, broker in the replica set
    CANCELLED = 1  # partition no longer reassigning, broker not in the replica set
    IN_SYNC = 2  # joined the ISR while the partition still reassigns
    COPYING = 3  # bytes arriving
    PENDING = 4  # no bytes yet
    FALLING_BEHIND = 5  # the leader grows at least as fast as the copy: cannot finish at this throttle
    STALLED = 6  # not in ISR and no numerator growth for --stall-after
    BROKER_OFFLINE = 7  # destination or leader broker not alive


FINISHED_STATES = frozenset({ReplicaState.COMPLETED, ReplicaState.CANCELLED})
STATE_NAMES = tuple(state.name for state in ReplicaState)
SEVERITY = {state.name: state.value for state in ReplicaState}  # for vectorized .map over name columns
NAME_OF = {state.value: state.name for state in ReplicaState}


def worst(names):
    """The name of the most severe of some state names (a partition's state from its replicas')."""
    return NAME_OF[max(SEVERITY[name] for name in names)]
