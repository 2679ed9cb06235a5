"""The nodes the door sends nothing to for now, and why. Pure bookkeeping: both clocks are arguments (`now`
monotonic, for how long a hold lasts; `wall`, Unix seconds, for when a node stopped answering).

A node is held one of two ways, which end differently:
- GONE: its connection was closed or refused (SIGKILLed, stopped, restarting). Held for `gone_hold_s` (one
  call's deadline); after it a request may try the node again: a refused connect costs milliseconds and
  marks it again, and a node that came back answers.
- UNRESPONSIVE: a request to it got no answer within the request deadline while its connection stayed open
  (SIGSTOP, a long GC pause, a stuck disk). Held from that lapse until the node's first answer, whatever
  it answers: the door keeps a probe in flight to it (`probe_due`), so the hold ends within about one
  deadline of the node answering again, and a poll never waits on it meanwhile. Each probe that gets no answer
  (or finds the node gone from the client's metadata: Kafka fenced it) renews the hold for gone_hold_s; a door
  that stops asking (idle: a Spark worker's door between its batches) lets it end, and asks again at its next
  use - measured before: an idle worker's door still held a broker 77 s after it answered again.
The rule for a slow but alive broker: an answer inside the deadline, however slow, holds nothing; only a
lapse does, and the node's next answer (a probe's, a cheap request) releases it. So a broker that answered
one request late is held for about as long as it takes to answer a probe, not flapped for a period.

Only the node a request was sent to is ever marked, for what that request met: the door never marks a node
for a request that failed because the door itself closed the client (streaming.cluster.door). A request the
broker forwards to the active controller (KRaft: ListPartitionReassignments, AlterPartitionReassignments,
IncrementalAlterConfigs) that lapses says that the controller did not answer, or that the broker did not: it holds
CONTROLLER (the path to the controller: every broker forwards to the same one) and makes the broker a SUSPECT,
which is probed directly (a request it answers itself) and held only if that probe lapses too. Measured: with the
active controller SIGSTOPped, a new one was elected only about 30 s later, and until then every broker left a
forwarded request unanswered while answering everything else.
"""

from dataclasses import dataclass

GONE = "gone"
UNRESPONSIVE = "unresponsive"
CONTROLLER = "the controller"  # held like a node: the path to the active controller, through any broker


@dataclass(frozen=True)
class Hold:
    why: str  # GONE or UNRESPONSIVE
    since_wall: float  # Unix seconds: when the node was asked and did not answer (UNRESPONSIVE), or was marked
    began: float  # monotonic: when the hold began
    until: float  # monotonic end, unless renewed (GONE: `gone` again; UNRESPONSIVE: `lapsed`, `confirm`)


