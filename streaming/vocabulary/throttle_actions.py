"""The janitor's value types: a ThrottleAction (what to remove or restore, and why) and the Policy that
decides how far the janitor may go, with their names as enums serialized by value (the strings of the throttle
records, the metrics' labels and the CLI's output). No logic beyond validation, no I/O."""

from dataclasses import dataclass
from enum import StrEnum


class Action(StrEnum):
    """The `action` of a throttle record and of kafka_reassignment_throttle_actions_total (the last two:
    --throttle auto)."""
    REMOVED = "removed"
    RESTORED = "restored"
    DRY_RUN = "dry_run"
    FAILED = "failed"
    RAISED = "raised"
    LOWERED = "lowered"


class Cleanup(StrEnum):
    """`run --throttle-cleanup`: which throttles the janitor may remove."""
    OWNED = "owned"
    ALL = "all"
    OFF = "off"


class Signal(StrEnum):
    """`--throttle auto`: what caused a rate change (streaming.control.throttles.autothrottle's rules, in order)."""
    STRESS = "stress"
    CEILING = "ceiling"
    FLOOR = "floor"
    FALLING_BEHIND = "falling_behind"
    BINDS = "binds"


REMOVED, RESTORED, DRY_RUN, FAILED, RAISED, LOWERED = THROTTLE_ACTION_NAMES = tuple(Action)
STEERED = (RAISED, LOWERED)  # --throttle auto: op SET, `restored_value` is the new rate
OWNED, ALL, OFF = POLICIES = tuple(Cleanup)
ALTER_LOG_DIRS = "alter_log_dirs"

PENDING_GRACE_MS = 10 * 60 * 1000  # a `pending` record older than this is an execute that died midway


@dataclass(frozen=True)
class Policy:
    cleanup: Cleanup = OWNED
    dry_run: bool = False
    release: frozenset = frozenset()  # request ids whose --no-auto-remove-throttle an explicit verify/cancel overrides
    pending_grace_ms: int = PENDING_GRACE_MS

    def __post_init__(self):
        if self.cleanup not in POLICIES:
            raise ValueError(f"throttle cleanup policy must be one of {', '.join(POLICIES)}: {self.cleanup!r}")

    @property
    def acts(self):
        return not self.dry_run and self.cleanup != OFF


@dataclass(frozen=True)
class ThrottleAction:
    scope: str  # topic | broker
    name: str  # topic name or broker id
    kind: str  # leader | follower | alter_log_dirs
    action: Action
    op: str  # subtract | delete | set
    entries: tuple[str, ...] = ()  # topic: the `p:b` entries taken out
    value: str | None = None  # the value before
    restored_value: str | None = None  # broker: the prior value put back
    reason: str = ""
    request_ids: tuple[str, ...] = ()
    signal: Signal | None = None  # --throttle auto: what caused the change

    @property
    def steered(self):
        return self.action in STEERED or (self.action == FAILED and self.signal is not None)
