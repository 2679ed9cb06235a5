"""Reading the `partition:broker` lists of the topic throttle configs (KIP-73), in one place: the throttle
janitor (streaming.control.throttles) and the budget model (streaming.core.budget_view) both read them.

A value is `*` (every replica of the topic), a comma-separated list of `p:b` entries, or empty.
Entries are (partition, broker) int pairs inside the project; strings only at the Kafka edge.
"""

from streaming.vocabulary.config_keys import ALL_REPLICAS


def parse_entry(text):
    partition, _, broker = text.strip().partition(":")
    return int(partition), int(broker)


def is_all(value):
    return (value or "").strip() == ALL_REPLICAS


def appended(value, items):
    """The list Kafka's APPEND of `items` (a `p:b,...` string) makes of the raw config `value` (None: no value),
    without the empty entry that brokers before 3.4 put first (streaming.vocabulary.config_keys)."""
    kept = [item.strip() for item in (value or "").split(",") if item.strip()]
    return ",".join(kept + [item for item in dict.fromkeys(i.strip() for i in items.split(",")) if item and item not in kept])


def parse(value):
    """The set of (partition, broker) pairs a raw config value lists; `*` and empty list none
    (`*` is never an entry: it is left alone by every rule that subtracts entries)."""
    if value is None or is_all(value):
        return frozenset()
    pairs = set()
    for item in value.split(","):
        if item.strip():
            pairs.add(parse_entry(item))
    return frozenset(pairs)


def entry(partition, broker):
    return f"{int(partition)}:{int(broker)}"


def format_entries(pairs):
    """`p:b,p:b` sorted by partition then broker: the value Kafka gets and reports show."""
    return ",".join(entry(p, b) for p, b in sorted(pairs))


def entry_strings(pairs):
    return [entry(p, b) for p, b in sorted(pairs)]
