"""The generated parts of docs/: each is rendered from the one definition of its facts, so it cannot drift.

    python docs/reference.py           rewrite every generated block in place (`make docs`)
    python docs/reference.py --check   exit 1 naming each page whose generated blocks are stale

A page holds a generated block between two marker lines (BEGIN and END below, naming the block); the text
around it is written by hand. tests/test_docs.py renders every block in memory and compares.

| block | page | rendered from |
|---|---|---|
| cli | cli.md | the argument parser (streaming.cli.build_parser) |
| fleet-file | operations.md | streaming.vocabulary.fleet_file (KEYS, RUN_FLAGS), run's flags from the parser |
| metrics | metrics.md | sinks.metric_names, label values from streaming.vocabulary |
| record-fields | records.md | sinks/progress_record.schema.json |
| alerts | alerts.md | deploy/prometheus/alerts.yml |
| acls | security.md | streaming.cluster.acls |
| msk-iam-policy | security.md | streaming.cluster.acls (MSK_IAM_ACTIONS) |
| layers | architecture.md | import-linter's contracts in pyproject.toml |
"""

import argparse
import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

BEGIN = "<!-- BEGIN GENERATED {name} (python docs/reference.py; do not edit by hand) -->"
END = "<!-- END GENERATED {name} -->"
USAGE_WIDTH = 100


def _cell(text):
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


# -- the CLI, from the argument parser --

