"""The controller's own whole polls for /metrics, pictured by the batches' rules (`picture_of`): the first look, and
in a thread of its own, one a trigger until Spark's first batch (batch_rules.shows_first_look) and while a batch is
late (batch_rules.shows_own_poll).
The door holds a node that stopped answering after one request deadline, so such a picture shows its replicas
BROKER_OFFLINE and every other replica's progress; the progress topic gets them from the next batch."""

import threading

from streaming.cluster.poller import poll


class Pictures:
    """`picture_of(snapshot)`: the Prometheus picture of a whole poll (None: /metrics shows the batches' pictures
    only); `offer(picture)`: /metrics takes it unless it shows an older poll; `shown(rows)`: the reassignments of a
    poll whose picture was offered (the batches report them: duties.handover)."""

    def __init__(self, admin, picture_of, offer, shown, say):
        self.admin, self.picture_of, self.offer, self.noted, self.say = admin, picture_of, offer, shown, say
        self.poll = threading.Thread()  # the last poll of its own while a batch is late, never started
        self.poll_s = None  # when it was started

    @property
    def shown(self):
        return self.picture_of is not None

    def first_look(self, now_s):
        """The first look: a whole poll, its picture offered to /metrics; the snapshot (adoption's baseline too)."""
        self.poll_s = now_s
        snapshot = poll(self.admin, all_partitions=True)
        self._offer(snapshot)
        return snapshot

    def busy(self):
        return self.poll.is_alive()

    def in_background(self, listed_rows, now_s):
        """Start a whole poll and show its picture, in a thread (a poll that waits out a lapse, or crawls while Spark
        starts, never delays a tick). `listed_rows`: the tick's list, the poll's while a batch is late (a silent Kafka
        controller is the likeliest reason for that); None: the poll lists itself."""
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
            self.offer(picture)
