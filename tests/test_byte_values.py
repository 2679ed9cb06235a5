"""Byte quantities on the command line: one grammar for sizes and rates (streaming.vocabulary.byte_values)."""

import pytest

from streaming.vocabulary.byte_values import byte_count, byte_rate
from streaming.vocabulary.errors import BadInput
from streaming.vocabulary.kafka_limits import LONG_MAX

CASES = [
    # id, parser, text, bytes (None: refused)
    ("plain number", byte_count, "1500000", 1_500_000),
    ("decimal unit", byte_count, "200GB", 200 * 10**9),
    ("binary unit", byte_count, "50MiB", 50 * 2**20),
    ("terabytes", byte_count, "1TB", 10**12),
    ("a size is not per second", byte_count, "1GB/s", None),
    ("a rate may say per second", byte_rate, "5MB/s", 5 * 10**6),
    ("a rate without /s", byte_rate, "500KB", 500_000),
    ("zero", byte_rate, "0", None),
    ("negative", byte_count, "-1", None),
    ("fraction", byte_count, "1.5GB", None),
    ("unknown unit", byte_count, "10PB", None),
    ("unit alone", byte_rate, "GB", None),
    ("space before the unit", byte_count, "1 GB", None),
    ("past Kafka's long", byte_count, str(LONG_MAX + 1), None),
    ("Kafka's long", byte_rate, str(LONG_MAX), LONG_MAX),
    ("5,000 digits", byte_rate, "9" * 5000, None),
]


@pytest.mark.parametrize("parse, text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_byte_values(parse, text, expected):
    if expected is None:
        with pytest.raises(BadInput):
            parse(text)
    else:
        assert parse(text) == expected
