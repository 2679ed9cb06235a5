"""Why a move is not healthy: one named predicate per reason, their order in one place (`diagnose`). Pure.

Each rule reads one replica row (streaming.core.history report columns: state, state_since_ms,
stalled_seconds, copy_rate, leader_rate, progress, in_isr, leader, broker) and the `Context` of the batch:
the budget model (streaming.core.budget_view), the clock, the brokers that are offline and how long a
PENDING move may wait before it needs a reason. A rule that fires says what it saw, with the number behind
it, in one line; its code is a streaming.vocabulary.reasons.ReasonCode name.

Order is precedence: a dead broker explains everything else; a replica that copied everything but is not
in the ISR says so whatever its byte rate; then why no byte arrives (a throttle set too low, else a silent
leader); then a copy that cannot keep up; then why a move has not started.
"""

from dataclasses import dataclass, field

from streaming.core.budget import ALTER_LOG_DIRS, LEADER
from streaming.core.budget_view import is_copying, model
from streaming.vocabulary.durations import utc_clock
from streaming.vocabulary.kafka_limits import REPLICA_LAG_TIME_MAX_MS, THROTTLE_FLOOR_BYTES_PER_S
from streaming.vocabulary.reasons import ReasonCode
from streaming.vocabulary.states import ReplicaState


@dataclass(frozen=True)
class Context:
    model: object  # streaming.core.budget_view.BudgetModel
    now_ms: int
    offline: frozenset = field(default_factory=frozenset)  # brokers not alive or not answering this poll
    pending_after_s: float = 20.0  # a PENDING move gets a reason after this long (the job: two triggers)
    never: bool = True  # whether a move may never finish at its share (the model's any_never)
    # offline brokers the door holds as unresponsive -> Unix ms since when they have not answered
    unanswered: dict = field(default_factory=dict)


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
    since = row.get("state_since_ms")
    return "" if since is None else f" since {utc_clock(since)} UTC"


def _state(row, state):
    return row.get("state") == state.name


def _in_state_s(row, ctx):
    since = row.get("state_since_ms")
    return None if since is None else (ctx.now_ms - since) / 1000.0


def _binding(row, ctx):
    """(budget, its configured throttle or None, its effective rate, moves using it) of the budget that
    binds the row's move now; None when the model did not run it."""
    finish = ctx.model.finish(row)
    if finish is None or finish.binding is None:
        return None
    budget = finish.binding
    return budget, ctx.model.throttles.rates.get(budget), ctx.model.rate(budget), ctx.model.users(budget)


_SIDE = {LEADER: "leader", ALTER_LOG_DIRS: "alter-log-dirs"}


def _moves(n):
    return f"{n} move" + ("" if n == 1 else "s")


def _budget_text(binding):
    budget, throttle, rate, users = binding
    side = _SIDE.get(budget.direction, "follower")
    if throttle is None:
        return f"no throttle on broker {budget.broker}: {human_rate(rate)} observed, shared by {_moves(users)}"
    return f"{side} throttle on broker {budget.broker} is {human_rate(throttle)} shared by {_moves(users)}"


# -- the rules: (row, ctx) -> the reason line, or None when the rule does not hold --

def _offline(broker, row, ctx):
    """How a broker of the row is offline: it does not answer since when the door first missed an answer
    (a hung broker: streaming.cluster.held), else offline since the row's state began."""
    since = ctx.unanswered.get(broker)
    return f"does not answer since {utc_clock(since)} UTC" if since is not None else f"offline{_since(row)}"


def destination_offline(row, ctx):
    if _state(row, ReplicaState.BROKER_OFFLINE) and row["broker"] in ctx.offline:
        return f"destination broker {row['broker']} {_offline(row['broker'], row, ctx)}"
    return None


def leader_offline(row, ctx):
    if not _state(row, ReplicaState.BROKER_OFFLINE):
        return None
    if row.get("leader") is None or row["leader"] < 0:
        return f"the partition has no leader{_since(row)}"
    return f"leader broker {row['leader']} of the partition {_offline(row['leader'], row, ctx)}"


def caught_up_not_in_isr(row, ctx):
    waited = row.get("stalled_seconds")
    if (not row["in_isr"] and is_copying(row) and (row.get("progress") or 0.0) >= 1.0 and waited is not None
            and waited >= ctx.pending_after_s):
        return (f"at 100 % for {human_duration(waited)} but not in ISR "
                f"(replica.lag.time.max.ms {REPLICA_LAG_TIME_MAX_MS} by default)")
    return None


def throttle_too_low(row, ctx):
    binding = _binding(row, ctx)
    if _state(row, ReplicaState.STALLED) and binding and binding[1] is not None and binding[1] < THROTTLE_FLOOR_BYTES_PER_S:
        budget, throttle = binding[0], binding[1]
        return (f"no bytes for {human_duration(row['stalled_seconds'])}; {_SIDE.get(budget.direction, 'follower')} "
                f"throttle on broker {budget.broker} is {human_rate(throttle)}")
    return None