class HeldNodes:
    def __init__(self, gone_hold_s, probe_every_s):
        self.gone_hold_s = gone_hold_s
        self.probe_every_s = probe_every_s
        self._holds = {}  # node id (or CONTROLLER) -> Hold
        self._suspects = {}  # node id -> monotonic time a forwarded request through it lapsed, until it answers
        self._forwarding = {}  # node id -> the same, until a forwarded request through it is answered
        self._probes = {}  # node id (or CONTROLLER) -> monotonic time its probe was sent, while one is in flight
        self._probed = {}  # node id (or CONTROLLER) -> monotonic time its last probe was sent

    def _current(self, node, now):
        hold = self._holds.get(node)
        if hold is not None and hold.until <= now:
            del self._holds[node]
            return None
        return hold

    def gone(self, node, now, wall):
        """Its connection was closed or refused at `now`: held as GONE for gone_hold_s (again, if it was).
        An UNRESPONSIVE node stays so: it still has not answered since then. Whether it was not held before."""
        hold = self._current(node, now)
        if hold is not None and hold.why == UNRESPONSIVE:
            self.confirm(node, now)
            return False
        self._holds[node] = Hold(GONE, wall if hold is None else hold.since_wall, now if hold is None else hold.began,
                                 now + self.gone_hold_s)
        return hold is None

    def lapsed(self, node, now, asked_wall):
        """A request sent to it at `asked_wall` got no answer within its deadline: held as UNRESPONSIVE until it
        answers, since the earliest such request. Whether it was not held as UNRESPONSIVE before."""
        self._suspects.pop(node, None)
        hold = self._current(node, now)
        if hold is not None and hold.why == UNRESPONSIVE:
            self._holds[node] = Hold(UNRESPONSIVE, min(hold.since_wall, asked_wall), hold.began, now + self.gone_hold_s)
            return False
        self._holds[node] = Hold(UNRESPONSIVE, asked_wall, now if hold is None else hold.began, now + self.gone_hold_s)
        return True

    def confirm(self, node, now):
        """A probe of an UNRESPONSIVE node ended without an answer other than by a lapse (the client no longer knows
        the node: Kafka fenced it): the hold is renewed as a lapse renews it."""
        hold = self._current(node, now)
        if hold is not None and hold.why == UNRESPONSIVE:
            self._holds[node] = Hold(UNRESPONSIVE, hold.since_wall, hold.began, now + self.gone_hold_s)

    def forwarded_lapsed(self, node, now, asked_wall):
        """A request `node` forwards to the controller, sent at `asked_wall`, got no answer: CONTROLLER is held (as
        `lapsed`) and the node, unless held already, is a suspect until a probe of its own says which it was.
        Whether CONTROLLER was not held before."""
        if self._current(node, now) is None:
            self._suspects[node] = now
        self._forwarding[node] = now
        return self.lapsed(CONTROLLER, now, asked_wall)

    def answered(self, node, now, forwarded=False):
        """It answered a request: no longer held, whatever held it, nor a suspect; `forwarded` (an answer a broker
        got from the controller): its forwarding works again. The hold this ended, or None."""
        hold = self._current(node, now)
        self._holds.pop(node, None)
        self._probes.pop(node, None)
        self._suspects.pop(node, None)
        if forwarded:
            self._forwarding.pop(node, None)
        return hold

    def stuck_forwarding(self, now):
        """The brokers a forwarded request lapsed through and none was answered since (for at most gone_hold_s):
        controller-bound requests go through another when there is one. A broker's forwarding can stay stuck on a
        controller that stopped after another was elected (measured: one broker's lists lapsed for seconds after
        another's were answered again)."""
        for node in [n for n, since in self._forwarding.items() if now - since >= self.gone_hold_s]:
            del self._forwarding[node]
        return frozenset(self._forwarding)

    def suspects(self, now):
        """The nodes a forwarded request lapsed through, not yet probed out (for at most gone_hold_s): requests
        that any node can serve avoid them, and so do controller-bound ones; they are not reported offline."""
        for node in [n for n, since in self._suspects.items() if now - since >= self.gone_hold_s]:
            del self._suspects[node]
        return frozenset(self._suspects)

    def held(self, now):
        """The nodes held at `now`."""
        return frozenset(n for n in list(self._holds) if self._current(n, now) is not None)

    def hold_of(self, node, now):
        return self._current(node, now)

    def unanswered_since(self, now):
        """{node: Unix seconds since when it has not answered} of the nodes held as UNRESPONSIVE."""
        return {n: h.since_wall for n in list(self._holds) if (h := self._current(n, now)) and h.why == UNRESPONSIVE}

    def probe_due(self, now):
        """The UNRESPONSIVE nodes (and CONTROLLER) and the suspects to probe now (none in flight, and the last one
        sent probe_every_s ago or more), marked as probed: the caller sends each a probe and calls `probe_done` when
        it ends, answered or not. A probe in flight for gone_hold_s has ended unheard of (its client was dropped):
        another is due."""
        unresponsive = {n for n, h in self._holds.items() if h.why == UNRESPONSIVE}
        due = sorted((n for n in unresponsive | set(self.suspects(now))
                      if now - self._probes.get(n, float("-inf")) >= self.gone_hold_s
                      and now - self._probed.get(n, float("-inf")) >= self.probe_every_s), key=str)
        for node in due:
            self._probes[node] = self._probed[node] = now
        return due

    def probe_done(self, node):
        self._probes.pop(node, None)
