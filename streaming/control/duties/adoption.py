"""Adoption as a duty: throttles that appeared together with a reassignment another tool started become an
`observed` ownership record (streaming.control.throttles.adoption, rule "observed"), found by comparing consecutive
views of the whole cluster's throttles - a batch's poll, or a read of its own (at the first look: the baseline; when
a move that is not ours appears; once a trigger while no view came)."""

from collections import deque

from streaming.control.ownership.records import new_request_id
from streaming.control.throttles.adoption import observe
from streaming.control.throttles.bookkeeping import settled
from streaming.control.throttles.view import after_actions, view_of
from streaming.vocabulary.throttle_actions import ALL, REMOVED, RESTORED

# Views further apart than this many triggers (at least a minute, so long batches at scale still observe) had a
# gap in between, and a throttle someone set meanwhile must not pass for one set with the next foreign reassignment.
OBSERVE_GAP_TRIGGERS = 3
OBSERVE_GAP_MIN_S = 60.0
# While the controller is quiet (no batch wanted), a view of its own is due this often, not every trigger: it asks every
# broker and the topics for their throttles (a request each), then the idle driver's largest cost per cluster
# (bench/RESULTS.md "Fleet idle cost (bench/fleet.py idle)"). A foreign move appearing asks for a view at once; half the
# observe gap keeps two quiet views from passing for a gap.
QUIET_VIEW_S = OBSERVE_GAP_MIN_S / 2


def observe_gap_ms(trigger_interval_s):
    return int(max(OBSERVE_GAP_TRIGGERS * trigger_interval_s, OBSERVE_GAP_MIN_S) * 1000)


class ViewHistory:
    """The views of the whole cluster's throttles, as adoption compares them (the last two, newest last). A view
    older than the newest one, or than the read the last removals were decided on, is not taken: it would show
    throttles since removed as there, or our own restores as someone else's change."""

    def __init__(self, gap_ms=None):
        self.gap_ms = gap_ms
        self.views = deque(maxlen=2)
        self.acted_ms = -1  # the time of the fresh read the latest removals were decided on

    def takes(self, view):
        newest = self.views[-1].now_ms if self.views else -1
        return view.now_ms >= newest and view.now_ms > self.acted_ms

    def admit(self, view):
        """The history to compare `view` with, or None when it is not comparable (a gap, or incomplete: then
        what looks new after it may just have been unseen, and the history starts again)."""
        stale = bool(self.views) and self.gap_ms is not None and view.now_ms - self.views[-1].now_ms > self.gap_ms
        if not view.complete or stale:
            self.views.clear()
        return list(self.views) if view.complete else None

    def after(self, actions):
        """Our own removals and restores are nobody's new throttles: the newest view as it is after them."""
        if self.views and actions:
            self.views[-1] = after_actions(self.views[-1], actions)


class Adoption:
    """`policy`: the janitor's Policy: under `--throttle-cleanup all` nothing is adopted (everything is cleared);
    a policy that does not act keeps what it found in memory (`kept`), never written."""

    def __init__(self, policy, trigger_interval_s, clock):
        self.policy, self.trigger_interval_s, self.clock = policy, trigger_interval_s, clock
        self.history = ViewHistory(observe_gap_ms(trigger_interval_s))
        self.kept = []  # dry run / off: observed ownership kept in memory only
        self.viewed_s = None  # when the last view was taken (a batch's poll or a read of its own)

    def due(self, now_s, quiet=False):
        """A view of its own is due: none was taken for a trigger interval (QUIET_VIEW_S, if longer, while `quiet`)."""
        interval_s = max(self.trigger_interval_s, QUIET_VIEW_S) if quiet else self.trigger_interval_s
        return self.viewed_s is None or now_s - self.viewed_s >= interval_s

    def looking(self):
        """A view of its own is taken now (the read may still fail: it is not retried before it is due again)."""
        self.viewed_s = self.clock()

    def takes(self, snapshot):
        return self.history.takes(view_of(snapshot))

    def observe(self, snapshot, records):
        """The `observed` record of the throttles `snapshot` shows appeared with a foreign move, or None; `records`:
        the ledger's, read before (adoption must know every request of ours first)."""
        if self.policy.cleanup == ALL:
            return None
        view = view_of(snapshot)
        history = self.history.admit(view)
        if history is None:
            return None
        request_id = new_request_id([r.request_id for r in records], view.now_ms)
        found = observe(history, view, records + self.kept, request_id, view.now_ms)
        self.history.views.append(view)
        self.viewed_s = self.clock()
        if found is not None and not self.policy.acts:
            self.kept.append(found)
        return found

    def settle_kept(self, snapshot, records):
        """Dry run: what a batch's poll shows settled is forgotten."""
        self.kept = [r for r in self.kept if not settled(snapshot, r, records, self.policy)]

    def swept(self, swept):
        """A sweep's actions (streaming.control.sweep.Swept) are ours: no view before its read is taken, and its
        removals and restores are nobody's new throttles."""
        self.history.acted_ms = max(self.history.acted_ms, swept.fresh.ts_ms)
        self.history.after([a for a in swept.actions if a.action in (REMOVED, RESTORED)])
