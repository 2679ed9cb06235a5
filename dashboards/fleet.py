"""The fleet overview: one row per cluster - its moves, the bytes it has left, its ETA (the longest of its moves),
its moves in an unhealthy state, how long ago it was polled and, when it is not, why - and the same per cluster over
time, so that the cluster that needs a look stands out among tens of them."""

from grafanalib import core as g

from sinks import metric_names as m
from sinks.metric_rows import UNHEALTHY_STATES
from dashboards.common import CLUSTERS, DATASOURCE, NOT_FINISHED, dashboard, layout, selector, targets, timeseries

UID = "krm-fleet"
UNHEALTHY = f'state=~"{"|".join(sorted(UNHEALTHY_STATES))}"'


def _per_cluster(aggregation, metric, *matchers):
    return f"{aggregation} by ({m.CLUSTER}) ({selector(metric, CLUSTERS, *matchers)})"


PARTITIONS = _per_cluster("sum", m.PARTITIONS, NOT_FINISHED)
# The replica rows on /metrics plus those left off it (sinks.metric_rows); a cluster with no row on /metrics has
# its omitted counts (0s) alone.
OMITTED = _per_cluster("sum", m.METRICS_ROWS_OMITTED, NOT_FINISHED)
MOVES = f"{OMITTED} + on({m.CLUSTER}) ({_per_cluster('sum', m.REPLICA_STATE)} or {OMITTED} * 0)"
REMAINING = _per_cluster("sum", m.REMAINING_BYTES)
ETA = _per_cluster("max", m.ETA)
UNHEALTHY_PARTITIONS = _per_cluster("sum", m.PARTITIONS, UNHEALTHY)
POLL_AGE = f"time() - {_per_cluster('max', m.LAST_POLL)}"
# 1 while the job's looks at the cluster succeed; the reason label says why not (a table column of its own).
POLLED = f"max by ({m.CLUSTER}, reason) ({selector(m.CLUSTER_UP, CLUSTERS)})"

# Table columns: (header, instant query, unit). Each is a frame with a "Value #<refId>" column; merge joins
# them on the cluster label.
COLUMNS = (("Partitions reassigning", PARTITIONS, "none"),
           ("Replica moves", MOVES, "none"),
           ("Bytes left", REMAINING, "bytes"),
           ("ETA", ETA, "s"),
           ("Unhealthy partitions", UNHEALTHY_PARTITIONS, "none"),
           ("Last poll age", POLL_AGE, "s"),
           ("Polled", POLLED, "bool_yes_no"))


def _override(name, *properties):
    return {"matcher": {"id": "byName", "options": name},
            "properties": [{"id": key, "value": value} for key, value in properties]}


# A table cell coloured as a whole by its value's thresholds or mappings.
COLOURED_CELL = (("custom.displayMode", "color-background"), ("custom.cellOptions", {"type": "color-background"}))


def _red_above(threshold):
    return ("thresholds", {"mode": "absolute", "steps": [{"color": "green", "value": None},
                                                          {"color": "red", "value": threshold}]})


def _table():
    rename = {f"Value #{chr(ord('A') + i)}": header for i, (header, _, _) in enumerate(COLUMNS)}
    rename["reason"] = "Why"
    hidden = {"Time": True}
    overrides = [_override(header, ("unit", unit)) for header, _, unit in COLUMNS]
    overrides += [_override("Unhealthy partitions", _red_above(1), *COLOURED_CELL),
                  _override("Last poll age", _red_above(30), *COLOURED_CELL),
                  _override("Polled", *COLOURED_CELL,
                            ("mappings", [{"type": "value", "options": {
                                "0": {"color": "red", "index": 0}, "1": {"color": "green", "index": 1}}}]))]
    return g.Table(
        title="Clusters", dataSource=DATASOURCE,
        targets=targets(*((query, "") for _, query, _ in COLUMNS), instant=True, table=True),
        description="One row per cluster: partitions and replica moves in flight (those left off /metrics past its "
                    "row budget included), the bytes they have left, the ETA of the last of them (empty: unknown), "
                    "the partitions in an unhealthy state (STALLED, FALLING_BEHIND, BROKER_OFFLINE: the replica "
                    "alerts) and the seconds since the cluster was last polled (red past 30 s, three triggers at "
                    "the default: KafkaReassignmentMonitorDown); Polled and Why: whether the job's last look at the "
                    "cluster succeeded, else the kind of error it met (unreachable, authentication, tls, "
                    "authorization, refused, ...: docs/metrics.md).",
        filterable=True, overrides=overrides, sortBy=[g.TableSortByField(displayName="Unhealthy partitions", desc=True)],
        transformations=[{"id": "merge", "options": {}},
                         {"id": "organize", "options": {
                             "excludeByName": hidden, "renameByName": rename,
                             "indexByName": {name: i for i, name in enumerate([m.CLUSTER, *rename.values()])}}}])


def _labels_table():
    """The fleet file's labels of each cluster, a column each (kafka_reassignment_cluster_info)."""
    return g.Table(
        title="Clusters' labels", dataSource=DATASOURCE,
        targets=targets((selector(m.CLUSTER_INFO, CLUSTERS), ""), instant=True, table=True),
        description="The labels the fleet file gives each cluster (`labels`), one column each: join them onto any "
                    "series with `* on(cluster) group_left(LABEL) kafka_reassignment_cluster_info`.",
        filterable=True,
        transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True,
                                                                           "__name__": True}}}])


def build():
    panels = layout([
        (10, [(_table(), 24)]),
        (8, [(timeseries("Bytes left per cluster", [(REMAINING, "{{cluster}}")], "bytes",
                         "Should fall steadily; a flat line is a stall, a rising one means producers outrun the copy."),
              12),
             (timeseries("ETA per cluster", [(ETA, "{{cluster}}")], "s",
                         "Until each cluster's last move completes. Gaps mean unknown."), 12)]),
        (8, [(timeseries("Unhealthy partitions per cluster", [
                 (f"sum by ({m.CLUSTER}, state) ({selector(m.PARTITIONS, CLUSTERS, UNHEALTHY)})",
                  "{{cluster}} {{state}}")], "none",
                 "Partitions whose worst replica is STALLED, FALLING_BEHIND or BROKER_OFFLINE; the replicas "
                 "dashboard with the cluster picked says which and why.",
                 stacking={"mode": "normal", "group": "A"}, fillOpacity=30), 12),
             (timeseries("Last poll age per cluster", [(POLL_AGE, "{{cluster}}")], "s",
                         "Saw-tooth up to the trigger interval when healthy; a climbing line is a cluster not polled.",
                         thresholdsStyleMode="line",
                         thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 30}]), 12)]),
        (6, [(timeseries("Polled per cluster", [(POLLED, "{{cluster}} {{reason}}")], "none",
                         "1 while the job's looks at the cluster succeed (polled); 0 with the kind of error the last "
                         "look met: unreachable (no broker answered), authentication, tls, authorization (an ACL), "
                         "refused, bug.", drawStyle="bars", fillOpacity=80), 24)]),
        (6, [(_labels_table(), 24)]),
    ])
    return dashboard("Kafka reassignments: fleet", UID,
                     "Every cluster's reassignments at a glance: moves, bytes left, ETA, unhealthy states.",
                     panels, [])
