"""Durations as operators write them on the command line: 500ms, 10s, 10m, 2h, or bare seconds."""

import re

from streaming.errors import BadInput

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def seconds(text):
    match = _PATTERN.match(str(text))
    if not match:
        raise BadInput(f"not a duration: {text!r} (write e.g. 500ms, 10s, 10m, 2h)")
    value = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if value <= 0:
        raise BadInput(f"duration must be positive: {text!r}")
    return value
