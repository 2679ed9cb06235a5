"""The per-replica view: one table row per replica move (instant queries joined on their labels) and
the history of the moves that are slow or stuck."""

from grafanalib import core as g

from sinks import metric_names as m
from dashboards.common import (CLUSTERS, DATASOURCE, STATE_COLORS, dashboard, label_variable, layout, selector, targets,
                               timeseries)

UID = "krm-replicas"
REPLICAS = (CLUSTERS, 'topic=~"$topic"', 'broker=~"$broker"')
LEGEND = "{{cluster}} {{topic}}-{{partition}} -> {{broker}}"

# Table columns: (header, metric, unit). The state comes first, from the series whose value is 1.
COLUMNS = (("Progress", m.REPLICA_PROGRESS_RATIO, "percentunit"),
           ("Rate", m.REPLICA_COPY_RATE, "Bps"),
           ("ETA", m.REPLICA_ETA, "s"),
           ("Stalled", m.REPLICA_STALLED, "s"),
           ("Copied", m.REPLICA_COPIED_BYTES, "bytes"),
           ("Target", m.REPLICA_TARGET_BYTES, "bytes"),
           ("Remote", m.REPLICA_REMOTE_BYTES, "bytes"),
           ("In ISR", m.REPLICA_IN_ISR, "bool_yes_no"))


def _override(name, *properties):
    return {"matcher": {"id": "byName", "options": name},
            "properties": [{"id": key, "value": value} for key, value in properties]}


def _table():
    queries = [(f"{selector(m.REPLICA_STATE, *REPLICAS)} == 1", "")]
    queries += [(selector(metric, *REPLICAS), "") for _, metric, _ in COLUMNS]
    # Last, the diagnosis of the unhealthy moves: its reason_code label becomes the Reason column.
    queries += [(f"{selector(m.REPLICA_DIAGNOSIS, *REPLICAS)} == 1", "")]
    # Each instant query is a frame with a "Value #<refId>" column; merge joins them on their labels.
    value = {f"Value #{chr(ord('B') + i)}": header for i, (header, _, _) in enumerate(COLUMNS)}
    diagnosis_value = f"Value #{chr(ord('B') + len(COLUMNS))}"
    hidden = {name: True for name in ("Time", "__name__", "job", "instance", "Value #A", diagnosis_value)}
    value["reason_code"] = "Reason"
    order = [m.CLUSTER, "topic", "partition", "broker", "state", "Reason", *[h for h, _, _ in COLUMNS]]
    # Progress as a bar gauge in its cell: cellOptions for Grafana 10+, displayMode for older ones.
    gauge = (("min", 0), ("max", 1), ("custom.displayMode", "gradient-gauge"),
             ("custom.cellOptions", {"type": "gauge", "mode": "gradient"}))
    overrides = [_override(header, ("unit", unit), *(gauge if header == "Progress" else ()))
                 for header, _, unit in COLUMNS]
    overrides += [
        _override("state", ("custom.displayMode", "color-background"),
                  ("custom.cellOptions", {"type": "color-background"}),
                  ("mappings", [{"type": "value", "options": {
                      state: {"color": color, "index": i} for i, (state, color) in enumerate(STATE_COLORS.items())}}])),
    ]
    return g.Table(
        title="Replica moves", dataSource=DATASOURCE, targets=targets(*queries, instant=True, table=True),
        description="One row per replica being added. Progress = copied / leader log bytes (1 once in the ISR); "
                    "ETA (from the model of the throttle budgets the moves share) empty = cannot finish at its "
                    "share; Reason = why an unhealthy move is slow or stuck (the progress topic's `reason` "
                    "has the numbers); Stalled = seconds without growth; Remote = bytes in tiered storage, never "
                    "copied nor in the target. Past the row budget of /metrics (the "
                    "overview's 'Moves left off /metrics') the healthy moves with the fewest bytes left are not "
                    "here; unhealthy ones come first.",
        filterable=True, overrides=overrides, sortBy=[g.TableSortByField(displayName="Progress")],
        transformations=[{"id": "merge", "options": {}},
                         {"id": "organize", "options": {"excludeByName": hidden, "renameByName": value,
                                                        "indexByName": {name: i for i, name in enumerate(order)}}}])


def build():
    panels = layout([
        (12, [(_table(), 24)]),
        (9, [(timeseries("Progress per replica", [(selector(m.REPLICA_PROGRESS_RATIO, *REPLICAS), LEGEND)],
                         "percentunit", "Copied / leader log bytes. May dip while producers write faster."), 12),
             (timeseries("Copy rate per replica", [(selector(m.REPLICA_COPY_RATE, *REPLICAS), LEGEND)], "Bps",
                         "Smoothed bytes per second into each new replica."), 12)]),
        (9, [(timeseries("ETA per replica", [(selector(m.REPLICA_ETA, *REPLICAS), LEGEND)], "s",
                         "Gaps mean the replica cannot catch up at the current rates (FALLING_BEHIND)."), 12),
             (timeseries("Stalled replicas", [(f"{selector(m.REPLICA_STALLED, *REPLICAS)} > 0", LEGEND)], "s",
                         "Seconds since the copied bytes last grew, for replicas not growing. STALLED after "
                         "--stall-after (default 10m)."), 12)]),
        (8, [(timeseries("Unhealthy replicas by reason",
                         [(f"sum by (cluster, reason_code) ({selector(m.REPLICA_DIAGNOSIS, *REPLICAS)})",
                           "{{cluster}} {{reason_code}}")],
                         "none", "Replica moves per reason code (docs/alerts.md, 'Reason codes'): what to look at first."),
              24)]),
    ])
    return dashboard("Kafka reassignments: replicas", UID, "Every replica move: state, progress, rate, ETA.",
                     panels, [label_variable("topic", "Topic"), label_variable("broker", "Broker")])
