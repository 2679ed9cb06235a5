"""Just enough PromQL reading for the dashboard and alert-rule tests: which series names an expression
uses, and which label matchers it puts on them, checked against sinks.metric_names."""

import re

from sinks import metric_names as m
from sinks.prometheus import DETAIL_KEYS
from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from streaming.vocabulary.states import STATE_NAMES
from streaming.vocabulary.states import PlanPartitionState

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")

# Every series name the job exposes -> the metric that defines it and the labels it may carry.
SERIES = {}
for _metric in m.ALL:
    if _metric.kind == "histogram":
        SERIES.update({_metric.name + s: (_metric, _metric.labels + (("le",) if s == "_bucket" else ()))
                       for s in HISTOGRAM_SUFFIXES})
    else:
        SERIES[_metric.name] = (_metric, _metric.labels)

# Label values with a closed set (a matcher on them naming anything else matches nothing, silently).
LABEL_VALUES = {"state": set(STATE_NAMES), "action": set(m.THROTTLE_ACTION_NAMES), "scope": set(m.THROTTLE_SCOPES),
                "kind": set(BROKER_THROTTLE_KEYS) | set(TOPIC_THROTTLE_KEYS), "detail": set(DETAIL_KEYS)}
# Where a series' label has its own closed set: a plan's partitions are counted by streaming.control.plans.partition_states.
SERIES_LABEL_VALUES = {m.PLAN_PARTITIONS.name: {"state": set(tuple(PlanPartitionState))}}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_RANGE = re.compile(r"\[[^\]]*\]")
_IDENT = re.compile(r"(?<![\w:.])([a-zA-Z_:][\w:]*)\s*(\()?")
_SELECTOR = re.compile(r"([a-zA-Z_:][\w:]*)\{([^{}]*)\}")
_MATCHER = re.compile(r'\s*([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def series_names(expr):
    """Names of the series `expr` selects (functions, keywords, labels and literals left out)."""
    bare = _RANGE.sub("", _GROUPING.sub("", _MATCHERS.sub("", _STRING.sub('""', expr))))
    return [name for name, call in _IDENT.findall(bare) if not call and name not in KEYWORDS]


def matchers(expr):
    """[(series name, label, operator, value)] for every `name{label op "value"}` in `expr`."""
    out = []
    for name, inside in _SELECTOR.findall(expr):
        out += [(name, label, op, value) for label, op, value in _MATCHER.findall(inside)]
    return out


def problems(expr):
    """What is wrong with `expr` against the metric catalogue: unknown series, a label the series does
    not have, a value outside a label's closed set. Empty when fine."""
    found = []
    names = series_names(expr)
    if not names:
        found.append("selects no series")
    found += [f"unknown series {name}" for name in names if name not in SERIES]
    for name, label, op, value in matchers(expr):
        if name in SERIES and label not in SERIES[name][1]:
            found.append(f"{name} has no label {label}")
        allowed = SERIES_LABEL_VALUES.get(name, {}).get(label) or LABEL_VALUES.get(label)
        if allowed and "$" not in value and value != ".*":
            found += [f"{label}={part!r} is not one of {sorted(allowed)}"
                      for part in value.split("|") if part not in allowed]
    return found
