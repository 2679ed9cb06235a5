"""The controller's own reads of the cluster that /metrics shows: whole polls pictured by the batches' rules
(`picture_of`) - the first look, and in a thread of its own, one a trigger until Spark's first batch
(batch_rules.shows_first_look) and while a batch is late (batch_rules.shows_own_poll) - and the reads of every
throttle that adoption takes when no batch's poll came for a trigger (their throttles shown: no batch shows what
changed while nothing moves).
The door holds a node that stopped answering after one request deadline, so such a picture shows its replicas
UNOBSERVED (BROKER_OFFLINE once Kafka fenced it) and every other replica's progress; the progress topic gets them
from the next batch."""

import threading

from streaming.cluster.poller import poll
from streaming.control import batch_rules
from streaming.control.throttles.read import read_cluster


class Pictures:
    """`picture_of(snapshot)`: the Prometheus picture of a whole poll (None: /metrics shows the batches' pictures
    only); `collector`: /metrics' sinks.prometheus.SnapshotCollector, which takes a picture unless it shows an older
    poll, and the throttles of a read; `noted(rows)`: the reassignments of a poll whose picture was offered (the
    batches report them: duties.handover)."""

    def __init__(self, admin, picture_of, collector, noted, trigger_interval_s, say):
        self.admin, self.picture_of, self.collector, self.noted, self.say = admin, picture_of, collector, noted, say
        self.trigger_interval_s = trigger_interval_s
        self.poll = threading.Thread()  # the last poll of its own while a batch is late, never started
        self.poll_s = None  # when it was started

    @property
    def shown(self):
        """Whether /metrics shows the controller's own polls at all."""
        return self.picture_of is not None

    def throttle_view(self, batches_done, now_s):
        """(a read of every throttle and the reassignments, whether it is the first look). The first look, before any
        batch: a whole poll, its picture offered to /metrics (adoption's baseline too); else a read of the throttles,
        which /metrics shows."""
        if self.shown and self.poll_s is None and not batches_done:
            self.poll_s = now_s
            snapshot = poll(self.admin, all_partitions=True)
            self._offer(snapshot)
            return snapshot, True
        snapshot = read_cluster(self.admin, {row["topic"] for row in self.admin.describe_partitions(None)})
        self.collector.offer_throttles(snapshot["topic_throttles"], snapshot["broker_throttles"], snapshot.ts_ms / 1000)
        return snapshot, False

    def busy(self):
        return self.poll.is_alive()

    def show_when_due(self, batches_done, late, listed_rows, now_s):
        """Start a whole poll for /metrics when one is due and none is under way: until Spark's first batch, a trigger
        after the last (it lists itself); after it, when the batch waited for is `late`
        (duties.liveness.shows_own_poll), on the tick's `listed_rows` (a silent Kafka controller is the likeliest
        reason for a late batch)."""
        if not self.shown or self.busy():
            return
        if batch_rules.shows_first_look(batches_done, self.poll_s, now_s, self.trigger_interval_s):
            self._in_background(None, now_s)
        elif late:
            self._in_background(listed_rows, now_s)

    def _in_background(self, listed_rows, now_s):
        """A whole poll and its picture, in a thread: a poll that waits out a lapse, or crawls while Spark starts,
        never delays a tick."""
        self.poll_s = now_s
        self.poll = threading.Thread(target=self._show, args=(listed_rows,), name="reassign-monitor-own-poll",
                                     daemon=True)
        self.poll.start()

    def _show(self, listed_rows):
        try:
            self._offer(poll(self.admin, all_partitions=True, listed=listed_rows))
        except Exception as error:  # another one a trigger later while it is still due
            self.say(f"a poll of its own failed: {type(error).__name__}: {error}")

    def _offer(self, snapshot):
        picture = self.picture_of(snapshot)
        if picture is not None:
            self.noted(snapshot["reassignments"])
            self.collector.offer(picture)
