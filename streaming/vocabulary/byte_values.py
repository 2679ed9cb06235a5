"""Byte quantities on the command line, one grammar for sizes (`--max-bytes-in-flight`) and rates
(`--throttle-min`, `--throttle-max`, schedule ceilings): a whole number and an optional unit, `1500000`,
`500KB`, `200MB`, `50MiB`, `1TB` (KB, MB, GB, TB decimal; KiB, MiB, GiB, TiB binary), a rate optionally
ending in `/s`; 1 .. 2^63-1 (Kafka's long). A bad value raises BadInput with one line."""

import re

from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput
from streaming.vocabulary.kafka_limits import LONG_MAX

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_QUANTITY = re.compile(r"([0-9]{1,19})(|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)(/s)?")


def _bytes(text, what, example, per_second):
    match = _QUANTITY.fullmatch(str(text).strip())
    if not match or (match.group(3) and not per_second):
        raise BadInput(f"not {what}: {shown(text)!r} (write e.g. {example})")
    value = int(match.group(1)) * UNITS[match.group(2)]
    if not 0 < value <= LONG_MAX:
        raise BadInput(f"{what} {shown(text)!r} is outside 1 .. {LONG_MAX} bytes{' per second' if per_second else ''}")
    return value


def byte_count(text):
    """Bytes from `500000000`, `200GB`, `50MiB`."""
    return _bytes(text, "a size in bytes", "500000000, 200GB, 50MiB", per_second=False)


def byte_rate(text):
    """Bytes per second from `1500000`, `500KB`, `200MB`, `1GiB` (optionally `/s`)."""
    return _bytes(text, "a rate", "1500000, 500KB, 200MB, 1GiB: bytes per second", per_second=True)
