"""The throttle janitor as a duty: when a sweep is due (streaming.control.sweep: on a fresh read, through the one
writer) and which due actions a batch's poll shows - reported once as `dry_run` under `--dry-run` or
`--throttle-cleanup off`."""

from streaming.control.sweep import given_up, settle_candidates, sweep
from streaming.control.throttles.removal import decide

SWEPT_LINE = "throttle janitor swept in "  # with its steps' seconds (ownership, read, alter, read_back, records)


class Janitor:
    """`policy`: streaming.vocabulary.throttle_actions.Policy; `log(line)`: the janitor's log."""

    def __init__(self, policy, log):
        self.policy, self.log = policy, log
        self.due = True  # at start: removals that came due while the job was down (if records are active)
        self._dry_runs = set()  # dry-run actions already reported while they stay due

    def sweeps_after(self, left, unseen, owned):
        """Whether the tick sweeps: an owned partition left the list, a move of ours came and went unseen, or a sweep is
        due (at start, after a failed one) and something is owned."""
        return bool(left or unseen or (self.due and owned))

    def settled(self, owned, unread):
        """Nothing is owned and the ledger was read: no sweep is due any more."""
        if not owned and not unread:
            self.due = False

    def batch(self, snapshot, records):
        """(sweep now, the hint of due actions, the dry runs to report) for a batch's poll and `records`."""
        due = decide(snapshot, records, self.policy)
        if not self.policy.acts:
            return False, due, self._new_dry_runs(due)
        return bool(due or settle_candidates(snapshot, records, self.policy)
                    or given_up(snapshot, records, self.policy)), due, []

    def sweep(self, admin, applier, records, hint=None):
        """The sweep (streaming.control.sweep) on a read taken now, of `records` just read; raises when it failed."""
        return sweep(admin, applier, records, self.policy, hint, log=self.log)

    def _new_dry_runs(self, actions):
        """Dry run: each due action is reported once, and again only after it stopped being due for a batch."""
        identities = {a: (a.scope, a.name, a.kind, a.op, a.entries, a.value, a.restored_value) for a in actions}
        new = [a for a in actions if identities[a] not in self._dry_runs]
        self._dry_runs = set(identities.values())
        return new
