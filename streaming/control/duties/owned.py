"""The ledger as the controller reads it: the owned partitions, the ongoing `execute` requests, and the moves Kafka
accepted since the read before. Every read of the ledger, whichever duty makes it (this one, a batch's janitor,
adoption's look, a sweep, a plan's step), notes the accepted moves (the ledger is a NotedReads over `note`), so a
request is noted by the first read that shows it - a later read would show it known, or already `done`."""

import threading

from streaming.control import batch_rules
from streaming.control.ownership.records import Origin, accepted_moves
from streaming.vocabulary.throttle_actions import ALTER_LOG_DIRS


class Owned:
    def __init__(self, clock):
        self.clock = clock
        self.partitions = frozenset()  # (topic, partition) of every active record's moves
        self.log_dir_rate_brokers = frozenset()  # brokers whose alter-log-dirs rate an active record claims
        # Ongoing `execute` requests as last read (request id -> its (topic, partition)s), for the batch's
        # per-request records: replaced whole, never mutated, so the batch's thread may read it.
        self.requests = {}
        self.unread = False  # the last read failed
        self.read_s = None  # when the ledger was last read
        self._accepted = None  # (topic, partition) -> Move of the requests Kafka accepted, as last read (None: unread)
        self._newly_accepted = {}  # ... accepted since, by any read, until a tick looked for them (`ended_unseen`)
        self._written = threading.Event()  # a record was written since the last read (`written`)

    def written(self):
        """A record was written to the ledger since the last read (the controller's ownership watch saw it, from its
        own thread): the next tick reads it, whatever `due` says otherwise."""
        self._written.set()

    def refresh(self, ledger, kept=()):
        """Read the ledger; `kept`: records held in memory only (adoption under a dry run). Raises when the read
        failed: the ledger is then unread (batches run, and a sweep is due once it is read)."""
        self._written.clear()  # one written while this read runs asks for another
        try:
            ledger.refresh()
            records = ledger.records()
        except Exception:
            self.unread = True
            raise
        self.partitions = frozenset((m.topic, m.partition) for r in [*records, *kept] if r.active for m in r.moves)
        self.log_dir_rate_brokers = frozenset(c.broker for r in [*records, *kept] if r.active for c in r.rates
                                              if c.kind == ALTER_LOG_DIRS)
        self.requests = {r.request_id: [(m.topic, m.partition) for m in r.moves]
                         for r in records if r.active and r.origin == Origin.EXECUTE}
        self.unread = False
        self.read_s = self.clock()

    def due(self, started, looked, listed, batches_done, now_s, trigger_interval_s):
        """Whether the tick reads the ledger: at start (`started`: a tick listed since), while something reassigns
        (`looked`: what any look listed since the last tick; `listed`: this tick's list) or is owned, after a failed
        read, until Spark's first batch (Spark's start slows the looks, and a move of ours that came and went between
        two of them is known only from the ledger), when a record was written since the last read (`written`), and
        once a trigger interval otherwise."""
        return bool(not started or self._written.is_set() or looked or listed or self.partitions or self.unread
                    or not batches_done
                    or self.read_s is None or now_s - self.read_s >= trigger_interval_s)

    def adopted(self, record):
        """An `observed` record just written: its partitions are owned from now on."""
        self.partitions |= {(m.topic, m.partition) for m in record.moves}

    def note(self, records):
        """Each read of the ledger: the moves Kafka accepted since the read before are kept until a tick looks for them
        in the list. The first read only sets the baseline: at start every request is new, the start's sweep covers
        them, and their moves were reported, or not, by the run before."""
        accepted = accepted_moves(records)
        if self._accepted is not None:
            self._newly_accepted.update(batch_rules.newly_accepted(self._accepted, accepted))
        self._accepted = accepted

    def ended_unseen(self, reassigning, listed):
        """(topic, partition) -> Move of the moves noted accepted that came and went between two looks; the others
        noted are listed now or were at the last tick (batch_rules.partitions_left has them)."""
        noted, self._newly_accepted = self._newly_accepted, {}
        return {p: noted[p] for p in batch_rules.ended_unseen(noted, reassigning, listed)}
