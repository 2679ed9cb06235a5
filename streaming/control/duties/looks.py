"""The controller's looks at the reassignment list: one ListPartitionReassignments through the door's
`listed_or_last` (never waiting for a silent Kafka controller), from any of the controller's threads - the tick's,
the look between ticks, the look while a tick is busy. What the last look listed and when are kept under a lock
of their own: the look while a tick is busy lists from a thread of its own."""

import threading

from streaming.control import batch_rules
from streaming.vocabulary.replica_row import partition_of

# A gap longer than this between two lists by any look is logged ("slow look: ..."): twice the tick interval; while
# the controller is quiet (it looks once a trigger), that interval and half this more (`expect`).
SLOW_LOOK_S = 2.0
SLOW_LOOK_LINE = "slow look: "


class Looks:
    """`admin`: the driver's door; `say(line)`: the controller's log."""

    def __init__(self, admin, clock, say, slow_s=SLOW_LOOK_S):
        self.admin, self.clock, self.say, self.slow_s = admin, clock, say, slow_s
        self._lock = threading.Lock()
        self._listed_s = None  # when any look last listed
        self._slow_after_s = slow_s  # a gap longer than this is logged (`expect`)
        self.rows = ()  # the rows of the last list that succeeded
        self.for_batches = None  # the door's last list while Kafka's controller is silent, for the gate
        self.reassigning = frozenset()  # what the last tick listed
        self.listed_once = False  # a tick listed since start
        self._seen = set()  # partitions any look listed since the tick last took them (`take_seen`)

    def listed_or_last(self):
        """The door's (rows, whether they are its last list); a gap longer than `slow_s` since the last list by any
        look is logged."""
        answer = self.admin.listed_or_last()
        now_s = self.clock()
        with self._lock:
            since_s, self._listed_s = self._listed_s, now_s
            self._seen.update(partition_of(r) for r in answer[0])
        if since_s is not None and now_s - since_s > self._slow_after_s:
            self.say(f"{SLOW_LOOK_LINE}{now_s - since_s:.1f} s between two lists")
        return answer

    def expect(self, interval_s):
        """The next look is due `interval_s` after the last tick's (streaming.control.rounds.Round.interval_s): a gap
        is slow beyond `slow_s`, or beyond `interval_s` and half `slow_s` when longer."""
        self._slow_after_s = max(self.slow_s, interval_s + self.slow_s / 2)

    def kafka_controller_silent(self):
        """The tick's list was the door's last one: Kafka's controller answers nobody."""
        with self._lock:
            return self.for_batches is not None

    def partitions(self):
        """The partitions listed now (a look between ticks); raises when the list failed."""
        return {partition_of(r) for r in self.listed_or_last()[0]}

    def peek(self, owned):
        """A look between ticks: (the owned partitions that left the list since the tick's - None when the look
        failed -, the seconds it took)."""
        looked = self.clock()
        try:
            left = batch_rules.partitions_left(self.reassigning, self.partitions(), owned)
        except Exception:  # the tick lists again, and counts and reports the failure
            left = None
        return left, self.clock() - looked

    def tick_list(self):
        """The tick's list: {(topic, partition): row}; raises when it failed. While Kafka's controller answers nobody,
        the door's last list, also handed to the batches through the gate (`for_batches`)."""
        rows, last = self.listed_or_last()
        with self._lock:
            self.for_batches = rows if last else None
        self.rows = rows
        return {partition_of(r): r for r in rows}

    def take_seen(self):
        """The partitions any look (the tick's, between ticks, while a tick is busy) listed since the last take: a move
        a look saw between two ticks' lists is one the controller looked at, not one that came and went unseen."""
        with self._lock:
            seen, self._seen = self._seen, set()
        return frozenset(seen)

    def listed(self, listed):
        """The tick's list, looked at by every duty: the next tick compares with it."""
        self.reassigning = frozenset(listed)
        self.listed_once = True

    def foreign_move_appeared(self, listed, owned):
        """A partition reassigns now that did not at the last tick and no record of ours moves."""
        return bool(set(listed) - self.reassigning - set(owned))
