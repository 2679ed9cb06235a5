"""Moves between log dirs as a duty: they are in no reassignment list, so the controller looks at the log dirs of
the brokers whose alter-log-dirs rate an active record owns, and the end of a broker's last future log makes the
janitor sweep at once, as an owned partition leaving the list does (docs/ownership.md "Broker in use")."""


class LogDirMoves:
    def __init__(self, admin):
        self.admin = admin
        self.future_on = frozenset()  # brokers whose owned rate it looked at that held a future log at the last look

    def _holding(self, rate_brokers):
        """The brokers of `rate_brokers` holding a future log now (DescribeLogDirs of each); None when a look failed."""
        try:
            return frozenset(b for b in rate_brokers if any(r["is_future"] for r in self.admin.describe_log_dirs(b)))
        except Exception:  # looked at again next tick
            return None

    def ended(self, rate_brokers):
        """The brokers, sorted, whose future logs all ended since the last look; `rate_brokers`: those whose
        alter-log-dirs rate an active record owns (duties.owned)."""
        holding = self._holding(rate_brokers) if rate_brokers else frozenset()
        if holding is None:
            return []
        ended, self.future_on = sorted(self.future_on - holding), holding
        return ended

    def ended_between_ticks(self, rate_brokers):
        """A look between ticks: whether a broker that held a future log at the last tick holds none now."""
        return bool(self.future_on) and bool(self.future_on - (self._holding(rate_brokers) or self.future_on))
