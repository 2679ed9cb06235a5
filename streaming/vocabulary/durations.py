"""Durations as operators write them on the command line: 500ms, 10s, 10m, 2h, or bare seconds; and the
time of day every reason and log line gives (`utc_clock`).

Only digits are accepted (no 'inf', 'nan' or exponents), and every flag states its own bounds, so a
value is finite, positive and small enough for the millisecond integers the clients and Spark take.
"""

import argparse
import re
import time

from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PATTERN = re.compile(r"^\s*(-?)\s*([0-9]{1,12}(?:\.[0-9]{0,9})?|\.[0-9]{1,9})\s*(ms|s|m|h)?\s*$")
DAY_S = 86400.0


def seconds(text, minimum_s=0.001, maximum_s=7 * DAY_S):
    """`text` in seconds, within [minimum_s, maximum_s] (else BadInput)."""
    match = _PATTERN.match(str(text))
    if not match:
        raise BadInput(f"not a number of seconds or a duration: {shown(text)!r} (write e.g. 15, 500ms, 10s, 10m, 2h)")
    value = float(match.group(2)) * _UNITS[match.group(3) or "s"]
    if match.group(1) or value <= 0:
        raise BadInput(f"duration must be positive: {shown(text)!r}")
    if not minimum_s <= value <= maximum_s:
        raise BadInput(f"duration {shown(text)!r} is outside {_format(minimum_s)} .. {_format(maximum_s)}")
    return value


def _format(value_s):
    for unit in ("h", "m", "s"):
        if value_s >= _UNITS[unit] and (value_s / _UNITS[unit]).is_integer():
            return f"{value_s / _UNITS[unit]:g}{unit}"
    return f"{value_s * 1000:g}ms"


def flag(minimum_s=0.001, maximum_s=7 * DAY_S):
    """An argparse `type` for a duration flag: a bad value is a one-line usage error (exit 2)."""
    def parse(text):
        try:
            return seconds(text, minimum_s, maximum_s)
        except BadInput as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def utc_clock(ms):
    """HH:MM:SS of a Unix time in ms, in UTC (the lines that say it add "UTC")."""
    return time.strftime("%H:%M:%S", time.gmtime(ms / 1000.0))
