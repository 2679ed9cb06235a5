"""What the job's controller decides each tick about Spark batches and liveness. Pure: plain values in, the
clock an argument.

- `batch_reason(view)`: whether the job needs a Spark batch, as the name of the first rule that holds
  (BATCH_RULES, in order) or None. No batch runs only while nothing reassigns, no move is tracked in the
  stateful operator's state or was listed without a batch reporting it, no owned throttle or pending removal
  exists, and the controller itself could read.
- `partitions_left(before, now, owned)`: owned partitions that just left the reassignment list (the
  moment the controller runs the throttle janitor); `newly_accepted(...)`: moves of our requests one read of the
  ownership records shows Kafka accepted since the read before; `ended_unseen(...)`: those that came and went
  between two looks (the janitor runs then too, and the next batch is handed them); `peeks(...)`: whether
  to look at the list between ticks.
- `publishes_liveness(...)`: whether the controller's poll is the job's liveness now (`batch_held_by_write`: a
  batch that polled and computed and now waits for Kafka to acknowledge its records does not make it late);
  `shows_own_poll(...)`: whether a batch that late makes the controller show a poll of its own on /metrics.

A controller duty that needs batches adds its own predicate to BATCH_RULES, reading the same `BatchView`
(plans: `plans_active`).
"""

from dataclasses import dataclass

from streaming.vocabulary.defaults import REQUEST_DEADLINE_S

# Liveness stops advancing when a wanted batch is this many trigger intervals late: the alert rule's 30 s
# threshold is three default intervals (deploy/prometheus/alerts.yml, KafkaReassignmentMonitorDown).
LATE_AFTER_TRIGGERS = 3
# ... plus this many request deadlines: a batch may wait out one lapse in its poll (the executor's door had not yet
# met the node that stopped answering) and one in the write of its records (a request in flight to a leader that
# stopped) before every door holds that node. Measured on the fault cluster at a 2 s trigger: a leader SIGSTOPped
# made one batch 8.5 s late, and liveness stopped for as long.
LATE_AFTER_LAPSES = 2
# Before the first batch, Spark's start-up is allowed on top: tens of seconds on a loaded machine
# (bench/RESULTS.md "Run start-up phases").
SPARK_START_ALLOWANCE_S = 120.0


@dataclass(frozen=True)
class BatchView:
    """One tick's knowledge. `listed`: whether ListPartitionReassignments answered (`reassigning` is then
    what it returned); `owned`: partitions of active ownership records; the rest is what the last
    successful batch left (`batches_done` counts them since start)."""
    listed: bool
    reassigning: frozenset = frozenset()
    owned: frozenset = frozenset()
    owned_unread: bool = False  # the last read of the ownership records failed: `owned` may miss a request
    batches_done: int = 0
    tracks_moves: bool = False  # the last batch reported an unfinished move: its state remembers it
    throttles_to_clear: bool = False  # --throttle-cleanup all and the last read (a batch's or the controller's) saw one
    active_plans: int = 0  # plans running or paused in the ownership topic (streaming.control.plans.advancer)
    unreported: bool = False  # a move the controller listed that no batch has reported yet


def controller_blind(view):
    """The controller could not list the reassignments: let Spark's poll see (and report) what it can."""
    return not view.listed


def first_batch(view):
    """No batch yet since start: the checkpoint's state may track moves that finished while the job was down,
    whose COMPLETED or CANCELLED transition only a batch reports."""
    return view.batches_done == 0


def reassigning(view):
    """Partitions are reassigning: progress to compute."""
    return bool(view.reassigning)


def unreported(view):
    """A move the controller listed that no batch has reported yet: the next batch is handed it
    (streaming.control.gate) in its end offset, so that batch - or its replay after a crash, whose fresh poll may
    no longer list it - reports it, finished if it left the list meanwhile."""
    return view.unreported


def tracked_in_state(view):
    """A move is tracked in state: its last transition (COMPLETED or CANCELLED) is still to be reported,
    so the batch after a move leaves the list always runs."""
    return view.tracks_moves


def owned_throttles(view):
    """Owned throttles or pending removals exist: the batch's janitor observes, retries and reports."""
    return bool(view.owned)


def ownership_unread(view):
    """The ownership records could not be read: a request written meanwhile may own throttles whose move
    already ended (the topic's leader SIGKILLed mid-move), so batches run, their janitor reading again."""
    return view.owned_unread


def throttles_to_clear(view):
    """Under --throttle-cleanup all, throttles remain for the batch's janitor to clear."""
    return view.throttles_to_clear


def plans_active(view):
    """A plan is running or paused (even with nothing moving, e.g. paused between waves): batches write its
    `plan` records and metrics, so its progress and a stuck plan stay visible."""
    return view.active_plans > 0


BATCH_RULES = (controller_blind, first_batch, reassigning, unreported, tracked_in_state, owned_throttles,
               ownership_unread, throttles_to_clear, plans_active)


def batch_reason(view):
    """The name of the first rule in BATCH_RULES that holds, or None: no batch needed."""
    return next((rule.__name__ for rule in BATCH_RULES if rule(view)), None)


def partitions_left(before, now, owned):
    """Owned partitions that were reassigning at the last tick and are not now (completed or cancelled)."""
    return (set(before) & set(owned)) - set(now)


