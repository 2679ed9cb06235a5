"""The throttle janitor as a duty: when a sweep is due, what a sweep decides on a read taken now
(streaming.control.sweep.decide_sweep: pure, carried out by the one writer's `apply_sweep`), and which due actions a
batch's poll shows - reported once as `dry_run` under `--dry-run` or `--throttle-cleanup off`. It reads nothing
and writes nothing: the scheduler hands it the ledger's records and the reads, and hands its decisions to the
applier."""

from streaming.control.sweep import decide_sweep, settle_candidates
from streaming.control.throttles.bookkeeping import given_up
from streaming.control.throttles.removal import decide
from streaming.vocabulary.throttle_actions import ALL

SWEPT_LINE = "throttle janitor swept in "  # with its steps' seconds (ownership, read, alter, read_back, records)


def swept_line(took_s, steps):
    """The line said of a sweep that took `took_s` seconds, with its steps' (name -> seconds)."""
    return f"{SWEPT_LINE}{took_s:.2f} s ({', '.join(f'{name} {s:.2f}' for name, s in steps.items())})"


def clears_all(policy, snapshot):
    """Under `--throttle-cleanup all`, whether a read (a batch's poll, or the controller's own) shows a throttle to
    clear: a batch is wanted for it."""
    return policy.cleanup == ALL and bool(snapshot["topic_throttles"] or snapshot["broker_throttles"])


def why_it_sweeps(left, unseen, log_dir_brokers, started):
    """The line said before a tick's sweep: why it runs. `left`, `unseen`: the (topic, partition)s, sorted, of the
    owned partitions that left the list and of the moves of ours that came and went between two looks;
    `log_dir_brokers`: the brokers whose moves between log dirs ended; `started`: a tick listed since start."""
    if log_dir_brokers and not (left or unseen):
        return (f"the moves between log dirs on broker(s) {', '.join(map(str, log_dir_brokers))} ended: "
                f"running the throttle janitor")
    if left or unseen:
        first = (left or unseen)[0]
        said = [f"{len(left)} owned partition(s) left the reassignment list"] if left else []
        said += [f"{len(unseen)} move(s) of ours came and went between two looks"] if unseen else []
        return (f"{'; '.join(said)} ({first[0]}-{first[1]}{', ...' if len(left) + len(unseen) > 1 else ''}): "
                f"running the throttle janitor")
    if not started:
        return ("ownership records are active at start: running the throttle janitor for removals that came due "
                "while the job was down")
    return "running the throttle janitor again (its last run failed)"


class Janitor:
    """`policy`: streaming.vocabulary.throttle_actions.Policy."""

    def __init__(self, policy):
        self.policy = policy
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

    def sweep(self, fresh, records):
        """What a sweep decides (streaming.control.sweep.Decided) on `fresh`, a read taken after the ledger's
        `records` were refreshed."""
        return decide_sweep(fresh, records, self.policy)

    def unread(self):
        """The ledger could not be read: a request written meanwhile is unknown here (its move may end meanwhile:
        the ownership topic's leader was SIGKILLed mid-move), so a sweep is due once it is read."""
        self.due = True

    def swept(self, failed):
        """A sweep ended: due again next tick when it failed (on a fresh read again)."""
        self.due = failed

    def _new_dry_runs(self, actions):
        """Dry run: each due action is reported once, and again only after it stopped being due for a batch."""
        identities = {a: (a.scope, a.name, a.kind, a.op, a.entries, a.value, a.restored_value) for a in actions}
        new = [a for a in actions if identities[a] not in self._dry_runs]
        self._dry_runs = set(identities.values())
        return new
