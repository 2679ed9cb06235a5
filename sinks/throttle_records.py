"""What the janitor says: one line per action (`describe`, for stderr and the record's message), the
progress-topic `throttle` record of an action (`throttle_record`, sinks.records shape), and the line
logged when throttles set by another tool are observed (`describe_observed`), and what a record claims
(`describe_claims`). Pure."""

from sinks.records import THROTTLE_KIND, record, throttle_key
from streaming.vocabulary.throttle_actions import DRY_RUN, FAILED
from streaming.vocabulary.config_keys import BROKER, DELETE, SET, SUBTRACT, TOPIC, throttle_config_key


def describe(action):
    """One line saying what the action did (or would do, or failed to do)."""
    key = throttle_config_key(action.scope, action.kind)
    where = f"topic {action.name}" if action.scope == TOPIC else f"broker {action.name}"
    what = {SUBTRACT: f"removed {','.join(action.entries)} from {key}",
            DELETE: f"deleted {key}={action.value}",
            SET: f"restored {key}={action.restored_value} (was {action.value})"}[action.op]
    if action.steered:
        what = f"set {key}={action.restored_value} (was {action.value}; {action.signal})"
    if action.action == DRY_RUN:
        return f"{where}: dry run: {action.reason}"
    prefix = "FAILED " if action.action == FAILED else ""
    return f"{where}: {prefix}{what}: {action.reason}"


def throttle_record(action, ts_ms, batch_id, cluster_id, *, cluster):
    """(key, value) of the progress-topic `throttle` record for one action (sinks.records shape)."""
    value = record(
        THROTTLE_KIND, ts_ms, batch_id, cluster_id, cluster=cluster, message=describe(action),
        topic=action.name if action.scope == TOPIC else None,
        broker=int(action.name) if action.scope == BROKER else None,
        request_id=",".join(action.request_ids) or None,
        throttle={"scope": action.scope, "name": action.name, "kind": action.kind, "action": action.action,
                  "entries": list(action.entries) or None, "value": action.value,
                  "restored_value": None if action.steered else action.restored_value, "reason": action.reason,
                  **({"new_value": action.restored_value, "signal": action.signal} if action.steered else {})})
    return throttle_key(action.scope, action.name), value


def describe_claims(record):
    """The throttles an ownership record claims, in one line ("nothing" when it claims none)."""
    claims = [f"topic {c.topic} {c.kind} {c.partition}:{c.broker}" for c in record.entries]
    claims += [f"broker {c.broker} {c.kind} rate {c.rate}" for c in record.rates]
    return ", ".join(claims) or "nothing"


def describe_observed(found):
    """One line naming the claims of an `observed` ownership record."""
    return f"observed with reassignments started by another tool ({found.request_id}): {describe_claims(found)}"