def leader_not_sending(row, ctx):
    if _state(row, ReplicaState.STALLED):
        return (f"no bytes for {human_duration(row['stalled_seconds'])}; leader of the partition is on broker "
                f"{row['leader']}, which answers DescribeLogDirs but sends nothing")
    return None


def copy_below_growth(row, ctx):
    falling = _state(row, ReplicaState.FALLING_BEHIND)
    if not (falling or ctx.never):
        return None
    finish = ctx.model.finish(row)
    if not (falling or (is_copying(row) and finish is not None and finish.never)):
        return None
    growth = row.get("leader_rate") or 0.0
    copy = row.get("copy_rate")
    if copy is None and finish is not None:
        copy = finish.share
    line = f"copy {human_rate(copy or 0.0)} < leader growth {human_rate(growth)}"
    binding = _binding(row, ctx)
    return f"{line}; {_budget_text(binding)}" if binding else line


def _pending_long(row, ctx):
    waited = _in_state_s(row, ctx)
    return _state(row, ReplicaState.PENDING) and waited is not None and waited >= ctx.pending_after_s


_VERB = {LEADER: "sends", ALTER_LOG_DIRS: "moves"}


def waiting_for_budget(row, ctx):
    binding = _binding(row, ctx)
    if _pending_long(row, ctx) and binding and binding[3] > 1:
        budget, users = binding[0], binding[3]
        what = "log dir moves" if budget.direction == ALTER_LOG_DIRS else "moves"
        return (f"waiting: broker {budget.broker} already {_VERB.get(budget.direction, 'receives')} "
                f"{users - 1} other {what}")
    return None


def no_bytes_yet(row, ctx):
    if _pending_long(row, ctx):
        return f"no bytes for {human_duration(_in_state_s(row, ctx))} since the move was seen"
    return None


_MOVING = None  # a rule that reads any state
OFFLINE, STALLED, FALLING, PENDING = (frozenset({s.name}) for s in (ReplicaState.BROKER_OFFLINE, ReplicaState.STALLED,
                                                                    ReplicaState.FALLING_BEHIND, ReplicaState.PENDING))
# (rule, code, the states it can hold in: only those rows are asked, so 100k healthy rows cost little)
RULES = (
    (destination_offline, ReasonCode.DESTINATION_OFFLINE, OFFLINE),
    (leader_offline, ReasonCode.LEADER_OFFLINE, OFFLINE),
    (caught_up_not_in_isr, ReasonCode.CAUGHT_UP_NOT_IN_ISR, _MOVING),
    (throttle_too_low, ReasonCode.THROTTLE_TOO_LOW, STALLED),
    (leader_not_sending, ReasonCode.LEADER_NOT_SENDING, STALLED),
    (copy_below_growth, ReasonCode.COPY_BELOW_GROWTH, _MOVING),
    (waiting_for_budget, ReasonCode.WAITING_FOR_BUDGET, PENDING),
    (no_bytes_yet, ReasonCode.NO_BYTES_YET, PENDING),
)


# RULES as each state asks them (a state name, or None, -> its rules in RULES' order): the same table, indexed
# once, so a row asks only its own state's rules (100,000 rows a batch in the job).
_ANY_STATE = tuple((rule, code) for rule, code, states in RULES if states is None)
_RULES_OF = {state.name: tuple((rule, code) for rule, code, states in RULES if states is None or state.name in states)
             for state in ReplicaState}


def diagnose(row, ctx):
    """(reason code name, reason line) of the first rule that holds; (None, None) for a healthy move."""
    for rule, code in _RULES_OF.get(row.get("state"), _ANY_STATE):
        line = rule(row, ctx)
        if line is not None:
            return code.name, line
    return None, None


def with_reasons(rows, ctx):
    """The rows, each a new dict with the model's `eta_seconds`, and `reason_code` and `reason`."""
    out = []
    eta_seconds = ctx.model.eta_seconds
    for row in rows:
        diagnosed_row = {**row, "eta_seconds": eta_seconds(row)}
        diagnosed_row["reason_code"], diagnosed_row["reason"] = diagnose(diagnosed_row, ctx)
        out.append(diagnosed_row)
    return out


def offline_brokers(brokers, answered):
    """Brokers (DescribeCluster rows) not alive or not among those that answered DescribeLogDirs (rows)."""
    answering = {row["broker"] for row in answered}
    return frozenset(row["broker"] for row in brokers if not row["alive"] or row["broker"] not in answering)


def unanswered_brokers(brokers):
    """{broker: Unix ms} of the brokers (DescribeCluster rows) the door holds as unresponsive."""
    return {row["broker"]: row["unanswered_since_ms"] for row in brokers if row.get("unanswered_since_ms") is not None}


def diagnosed(rows, topic_throttles, broker_throttles, offline, now_ms, pending_after_s, unanswered=None):
    """(the rows with the budget model's ETA, `reason_code` and `reason`, the model): what the job's batch and
    the live `progress` report both run on their replica rows (history report columns). `unanswered`: as
    `unanswered_brokers`."""
    budget_model = model(rows, topic_throttles, broker_throttles, now_ms)
    context = Context(budget_model, now_ms, offline, pending_after_s, budget_model.any_never, unanswered=unanswered or {})
    return with_reasons(rows, context), budget_model
