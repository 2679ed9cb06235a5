"""The dashboards as Grafana JSON: `render` one, `write_all` to a directory (what `reassign-monitor
dashboards --out DIR` does; the JSON committed next to this file is its output), and `all_queries`,
every PromQL expression with the template variables filled in, for tests against a real Prometheus."""

import json
import re
from pathlib import Path

from grafanalib._gen import DashboardEncoder

from dashboards import brokers, fleet, overview, replicas

# File stem -> builder. The order is the order of `all_queries`.
DASHBOARDS = {"fleet": fleet.build, "overview": overview.build, "brokers": brokers.build, "replicas": replicas.build}
HERE = Path(__file__).resolve().parent

# What Grafana substitutes at query time, as a plain Prometheus query must see it: "All" of a
# multi-value variable is its allValue `.*`; the rate window is Grafana's choice, any valid one will do.
BUILTINS = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h"}
_VARIABLE = re.compile(r"\$\{?(\w+)\}?")


def render(dashboard):
    return json.dumps(dashboard.to_json_data(), cls=DashboardEncoder, sort_keys=True, indent=2) + "\n"


def write_all(out_dir):
    """Write <name>.json per dashboard into `out_dir` (created if missing); the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, build in DASHBOARDS.items():
        path = out / f"{name}.json"
        path.write_text(render(build()), encoding="utf-8")
        paths.append(path)
    return paths


def substitute(expr, variables):
    """`expr` as Prometheus would receive it with every dashboard variable at "All"."""
    def value(match):
        name = match.group(1)
        if name in BUILTINS:
            return BUILTINS[name]
        if name in variables:
            return variables[name]
        raise KeyError(f"unknown variable ${name} in {expr!r}")
    return _VARIABLE.sub(value, expr)


def all_queries(variables_filled=True):
    """[(dashboard file stem, panel or annotation title, PromQL)] over every dashboard, the variables at "All"
    (`variables_filled`) or as the dashboard has them."""
    out = []
    for name, build in DASHBOARDS.items():
        data = json.loads(render(build()))
        variables = {v["name"]: v["allValue"] for v in data["templating"]["list"] if v["type"] == "query"}

        def filled(expr):
            return substitute(expr, variables) if variables_filled else expr

        for panel in data["panels"]:
            out += [(name, panel["title"], filled(t["expr"])) for t in panel["targets"]]
        out += [(name, f"annotation: {a['name']}", filled(a["expr"])) for a in data["annotations"]["list"]]
    return out
