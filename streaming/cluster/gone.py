"""Nodes whose connection the other side closed or refused a moment ago: the door sends them nothing for
`hold_s` (one call's deadline), since a node SIGKILLed, stopped or restarting will not answer within a
poll. After the hold a request may try the node again: one refused connect costs milliseconds and
re-marks it, and a node that came back answers. Pure bookkeeping; the clock is an argument."""


class GoneNodes:
    def __init__(self, hold_s):
        self.hold_s = hold_s
        self._until = {}  # node id -> monotonic time its hold ends

    def mark(self, nodes, now):
        """Hold `nodes` as gone from `now`; whether any of them was not held already."""
        newly = {n for n in nodes if self._until.get(n, now) <= now}
        for node in nodes:
            self._until[node] = now + self.hold_s
        return bool(newly)

    def held(self, now):
        """The nodes held as gone at `now`."""
        return frozenset(n for n, until in self._until.items() if until > now)
