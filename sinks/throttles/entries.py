"""The `partition:broker` lists of the topic throttle configs (KIP-73): written here, read in
streaming.vocabulary.throttle_entries (the budget model reads them too).

Entries are (partition, broker) int pairs inside the project; strings only at the Kafka edge.
"""

from streaming.vocabulary.throttle_entries import is_all, parse, parse_entry  # noqa: F401 (the janitor's names)


def entry(partition, broker):
    return f"{int(partition)}:{int(broker)}"


def format_entries(pairs):
    """`p:b,p:b` sorted by partition then broker: the value Kafka gets and reports show."""
    return ",".join(entry(p, b) for p, b in sorted(pairs))


def entry_strings(pairs):
    return [entry(p, b) for p, b in sorted(pairs)]
