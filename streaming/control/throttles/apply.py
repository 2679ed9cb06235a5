"""Carrying out a plan: one IncrementalAlterConfigs through the admin door it is given (SUBTRACT entries;
DELETE or SET a rate), then read back until the cluster shows each action (broker configs propagate
asynchronously). An action refused or not confirmed by the deadline comes back `failed`, except a topic's
action refused because the topic was deleted meanwhile: its configs went with it, the action is done."""

import sys
import time
from dataclasses import replace

from streaming.vocabulary.throttle_actions import FAILED
from streaming.control.throttles.bookkeeping import confirmed
from streaming.control.ownership.records import DONE
from streaming.control.throttles.read import read_cluster
from streaming.vocabulary.config_keys import SUBTRACT, TOPIC
from streaming.vocabulary.errors import TOPIC_DELETED

READBACK_TIMEOUT_S = 15.0
READBACK_INTERVAL_S = 0.25


def _stderr(line):
    print(line, file=sys.stderr, flush=True)


def failed(action, why):
    return replace(action, action=FAILED, reason=f"{why} ({action.reason})")


def apply(admin, actions, records=(), readback_timeout_s=READBACK_TIMEOUT_S, log=_stderr, timings=None):
    """Carry out `actions` (a plan), then read back until the cluster shows each (or the deadline: the
    action comes back `failed`). Idempotent: SUBTRACT of absent entries and DELETE of absent keys are
    no-ops. Returns the outcomes and the last read-back, which also covers the topics `records` claim
    (None when an action was not confirmed). `log` gets a line per failed read-back; `timings` (a dict), if
    given, gets the seconds of the change ("alter") and of the read-back ("read_back")."""
    started = time.monotonic()
    outcome = {}
    changes = [(a.scope, a.name, a.kind, a.op, ",".join(a.entries) if a.op == SUBTRACT else a.restored_value)
               for a in actions]
    try:
        refusals = admin.alter_throttles(changes)
    except Exception as error:
        refusals = [f"{type(error).__name__}: {error}"] * len(actions)
    for action, refusal in zip(actions, refusals):
        if refusal == TOPIC_DELETED and action.scope == TOPIC:  # deleted between the read and the alter
            outcome[action] = replace(action, reason=f"{action.reason}; {TOPIC_DELETED}")
        elif refusal is not None:
            outcome[action] = failed(action, f"refused: {refusal}")
    attempted = [a for a in actions if a not in outcome]
    altered = time.monotonic()
    topics = {a.name for a in attempted if a.scope == TOPIC} | {c.topic for r in records if r.state != DONE for c in r.entries}
    deadline, after = time.monotonic() + readback_timeout_s, None
    while attempted:
        try:
            after = read_cluster(admin, topics)
            attempted = [a for a in attempted if not confirmed(a, after)]
        except Exception as error:
            after = None
            log(f"read-back failed: {type(error).__name__}: {error}")
        if not attempted or time.monotonic() > deadline:
            break
        time.sleep(READBACK_INTERVAL_S)
    for action in attempted:
        outcome[action] = failed(action, f"not confirmed by read-back within {readback_timeout_s:g}s")
    if timings is not None:
        timings.update(alter=altered - started, read_back=time.monotonic() - altered)
    return [outcome.get(a, a) for a in actions], (after if not attempted else None)
