"""Why a move is not healthy: one named rule per reason, their order in one place (RULES). Pure.

Each rule reads the replica rows of a batch at once (columns: state, state_since_ms, stalled_seconds, copy_rate,
leader_rate, progress, in_isr, leader, broker) and the `Context` of the batch - the budget model
(streaming.core.budget_view), the clock, the brokers that are offline and how long a PENDING move may wait
before it needs a reason - and says for each row whether it holds. A rule that holds says what it saw, with the
number behind it, in one line (`says`, made only for the few rows it is the reason of); its code is a
streaming.vocabulary.reasons.ReasonCode name.

Order is precedence: a dead broker explains everything else; then a destination log dir Kafka took offline (the
replica's log is gone with it); then a broker that does not answer the job while Kafka lists it alive; a replica
that copied everything but is not in the ISR says so whatever its byte rate; then why no byte arrives (a throttle
set too low, else a silent leader); then a copy that cannot keep up; then why a move has not started.
"""

from dataclasses import dataclass, field

import numpy as np

from streaming.core.budget import ALTER_LOG_DIRS, LEADER
from streaming.core.budget_view import NO_BUDGET, model
from streaming.vocabulary.durations import utc_clock
from streaming.vocabulary.kafka_limits import REPLICA_LAG_TIME_MAX_MS, THROTTLE_FLOOR_BYTES_PER_S
from streaming.vocabulary.reasons import ReasonCode
from streaming.vocabulary.states import FINISHED_STATES, ReplicaState


@dataclass(frozen=True)
class Context:
    model: object  # streaming.core.budget_view.BudgetModel of the rows
    now_ms: int
    offline: frozenset = field(default_factory=frozenset)  # brokers not alive or not answering this poll
    pending_after_s: float = 20.0  # a PENDING move gets a reason after this long (the job: two triggers)
    # offline brokers the door holds as unresponsive -> Unix ms since when they have not answered
    unanswered: dict = field(default_factory=dict)
    # broker -> its log dirs Kafka took offline (DescribeLogDirs answered them with an error), sorted
    offline_log_dirs: dict = field(default_factory=dict)
    # (topic, partition) of a reassigning partition -> its target replicas not being added that are out of the ISR
    out_of_isr_targets: dict = field(default_factory=dict)


def human_rate(value):
    """Bytes/s for a reason line: 1.2 MB/s, 95.3 KB/s, 1 B/s."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}/s"
    return f"{value:.0f} B/s"


def human_duration(seconds):
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _since(row):
    since = row["state_since_ms"]
    return "" if since is None else f" since {utc_clock(since)} UTC"


def _in(rows, state):
    return rows["state"] == state.value


def _binding(row, ctx):
    """(budget, its configured throttle or None, its effective rate, moves using it) of the budget that binds
    the row's move now; None when the model did not run it."""
    b = row["binding"]
    if b == NO_BUDGET:
        return None
    m = ctx.model
    throttle = float(m.throttles[b])
    return m.budgets[b], None if throttle != throttle else throttle, float(m.rates[b]), int(m.users[b])


_SIDE = {LEADER: "leader", ALTER_LOG_DIRS: "alter-log-dirs"}


def _moves(n):
    return f"{n} move" + ("" if n == 1 else "s")


def _budget_text(binding):
    budget, throttle, rate, users = binding
    side = _SIDE.get(budget.direction, "follower")
    if throttle is None:
        return f"no throttle on broker {budget.broker}: {human_rate(rate)} observed, shared by {_moves(users)}"
    return f"{side} throttle on broker {budget.broker} is {human_rate(throttle)} shared by {_moves(users)}"


# -- the rules: `holds(rows, ctx)` a bool per row, `says(row, ctx)` the line of one row it holds for --

def destination_offline(rows, ctx):
    return _in(rows, ReplicaState.BROKER_OFFLINE) & np.isin(rows["broker"], list(ctx.offline))


