"""The janitor's value types: a ThrottleAction (what to remove or restore, and why) and the Policy that
decides how far the janitor may go, with their names. No logic beyond validation, no I/O."""

from dataclasses import dataclass

# The `action` of a throttle record and of kafka_reassignment_throttle_actions_total (the last two: --throttle auto).
REMOVED, RESTORED, DRY_RUN, FAILED, RAISED, LOWERED = THROTTLE_ACTION_NAMES = (
    "removed", "restored", "dry_run", "failed", "raised", "lowered")
STEERED = (RAISED, LOWERED)  # --throttle auto: op SET, `restored_value` is the new rate
OWNED, ALL, OFF = POLICIES = ("owned", "all", "off")
ALTER_LOG_DIRS = "alter_log_dirs"

PENDING_GRACE_MS = 10 * 60 * 1000  # a `pending` record older than this is an execute that died midway


@dataclass(frozen=True)
class Policy:
    cleanup: str = OWNED
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
    action: str  # removed | restored | dry_run | failed
    op: str  # subtract | delete | set
    entries: tuple[str, ...] = ()  # topic: the `p:b` entries taken out
    value: str | None = None  # the value before
    restored_value: str | None = None  # broker: the prior value put back
    reason: str = ""
    request_ids: tuple[str, ...] = ()
    signal: str | None = None  # --throttle auto: what caused the change (streaming.control.throttles.autothrottle.SIGNALS)

    @property
    def steered(self):
        return self.action in STEERED or (self.action == FAILED and self.signal is not None)
