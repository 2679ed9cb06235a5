"""What the dashboards share: the datasource and template variables, PromQL selector helpers,
panel constructors with this project's defaults, and a grid layout so no module counts pixels.

Every dashboard has the `cluster` variable (the label of every series, docs/metrics.md "The cluster label") and
every query is filtered by it (ONE_CLUSTER's matcher), so one Prometheus scraping several jobs shows each cluster
on its own or any of them together."""

import attr
from grafanalib import core as g

from sinks import metric_names as m
from streaming.vocabulary.states import FINISHED_STATES

# Every panel and variable queries the datasource the viewer picks, so one JSON fits any Grafana.
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
TAGS = ["kafka", "kafka-reassign-monitor"]

# Partitions that still reassign: every state but the finished ones (streaming.vocabulary.states).
FINISHED_RE = "|".join(sorted(state.name for state in FINISHED_STATES))
NOT_FINISHED = f'state!~"{FINISHED_RE}"'

# The state column and legend colours, most severe reddest (ReplicaState order).
STATE_COLORS = {"COMPLETED": "green", "CANCELLED": "text", "IN_SYNC": "green", "COPYING": "blue",
                "PENDING": "purple", "UNOBSERVED": "blue", "FALLING_BEHIND": "orange", "STALLED": "red", "BROKER_OFFLINE": "dark-red"}

GRID_WIDTH = 24

# The matcher every query puts on every series: the clusters picked in the `cluster` variable.
CLUSTERS = f'{m.CLUSTER}=~"${m.CLUSTER}"'


def datasource_variable():
    return g.Template(name="datasource", label="Data source", query="prometheus", type="datasource")


def label_variable(name, label, metric=m.REPLICA_STATE):
    """A multi-select variable over one label of `metric` in the clusters picked; "All" is the regex `.*` so it also
    matches series the label values query has not seen yet."""
    return _multi_select(name, label, f"label_values({selector(metric, CLUSTERS)}, {name})")


def cluster_variable():
    """The clusters: every job exports its liveness gauge from its first poll, moving or not."""
    return _multi_select(m.CLUSTER, "Cluster", f"label_values({m.LAST_POLL.name}, {m.CLUSTER})")


def _multi_select(name, label, query):
    return g.Template(name=name, label=label, query=query, dataSource=DATASOURCE, includeAll=True, multi=True,
                      allValue=".*", refresh=g.REFRESH_ON_TIME_RANGE_CHANGE)


def selector(metric, *matchers, suffix=""):
    """`name{m1, m2}`, the name from sinks.metric_names; `suffix` for histogram series (`_bucket`)."""
    inside = ", ".join(matchers)
    return f"{metric.name}{suffix}{{{inside}}}" if inside else f"{metric.name}{suffix}"


def targets(*queries, instant=False, table=False):
    """Targets from (expr, legend) pairs, refIds A, B, C... in order."""
    return [g.Target(expr=expr, legendFormat=legend, refId=chr(ord("A") + i), datasource=DATASOURCE,
                     instant=instant, format="table" if table else g.TIME_SERIES_TARGET_FORMAT)
            for i, (expr, legend) in enumerate(queries)]


def timeseries(title, queries, unit, description, **options):
    return g.TimeSeries(title=title, description=description, dataSource=DATASOURCE, targets=targets(*queries),
                        unit=unit, tooltipMode="multi", legendDisplayMode="table", legendCalcs=["lastNotNull", "max"],
                        **options)


def stat(title, expr, unit, description, thresholds=None, no_value="none"):
    steps = thresholds or [{"color": "green", "value": None}]
    return g.Stat(title=title, description=description, dataSource=DATASOURCE, targets=targets((expr, "")),
                  format=unit, reduceCalc="lastNotNull", noValue=no_value, graphMode="area",
                  thresholdType="absolute", thresholds=steps)


def layout(rows):
    """Panels placed on the 24-column grid: `rows` is a list of (height, [(panel, width), ...])."""
    placed, y = [], 0
    for height, cells in rows:
        x = 0
        for panel, width in cells:
            assert x + width <= GRID_WIDTH, f"row overflows the grid at {panel.title!r}"
            placed.append(attr.evolve(panel, gridPos=g.GridPos(h=height, w=width, x=x, y=y)))
            x += width
        y += height
    return placed


def dashboard(title, uid, description, panels, variables, annotations=()):
    links = [{"title": "Reassignments", "type": "dashboards", "tags": TAGS[1:], "asDropdown": True,
              "includeVars": False, "keepTime": True}]
    return g.Dashboard(
        title=title, uid=uid, description=description, tags=TAGS, panels=panels, links=links,
        templating=g.Templating(list=[datasource_variable(), cluster_variable(), *variables]),
        annotations=g.Annotations(list=list(annotations)), refresh="30s", timezone="browser",
        schemaVersion=36, graphTooltip=g.GRAPH_TOOLTIP_MODE_SHARED_CROSSHAIR,
        time=g.Time("now-6h", "now")).auto_panel_ids()