def _offline(broker, row, ctx):
    """How a broker of the row is offline: it does not answer since the door first missed an answer (a hung
    broker: streaming.cluster.held), else offline since the row's state began."""
    since = ctx.unanswered.get(broker)
    return f"does not answer since {utc_clock(since)} UTC" if since is not None else f"offline{_since(row)}"


def destination_offline_says(row, ctx):
    return f"destination broker {row['broker']} {_offline(row['broker'], row, ctx)}"


def log_dir_offline(rows, ctx):
    """The destination broker has a log dir Kafka took offline (full or failed) and holds no byte of the replica in
    an online one: the replica was in that dir (docs/progress.md "Offline log dirs")."""
    unfinished = ~np.isin(rows["state"], [state.value for state in FINISHED_STATES])
    return (unfinished & ~rows["in_isr"] & np.isin(rows["broker"], list(ctx.offline_log_dirs))
            & (np.nan_to_num(rows["numerator"], nan=1.0) == 0))


def log_dir_offline_says(row, ctx):
    dirs = ctx.offline_log_dirs[row["broker"]]
    named = f"log dir {dirs[0]} on broker {row['broker']} is" if len(dirs) == 1 else \
        f"log dirs {', '.join(dirs)} on broker {row['broker']} are"
    return f"{named} offline; the replica has no log in an online log dir there"


def leader_offline(rows, ctx):
    return _in(rows, ReplicaState.BROKER_OFFLINE)


def leader_offline_says(row, ctx):
    if row["leader"] < 0:
        return f"the partition has no leader{_since(row)}"
    return f"leader broker {row['leader']} of the partition {_offline(row['leader'], row, ctx)}"


def unobserved(rows, ctx):
    return _in(rows, ReplicaState.UNOBSERVED)


def unobserved_says(row, ctx):
    """Which broker does not answer the job, since when, and what Kafka says of it (alive, as the state's rule has
    it: streaming.core.classify.is_unobserved)."""
    if row["broker"] in ctx.unanswered:
        broker, role = row["broker"], f"destination broker {row['broker']}"
        kafka_view = f"alive and the replica {'in' if row['in_isr'] else 'not yet in'} the ISR"
    else:
        broker, role, kafka_view = row["leader"], f"leader broker {row['leader']} of the partition", "alive"
    since = ctx.unanswered.get(broker)
    return (f"{role} does not answer the job{'' if since is None else f' since {utc_clock(since)} UTC'}; "
            f"Kafka lists it {kafka_view}")


def held_by_a_replica_out_of_isr(rows, ctx):
    """In the ISR for two triggers while the partition still reassigns, because a target replica that is not
    moving is out of the ISR: Kafka completes a reassignment only once every target replica is in the ISR
    (KAFKA-19975; docs/progress.md "Completion held by a replica that is not moving")."""
    waiting = np.fromiter(((t, p) in ctx.out_of_isr_targets for t, p in zip(rows["topic"].tolist(),
                                                                            rows["partition"].tolist())),
                          bool, len(rows)) if ctx.out_of_isr_targets else np.zeros(len(rows), bool)
    return (_in(rows, ReplicaState.IN_SYNC) & waiting
            & ((ctx.now_ms - rows["state_since_ms"]) / 1000.0 >= ctx.pending_after_s))


def held_by_a_replica_out_of_isr_says(row, ctx):
    brokers = ctx.out_of_isr_targets[(row["topic"], row["partition"])]
    named = f"broker {brokers[0]} is" if len(brokers) == 1 else f"brokers {', '.join(map(str, brokers))} are"
    return (f"in the ISR for {human_duration((ctx.now_ms - row['state_since_ms']) / 1000.0)}, but the reassignment "
            f"completes only when every target replica is: the replica on {named} out of the ISR")


def caught_up_not_in_isr(rows, ctx):
    return (~rows["in_isr"] & ctx.model.copying & (np.nan_to_num(rows["progress"], nan=0.0) >= 1.0)
            & (rows["stalled_seconds"] >= ctx.pending_after_s))