@contextmanager
def _columns(width):
    """argparse wraps usage at the terminal's width: fix it, so the text is the same on every machine."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width + 2)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _default(action):
    from streaming.vocabulary import durations

    value = action.default
    if value in (None, False, argparse.SUPPRESS):
        return ""
    if getattr(action.type, "__module__", None) == durations.__name__:  # a duration flag: seconds
        return f"`{value:g}s`"
    return f"`{value}`"


def _value(action):
    if action.nargs == 0:
        return ""
    if action.choices:
        return " \\| ".join(f"`{choice}`" for choice in action.choices)
    return f"`{action.metavar or action.dest.upper()}`".replace("|", "\\|")


def _subcommands(parser):
    [group] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return group.choices


def cli_reference():
    from streaming.cli import COMMANDS, build_parser

    parser = build_parser()
    out = ["| command | what it does |", "|---|---|"]
    out += [f"| [`{name}`](#{name}) | {_cell(text)} |" for name, text in COMMANDS.items()]
    out.append("")
    with _columns(USAGE_WIDTH):
        for name, sub in _subcommands(parser).items():
            one_of = [g for g in sub._mutually_exclusive_groups if g.required]
            out += [f"### {name}", "", _cell(sub.description), "", "```", sub.format_usage().strip(), "```", ""]
            out += ["| flag | value | default | what it does |", "|---|---|---|---|"]
            for action in sub._actions:
                if isinstance(action, argparse._HelpAction):
                    continue
                flag = ", ".join(f"`{o}`" for o in action.option_strings)
                if action.required:
                    flag += " (required)"
                elif any(action in g._group_actions for g in one_of):
                    flag += " (one of these is required)"
                out.append(f"| {flag} | {_value(action)} | {_default(action)} | {_cell(action.help or '')} |")
            out.append("")
    return "\n".join(out).rstrip("\n")


# -- the fleet file, from streaming.vocabulary.fleet_file --

def fleet_file_reference():
    from streaming.cli import build_parser
    from streaming.vocabulary import fleet_file

    out = ["| table | key | value | required | what it means |", "|---|---|---|---|---|"]
    for key in fleet_file.KEYS:
        out.append(f"| `{key.table}` | `{key.name}` | {_cell(key.value)} | {'yes' if key.required else ''} | "
                   f"{_cell(key.meaning)} |")
    run = _subcommands(build_parser())["run"]
    actions = {option[2:]: action for action in run._actions for option in action.option_strings}
    out += ["", f"The flags a cluster may set in `{fleet_file.RUN_TABLE}` (the command line's value wins):", "",
            "| flag | value | default | what it does |", "|---|---|---|---|"]
    for name in fleet_file.RUN_FLAGS:
        action = actions[name]
        value = "`true` \\| `false`" if action.nargs == 0 else _value(action)
        out.append(f"| `{name}` | {value} | {_default(action)} | {_cell(action.help or '')} |")
    return "\n".join(out)


# -- the metrics, from sinks.metric_names --

def _label_values():
    """{(metric name or None, label): (values, where they are defined)}; None: any metric with that label."""
    from sinks import metric_names as m
    from streaming.cli import build_parser
    from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, THROTTLE_SCOPES, TOPIC_THROTTLE_KEYS
    from streaming.vocabulary.kafka_apis import POLL_APIS, PRODUCE, READ
    from streaming.vocabulary.reasons import REASON_CODES
    from streaming.vocabulary.states import MOVING_STATE_NAMES, PlanPartitionState
    from streaming.vocabulary.throttle_actions import THROTTLE_ACTION_NAMES

    run = _subcommands(build_parser())["run"]
    [detail] = [a for a in run._actions if "--metrics-detail" in a.option_strings]
    return {
        (None, m.CLUSTER): ((), "the cluster's name: the fleet file's (`--clusters FILE --cluster NAME`), else "
                                "`--cluster-name`, else the first address of `--bootstrap-server` "
                                "(streaming/vocabulary/cluster_name.py)"),
        (None, "topic"): ((), "the moving partition's topic"),
        (None, "partition"): ((), "the partition's index"),
        (None, "broker"): ((), "the broker id: the destination of a move; the broker a throttle is set on"),
        (None, "state"): (MOVING_STATE_NAMES, "streaming/vocabulary/states.py `ReplicaState`, least severe first; "
                                              "COMPLETED and CANCELLED are never series: a finished move's series "
                                              "vanish and the progress topic records its end"),
        (m.PLAN_PARTITIONS.name, "state"): (tuple(s.value for s in PlanPartitionState),
                                            "streaming/vocabulary/states.py `PlanPartitionState`"),
        (None, "reason_code"): (REASON_CODES, "streaming/vocabulary/reasons.py"),
        (None, "detail"): (tuple(detail.choices), "`run --metrics-detail`"),
        (m.BROKER_THROTTLE_RATE.name, "kind"): (tuple(BROKER_THROTTLE_KEYS), "streaming/vocabulary/config_keys.py"),
        (m.TOPIC_THROTTLED_REPLICAS.name, "kind"): (tuple(TOPIC_THROTTLE_KEYS), "streaming/vocabulary/config_keys.py"),
        (None, "scope"): (THROTTLE_SCOPES, "streaming/vocabulary/config_keys.py"),
        (None, "action"): (THROTTLE_ACTION_NAMES, "streaming/vocabulary/throttle_actions.py"),
        (None, "api"): (POLL_APIS + (PRODUCE, READ), "streaming/vocabulary/kafka_apis.py"),
        (None, "request_id"): ((), "a plan's request id (`execute` prints it)"),
        (m.CLUSTER_UP.name, "reason"): (m.CLUSTER_UP_REASONS, "`polled`, else the kind of error the last look met: "
                                                              "streaming/vocabulary/errors.py `KINDS`"),
    }


def metrics_reference():
    from sinks import metric_names as m

    values = _label_values()
    out = ["| metric | type | labels | meaning |", "|---|---|---|---|"]
    for metric in m.ALL:
        labels = ", ".join(f"`{label}`" for label in metric.labels)
        out.append(f"| `{metric.name}` | {metric.kind} | {labels} | {_cell(metric.help)} |")
    out += ["", "Label values:", "", "| label | values |", "|---|---|"]
    for metric in m.ALL:
        for label in metric.labels:
            if (metric.name, label) not in values and (None, label) not in values:
                raise KeyError(f"docs/reference.py: no values documented for label {label!r} of {metric.name}")
    for (name, label), (listed, where) in values.items():
        shown = ", ".join(f"`{v}`" for v in listed)
        which = f"`{label}`" + (f" of `{name}`" if name else "")
        out.append(f"| {which} | {shown + ' (' + where + ')' if shown else where} |")
    return "\n".join(out)


# -- the progress topic's record fields, from its JSON schema --

def _schema_type(spec):
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    if "enum" in spec:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    kinds = spec.get("type", "any")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    text = " or ".join(kinds)
    bounds = [f"{word} {spec[key]}" for key, word in (("minimum", ">="), ("maximum", "<=")) if key in spec]
    return text + (f" ({', '.join(bounds)})" if bounds else "")


def record_fields():
    from sinks.records import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text())
    required = set(schema["required"])
    out = ["| field | type | in every record | notes |", "|---|---|---|---|"]
    for name, spec in schema["properties"].items():
        notes = spec.get("description", "")
        if spec.get("properties"):
            inner = ", ".join(f"`{k}`: {_schema_type(v)}" for k, v in spec["properties"].items())
            notes = (notes + "; " if notes else "") + f"fields: {inner}"
        out.append(f"| `{name}` | {_schema_type(spec)} | {'yes' if name in required else ''} | {_cell(notes)} |")
    return "\n".join(out)


# -- the alerts, from deploy/prometheus/alerts.yml --

def alert_table():
    import yaml

    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yml").read_text())
    out = ["| alert | severity | for | fires when |", "|---|---|---|---|"]
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            name = rule["alert"]
            expr = " ".join(rule["expr"].split())
            out.append(f"| [{name}](#{name.lower()}) | {rule['labels']['severity']} | {rule.get('for', '')} | "
                       f"`{_cell(expr)}` |")
    return "\n".join(out)


# -- the ACLs, from streaming.cluster.acls --

def acl_reference():
    from streaming.cluster import acls

    return acls.markdown()


def msk_iam_reference():
    from streaming.cluster import acls

    return acls.msk_iam_markdown()


# -- the layers, from import-linter's contracts in pyproject.toml --

def _modules(names):
    return ", ".join(f"`{name}`" for name in names)


def layer_reference():
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    out = []
    for contract in contracts:
        if contract["type"] == "layers":
            out += [f"**{contract['name']}** (top to bottom; a layer imports only the layers below it, and modules "
                    "side by side in one layer do not import each other):", "", "| layer | packages |", "|---|---|"]
            out += [f"| {n} | {_modules(layer.split(' | '))} |" for n, layer in enumerate(contract["layers"], 1)]
            out.append("")
    out += ["| contract | modules | may not import |", "|---|---|---|"]
    for contract in contracts:
        if contract["type"] == "forbidden":
            allowed = "; ".join(f"except `{rule}`" for rule in contract.get("ignore_imports", ()))
            out.append(f"| {_cell(contract['name'])} | {_modules(contract['source_modules'])} | "
                       f"{_modules(contract['forbidden_modules'])}{' (' + allowed + ')' if allowed else ''} |")
    unknown = {c["type"] for c in contracts} - {"layers", "forbidden"}
    if unknown:
        raise ValueError(f"docs/reference.py: cannot render import-linter contracts of type {sorted(unknown)}")
    return "\n".join(out)


BLOCKS = {  # name -> (page under docs/, renderer)
    "cli": ("cli.md", cli_reference),
    "fleet-file": ("operations.md", fleet_file_reference),
    "metrics": ("metrics.md", metrics_reference),
    "record-fields": ("records.md", record_fields),
    "alerts": ("alerts.md", alert_table),
    "acls": ("security.md", acl_reference),
    "msk-iam-policy": ("security.md", msk_iam_reference),
    "layers": ("architecture.md", layer_reference),
}


def with_block(text, name, body):
    """`text` with the block `name` replaced by `body` (its markers stay)."""
    begin, end = BEGIN.format(name=name), END.format(name=name)
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"expected exactly one generated block {name!r} between\n  {begin}\nand\n  {end}")
    return pattern.sub(lambda _: f"{begin}\n\n{body}\n\n{end}", text)


def rendered_pages():
    """{page path: its text with every generated block rendered now}."""
    pages = {}
    for name, (page, render) in BLOCKS.items():
        path = DOCS / page
        pages[path] = with_block(pages.get(path, path.read_text()), name, render())
    return pages


def main(argv=None):
    parser = argparse.ArgumentParser(prog="docs/reference.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated block is stale; write nothing")
    args = parser.parse_args(argv)
    stale = [path for path, text in rendered_pages().items() if path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)} (run `make docs`)", file=sys.stderr)
        return 1 if stale else 0
    for path, text in rendered_pages().items():
        if path in stale:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