def newly_accepted(accepted_before, accepted_now):
    """The moves of `accepted_now` ((topic, partition) -> Move of the requests Kafka accepted, as one read of the
    ownership records shows them) whose partition the read before did not show accepted."""
    return {p: move for p, move in accepted_now.items() if p not in accepted_before}


def ended_unseen(accepted, before, now):
    """Partitions of `accepted` (newly accepted by any read of the ownership records since the last tick looked)
    that do not reassign now and did not at the last tick: their move started and ended between two looks (a move
    of a few MB under an idle broker's quota takes less than a second), so only their record tells the controller
    it ran."""
    return set(accepted) - set(before) - set(now)


# While an owned partition is reassigning, the controller looks at the reassignment list this often between its
# ticks (one ListPartitionReassignments each), so the janitor runs within a quarter second of a completion
# instead of up to a second; it spends at most PEEK_SHARE of its time looking (a long list is looked at less).
PEEK_INTERVAL_S = 0.25
PEEK_SHARE = 0.2


def peeks(reassigning, owned, acts):
    """Look between ticks: the janitor acts and a partition it owns is reassigning (its completion is near)."""
    return acts and bool(set(reassigning) & set(owned))


def peeks_log_dirs(future_on, acts):
    """Look between ticks: the janitor acts and a broker whose alter-log-dirs rate it owns holds a future log (a move
    between log dirs is in no reassignment list: its end shows in DescribeLogDirs)."""
    return acts and bool(future_on)


def peek_interval_s(last_peek_s):
    return max(PEEK_INTERVAL_S, last_peek_s / PEEK_SHARE)


def defers_the_rest(list_s, request_deadline_s, deferred_last_tick):
    """One wait per tick: a tick whose list waited out a request deadline (a node on the way to Kafka's controller
    stopped answering), or came right after a look between ticks that did (`list_s` counts it), leaves its other
    duties - the ledger read, the batches' findings, adoption, sweeps, plans - to the next tick, which starts at once,
    so that a second node's lapse (the ownership topic's leader, or the stopped node's configs that adoption reads)
    falls into another tick and published polls stay within two triggers + 1 s of each other (measured before the
    look counted: a look's lapse and then adoption's, 6.0 s between published polls at a 2 s trigger). Never twice in
    a row: every duty still runs at least every other tick."""
    return list_s >= request_deadline_s and not deferred_last_tick


def late_after_s(trigger_interval_s, batches_done):
    return (LATE_AFTER_TRIGGERS * trigger_interval_s + LATE_AFTER_LAPSES * REQUEST_DEADLINE_S
            + (SPARK_START_ALLOWANCE_S if batches_done == 0 else 0.0))


def batch_held_by_write(writing_since_s, now_s, write_bound_s):
    """A batch polled, computed, and is waiting for Kafka to acknowledge its records (acks=all), for no
    longer than the write itself may take (`write_bound_s`: the producer's delivery timeout). Kafka holds
    such a write until it has fenced a broker that died (seconds after a SIGKILL: docs/architecture.md "The door to
    the cluster"): that batch is late through no fault of the job, whose controller still polls every second. A
    write held longer has failed (the query restarts from its checkpoint), and lateness counts again."""
    return writing_since_s is not None and now_s - writing_since_s <= write_bound_s


def shows_own_poll(wanted, waiting_since_s, shown_s, now_s, trigger_interval_s, request_deadline_s):
    """Whether the controller takes a whole poll of its own for /metrics now: the batch it waits for (`waiting_since_s`
    as in `publishes_liveness`) is more than a trigger interval and a request deadline in coming (a batch's poll may
    wait out one lapse), and no such poll was started (`shown_s`, None: never) within the last trigger interval. A
    batch that late is held by a broker that stopped answering: its poll waits out lapses, or Kafka holds its
    `acks=all` write until it fenced that broker (9 s and more) and the producer found the partitions' new leaders
    (up to 9 s more measured at the default trigger); /metrics would show the cluster as it was before until then,
    however early the door held the broker. At most one whole poll per trigger, on the driver, and only then."""
    return (wanted and now_s - waiting_since_s > trigger_interval_s + request_deadline_s
            and (shown_s is None or now_s - shown_s >= trigger_interval_s))


def shows_first_look(batches_done, shown_s, now_s, trigger_interval_s):
    """Whether the controller takes its first look's whole poll again for /metrics now: no batch has run yet since
    start (Spark still starts), the first look was taken (`shown_s`, None: not yet), and a trigger interval passed
    since the last such poll started."""
    return batches_done == 0 and shown_s is not None and now_s - shown_s >= trigger_interval_s


def publishes_liveness(listed, wanted, waiting_since_s, now_s, late_s, writing_since_s=None, write_bound_s=0.0):
    """The controller's poll is the job's liveness when it answered and either no batch is needed (then there is
    nothing else to report), or the batch the job waits for is not late (`waiting_since_s`: the later of the
    last batch's end and the moment a batch became wanted), or that batch is held by its durable write
    (`batch_held_by_write`). A job whose batches stall while something moves stops advancing liveness, and
    KafkaReassignmentMonitorDown fires as it did before the controller polled on its own."""
    return listed and (not wanted or now_s - waiting_since_s <= late_s
                       or batch_held_by_write(writing_since_s, now_s, write_bound_s))
