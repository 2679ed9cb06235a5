"""JSON-safe scalars, the one rule for every JSON this project writes (progress records, reports)."""

import math


def json_value(value):
    """NaN, infinities, None and pandas' NA -> None (null); numpy scalars -> Python scalars."""
    if value is None:
        return None
    try:
        if value != value:  # NaN
            return None
    except (TypeError, ValueError):  # pandas.NA refuses to be compared
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isinf(value):
        return None
    return value
