"""The values `--throttle auto` takes on the command line: byte rates (`1MB`, `200MB`, `1500000`) and schedule
windows (`22:00-06:00=200MB[,HH:MM-HH:MM=RATE...]`, UTC). Parsed strictly (digits and a known unit only;
every rate 1 .. Kafka's long), a bad value raising BadInput with one line."""

import re

from streaming.vocabulary.byte_values import byte_rate
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput

AUTO = "auto"
_WINDOW = re.compile(r"([0-9]{2}):([0-9]{2})-([0-9]{2}):([0-9]{2})=(.+)")
MAX_WINDOWS = 48


def _minute(hours, minutes, window):
    if int(hours) > 23 or int(minutes) > 59:
        raise BadInput(f"schedule window {shown(window)!r}: {hours}:{minutes} is not a time of day (00:00-23:59)")
    return int(hours) * 60 + int(minutes)


def schedule(text):
    """((start minute, end minute, ceiling bytes/s), ...) from `HH:MM-HH:MM=RATE[,...]`; a window whose end is
    not after its start wraps past midnight; start and end may not be equal."""
    windows = [w.strip() for w in str(text).split(",")]
    if len(windows) > MAX_WINDOWS:
        raise BadInput(f"schedule has more than {MAX_WINDOWS} windows")
    out = []
    for window in windows:
        match = _WINDOW.fullmatch(window)
        if not match:
            raise BadInput(f"schedule window {shown(window)!r} is not HH:MM-HH:MM=RATE (e.g. 22:00-06:00=200MB)")
        start, end = _minute(*match.group(1, 2), window), _minute(*match.group(3, 4), window)
        if start == end:
            raise BadInput(f"schedule window {shown(window)!r} is empty (start equals end)")
        out.append((start, end, byte_rate(match.group(5))))
    return tuple(out)


def throttle(text):
    """`--throttle`: `auto` or bytes per second (digits only, as Kafka's tool takes it)."""
    if text == AUTO:
        return AUTO
    if not re.fullmatch(r"-?[0-9]{1,5000}", str(text)):
        raise BadInput(f"--throttle {shown(text, 30)!r}: not a number of bytes per second or 'auto'")
    return int(text)


_URL = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253})(:[0-9]{1,5})?(/[^\s?#]*)?")


def guard_url(text):
    """`--throttle-guard-url`: the Prometheus base URL, http(s)://HOST[:PORT][/PATH] (no query, no credentials)."""
    match = _URL.fullmatch(str(text))
    if not match or (match.group(2) and not 0 < int(match.group(2)[1:]) < 65536):
        raise BadInput(f"--throttle-guard-url {shown(text)!r} is not http(s)://HOST[:PORT][/PATH]")
    return str(text).rstrip("/")
