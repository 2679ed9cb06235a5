"""Setting a request's throttles (streaming.control.throttles.claims.ThrottleSetting) on the cluster: APPEND the
entries, SET the rates, then read back until the cluster shows them (broker configs reach the broker
asynchronously). What `execute` and each wave of a plan (streaming.control.plans.submit) do; the I/O goes through
the admin door they are given."""

import time

from streaming.vocabulary import throttle_entries as te
from streaming.control.throttles.read import read_cluster
from streaming.control.throttles.view import view_of
from streaming.vocabulary.config_keys import APPEND, BROKER, SET, TOPIC
from streaming.vocabulary.errors import ClusterError

READBACK_INTERVAL_S = 0.25
MIN_READBACK_S = 5.0


def some(items, shown=3):
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def missing_from(setting, snapshot):
    """What of `setting` the cluster does not show yet, one string each."""
    view = view_of(snapshot)
    missing = [f"{t} {k}: {te.format_entries(pairs - te.parse(view.topic_values.get((t, k))))}"
               for (t, k), pairs in setting.appends.items() if pairs - te.parse(view.topic_values.get((t, k)))]
    missing += [f"broker {b} {k}" for (b, k), rate in setting.rates.items() if view.broker_rates.get((b, k)) != rate]
    return missing


def set_throttles(admin, setting, timeout_s):
    """APPEND and SET (both idempotent), then wait until the cluster shows them. ClusterError when refused
    or not visible within max(timeout_s, MIN_READBACK_S)."""
    changes = [(TOPIC, topic, kind, APPEND, te.format_entries(pairs)) for (topic, kind), pairs in sorted(setting.appends.items())]
    changes += [(BROKER, broker, kind, SET, rate) for (broker, kind), rate in sorted(setting.rates.items())]
    refused = {}
    for (scope, name, kind, _, _), error in zip(changes, admin.alter_throttles(changes)):
        if error is not None:
            refused.setdefault(error, []).append(f"{scope} {name} {kind}")
    if refused:
        raise ClusterError("setting throttles refused: " + "; ".join(
            f"{error} ({some(where)})" for error, where in refused.items()))
    deadline = time.monotonic() + max(timeout_s, MIN_READBACK_S)
    while True:
        missing = missing_from(setting, read_cluster(admin, {t for t, _ in setting.appends}))
        if not missing:
            return
        if time.monotonic() > deadline:
            raise ClusterError(f"throttles not visible after setting them: {'; '.join(missing)}")
        time.sleep(READBACK_INTERVAL_S)