def caught_up_not_in_isr_says(row, ctx):
    return (f"at 100 % for {human_duration(row['stalled_seconds'])} but not in ISR "
            f"(replica.lag.time.max.ms {REPLICA_LAG_TIME_MAX_MS} by default)")


def throttle_too_low(rows, ctx):
    m = ctx.model
    throttle = np.append(m.throttles, np.nan)[m.binding]  # NO_BUDGET (-1) reads the NaN appended
    return _in(rows, ReplicaState.STALLED) & (m.binding != NO_BUDGET) & (throttle < THROTTLE_FLOOR_BYTES_PER_S)


def throttle_too_low_says(row, ctx):
    budget, throttle, _, _ = _binding(row, ctx)
    return (f"no bytes for {human_duration(row['stalled_seconds'])}; {_SIDE.get(budget.direction, 'follower')} "
            f"throttle on broker {budget.broker} is {human_rate(throttle)}")


def leader_not_sending(rows, ctx):
    return _in(rows, ReplicaState.STALLED)


def leader_not_sending_says(row, ctx):
    return (f"no bytes for {human_duration(row['stalled_seconds'])}; leader of the partition is on broker "
            f"{row['leader']}, which answers DescribeLogDirs but sends nothing")


def copy_below_growth(rows, ctx):
    m = ctx.model
    return _in(rows, ReplicaState.FALLING_BEHIND) | (m.copying & m.never)


def copy_below_growth_says(row, ctx):
    growth = row["leader_rate"]
    copy = row["copy_rate"]
    if copy is None:
        copy = row["share"]
    line = f"copy {human_rate(copy or 0.0)} < leader growth {human_rate(growth or 0.0)}"
    binding = _binding(row, ctx)
    return f"{line}; {_budget_text(binding)}" if binding else line


def _pending_long(rows, ctx):
    return _in(rows, ReplicaState.PENDING) & ((ctx.now_ms - rows["state_since_ms"]) / 1000.0 >= ctx.pending_after_s)


_VERB = {LEADER: "sends", ALTER_LOG_DIRS: "moves"}


def waiting_for_budget(rows, ctx):
    m = ctx.model
    users = np.append(m.users, 0)[m.binding]  # NO_BUDGET (-1) reads the 0 appended
    return _pending_long(rows, ctx) & (users > 1)


def waiting_for_budget_says(row, ctx):
    budget, _, _, users = _binding(row, ctx)
    what = "log dir moves" if budget.direction == ALTER_LOG_DIRS else "moves"
    return f"waiting: broker {budget.broker} already {_VERB.get(budget.direction, 'receives')} {users - 1} other {what}"


def no_bytes_yet(rows, ctx):
    return _pending_long(rows, ctx)


def no_bytes_yet_says(row, ctx):
    return f"no bytes for {human_duration((ctx.now_ms - row['state_since_ms']) / 1000.0)} since the move was seen"


# (rule, what it says, code), in order: the first rule that holds for a row is its reason.
RULES = (
    (destination_offline, destination_offline_says, ReasonCode.DESTINATION_OFFLINE),
    (log_dir_offline, log_dir_offline_says, ReasonCode.LOG_DIR_OFFLINE),
    (leader_offline, leader_offline_says, ReasonCode.LEADER_OFFLINE),
    (unobserved, unobserved_says, ReasonCode.UNOBSERVED),
    (held_by_a_replica_out_of_isr, held_by_a_replica_out_of_isr_says, ReasonCode.TARGET_REPLICA_OUT_OF_ISR),
    (caught_up_not_in_isr, caught_up_not_in_isr_says, ReasonCode.CAUGHT_UP_NOT_IN_ISR),
    (throttle_too_low, throttle_too_low_says, ReasonCode.THROTTLE_TOO_LOW),
    (leader_not_sending, leader_not_sending_says, ReasonCode.LEADER_NOT_SENDING),
    (copy_below_growth, copy_below_growth_says, ReasonCode.COPY_BELOW_GROWTH),
    (waiting_for_budget, waiting_for_budget_says, ReasonCode.WAITING_FOR_BUDGET),
    (no_bytes_yet, no_bytes_yet_says, ReasonCode.NO_BYTES_YET),
)
# What the rules read besides the replica's key and state; rows without history (a one-shot report) lack them.
HISTORY = ("state_since_ms", "stalled_seconds", "copy_rate", "leader_rate")
_READ = ("topic", "partition", "broker", "leader", "in_isr", *HISTORY)


