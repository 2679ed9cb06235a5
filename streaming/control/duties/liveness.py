"""The gate and liveness as a duty: whether a Spark batch is needed (streaming.control.batch_rules), written to the
gate the source reads (streaming.control.gate) with the moves listed that no batch has reported yet, and whether a
look is published as the job's liveness (batch_rules.publishes_liveness)."""

from streaming.cluster.own_topics import DELIVERY_OUTLASTS_FENCING_S
from streaming.control import batch_rules, gate

# A batch's durable write is given up by the producer after this long (streaming.cluster.own_topics): while a
# write is younger, the batch is held by Kafka, not late (batch_rules.batch_held_by_write).
WRITE_BOUND_S = DELIVERY_OUTLASTS_FENCING_S
# At most this many moves no batch has reported yet are handed to one batch (they go into its end offset, in the
# checkpoint's offset log): thousands of moves starting or ending at once are carried over several batches.
HANDOVER_LIMIT = 10_000
# The decision lines, logged when the decision changes (tests read them from the job's log).
IDLE_LINE = "idle: no Spark batch until something moves"
BATCHES_LINE = "Spark batches run: "


def batch_view(listed, reassigning, owned, owned_unread, active_plans, facts):
    """The tick's knowledge (batch_rules.BatchView): whether it listed and what (`reassigning`), the owned
    partitions and whether the ledger's last read failed (duties.owned), the plans running or paused, and the
    batches as of now (`facts`: handover.BatchFacts)."""
    return batch_rules.BatchView(
        listed=listed, reassigning=reassigning, owned=owned, batches_done=facts.batches_done,
        tracks_moves=facts.tracks_moves, throttles_to_clear=facts.throttles_to_clear, owned_unread=owned_unread,
        active_plans=active_plans, unreported=bool(facts.unreported))


class Liveness:
    """`gate_path`: the file streaming.control.gate writes; `collector`: /metrics' sinks.prometheus.SnapshotCollector,
    whose `touch` publishes a look as the job's liveness; `say(line)`: the controller's log."""

    def __init__(self, gate_path, trigger_interval_s, request_deadline_s, collector, say):
        self.gate_path, self.trigger_interval_s, self.request_deadline_s = gate_path, trigger_interval_s, request_deadline_s
        self.collector, self.say = collector, say
        self.reason = "not decided"
        self._wanted_since_s = None  # a batch is wanted since then

    def decide(self, view, facts, listed_for_batches, now_s, now_wall, unanswered=None):
        """The reason a batch is wanted (None: none), decided on `view` (batch_rules.BatchView) and written to the gate
        with the moves no batch reported yet (`facts`: handover.BatchFacts), the door's last list while Kafka's
        controller is silent (`listed_for_batches`) and the brokers the door holds as unresponsive (`unanswered`:
        {broker: Unix ms since})."""
        reason = batch_rules.batch_reason(view)
        if reason is None:
            self._wanted_since_s = None
        elif self._wanted_since_s is None:
            self._wanted_since_s = now_s
        gate.write(self.gate_path, reason, now_wall * 1000, facts.unreported[:HANDOVER_LIMIT], listed_for_batches,
                   unanswered)
        if reason != self.reason:
            self.say(f"{BATCHES_LINE}{reason}" if reason else IDLE_LINE)
            self.reason = reason
        return reason

    def wanted(self):
        return self._wanted_since_s is not None

    def waiting_since_s(self, facts, kafka_controller_silent, now_s):
        """The clock second from which the batch the job waits for is counted late. While Kafka's controller is silent,
        a batch whose poll failed counts as one that ran (its poll failed on that silence before the gate handed it
        the last list, not because batches stall)."""
        last_batch_s = facts.last_batch_ran_s if kafka_controller_silent else facts.last_batch_s
        return max(last_batch_s, self._wanted_since_s or now_s)

    def publishes(self, listed, facts, kafka_controller_silent, now_s):
        """(whether this look is published as the job's liveness, the clock second its batch is counted late from)."""
        waiting_since_s = self.waiting_since_s(facts, kafka_controller_silent, now_s)
        late_s = batch_rules.late_after_s(self.trigger_interval_s, facts.batches_done)
        return (batch_rules.publishes_liveness(listed, self.wanted(), waiting_since_s, now_s, late_s,
                                               facts.writing_since_s, WRITE_BOUND_S), waiting_since_s)

    def publish(self, listed, facts, kafka_controller_silent, now_s, now_wall):
        """Publish the look taken at `now_wall` as the job's liveness when `publishes` says so; the clock second its
        batch is counted late from."""
        publishes, waiting_since_s = self.publishes(listed, facts, kafka_controller_silent, now_s)
        if publishes:
            self.collector.touch(now_wall)
        return waiting_since_s

    def shows_own_poll(self, facts, waiting_since_s, shown_s, now_s):
        """A poll of its own is shown on /metrics now (batch_rules.shows_own_poll), after Spark's first batch."""
        return bool(facts.batches_done) and batch_rules.shows_own_poll(
            self.wanted(), waiting_since_s, shown_s, now_s, self.trigger_interval_s, self.request_deadline_s)