def diagnose(rows, ctx):
    """(reason code names, reason lines): object arrays, None for a healthy move."""
    n = len(rows)
    rows = rows.with_columns(**{name: np.full(n, np.nan) for name in HISTORY if name not in rows})
    codes, lines = np.full(n, None, dtype=object), np.full(n, None, dtype=object)
    undecided = np.ones(n, dtype=bool)
    for holds, says, code in RULES:
        fires = np.flatnonzero(undecided & holds(rows, ctx))
        if not len(fires):
            continue
        undecided[fires] = False
        said = rows.select(_READ).take(fires).rows()
        for i, row in zip(fires.tolist(), said):
            row["binding"], row["share"] = int(ctx.model.binding[i]), ctx.model.share[i]
            row["share"] = None if row["share"] != row["share"] else float(row["share"])
            codes[i], lines[i] = code.name, says(row, ctx)
    return codes, lines


def offline_brokers(brokers, answered):
    """Brokers (DescribeCluster rows) not alive or not among those that answered DescribeLogDirs (rows)."""
    answering = {row["broker"] for row in answered}
    return frozenset(row["broker"] for row in brokers if not row["alive"] or row["broker"] not in answering)


def offline_log_dirs(rows):
    """{broker: sorted log dirs} of the poll's offline_log_dirs rows."""
    dirs = {}
    for row in rows:
        dirs.setdefault(row["broker"], set()).add(row["log_dir"])
    return {broker: tuple(sorted(found)) for broker, found in dirs.items()}


def out_of_isr_targets(reassignments, partitions):
    """{(topic, partition): sorted brokers} of each reassigning partition's target replicas (its replicas less those
    being removed) that are neither being added nor in the ISR (rows of the poll's reassignments and partitions)."""
    isr = {(row["topic"], row["partition"]): set(row["isr"] or ()) for row in partitions}
    out = {}
    for row in reassignments:
        key = (row["topic"], row["partition"])
        if key not in isr:
            continue
        others = set(row["replicas"] or ()) - set(row["removing"] or ()) - set(row["adding"] or ()) - isr[key]
        if others:
            out[key] = tuple(sorted(others))
    return out


def unanswered_brokers(brokers):
    """{broker: Unix ms} of the brokers (DescribeCluster rows) the door holds as unresponsive."""
    return {row["broker"]: row["unanswered_since_ms"] for row in brokers if row.get("unanswered_since_ms") is not None}


def diagnosed(rows, topic_throttles, broker_throttles, offline, now_ms, pending_after_s, unanswered=None,
              offline_dirs=None, held_by=None):
    """(the rows with the budget model's `eta_seconds`, `reason_code` and `reason`, the model): what the job's
    batch and the live `progress` report both run on their replica rows (history report columns).
    `unanswered`: as `unanswered_brokers`; `offline_dirs`: as `offline_log_dirs`; `held_by`: as
    `out_of_isr_targets`."""
    budget_model = model(rows, topic_throttles, broker_throttles, now_ms)
    context = Context(budget_model, now_ms, offline, pending_after_s, unanswered or {}, offline_dirs or {},
                      held_by or {})
    codes, lines = diagnose(rows, context)
    return rows.with_columns(eta_seconds=budget_model.eta_seconds(), reason_code=codes, reason=lines), budget_model

