"""The overview dashboard: is anything moving, how much is left, how fast, when will it finish, what
did the throttle janitor do, and is the monitor itself alive. Its stats add up the clusters picked (the longest ETA
and the oldest poll of them); its time series have a line per cluster."""

from sinks import metric_names as m
from dashboards.common import CLUSTERS, NOT_FINISHED, STATE_COLORS, dashboard, layout, selector, stat, timeseries

UID = "krm-overview"
QUANTILES = (0.5, 0.9, 0.99)
# Three trigger intervals at the default --trigger-interval 10s, the same bound as the MonitorDown alert.
POLL_AGE_RED_S = 30

ACTIONS = f"sum by (cluster, scope, action) (increase({selector(m.THROTTLE_ACTIONS, CLUSTERS)}[$__rate_interval]))"
PLAN_PARTITIONS = f"sum by (cluster, request_id, state) ({selector(m.PLAN_PARTITIONS, CLUSTERS)})"
# The rows shown on /metrics plus those left off it (sinks.metric_rows): every move, whatever the row budget.
MOVES_IN_FLIGHT = (f"sum({selector(m.REPLICA_STATE, CLUSTERS)}) + (sum({selector(m.METRICS_ROWS_OMITTED, CLUSTERS, NOT_FINISHED)}) "
                   f"or vector(0))")


def _quantiles(histogram, name):
    return [(f"histogram_quantile({q}, sum by (cluster, le) "
             f"(rate({selector(histogram, CLUSTERS, suffix='_bucket')}[$__rate_interval])))",
             f"{{{{cluster}}}} {name} p{round(q * 100)}") for q in QUANTILES]


def _state_colors():
    return [{"matcher": {"id": "byName", "options": state},
             "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": color}}]}
            for state, color in STATE_COLORS.items()]


def _throttle_annotation():
    # A marker on every time series whenever the janitor acted, so a rate change lines up with its cause.
    return {"name": "Throttle actions", "enable": True, "iconColor": "orange", "datasource": {
        "type": "prometheus", "uid": "${datasource}"},
        "expr": f"sum by (cluster, scope, action) (increase({selector(m.THROTTLE_ACTIONS, CLUSTERS)}[1m])) > 0",
        "step": "1m", "titleFormat": "{{cluster}}: throttle {{action}} ({{scope}})", "tagKeys": "cluster,scope,action",
        "textFormat": "", "useValueForTime": False}


def build():
    poll_age = f"time() - {selector(m.LAST_POLL, CLUSTERS)}"
    remaining, rate, eta = (selector(metric, CLUSTERS) for metric in (m.REMAINING_BYTES, m.COPY_RATE, m.ETA))
    panels = layout([
        (5, [(stat("Partitions reassigning", f"sum({selector(m.PARTITIONS, CLUSTERS, NOT_FINISHED)})", "none",
                   "Partitions with an ongoing reassignment (every state but the finished ones)."), 4),
             (stat("Replica moves in flight", MOVES_IN_FLIGHT, "none",
                   "Replicas being added to a reassigning partition (rows at --metrics-detail), those left off "
                   "/metrics past its row budget included."), 4),
             (stat("Bytes remaining", f"sum({remaining})", "bytes",
                   "Bytes still to copy over all ongoing reassignments.", no_value="no data"), 4),
             (stat("Copy rate", f"sum({rate})", "Bps", "Copy rate over all moving replicas."), 4),
             (stat("Cluster ETA", f"max({eta})", "s",
                   "Until all ongoing reassignments complete (of several clusters: the last to finish); unknown when "
                   "the copy cannot outrun producers.",
                   no_value="unknown"), 4),
             (stat("Last poll age", f"max({poll_age})", "s",
                   "Seconds since the monitor last polled the cluster successfully (of several: the oldest).",
                   thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": POLL_AGE_RED_S / 2},
                               {"color": "red", "value": POLL_AGE_RED_S}], no_value="monitor down"), 4)]),
        (8, [(timeseries("Bytes remaining over time", [(remaining, "{{cluster}} remaining")], "bytes",
                         "Should fall steadily; a flat line is a stall, a rising one means producers outrun the copy."),
              12),
             (timeseries("Copy rate against configured throttles", [
                 (rate, "{{cluster}} copy rate"),
                 (f"sum by (cluster, kind) ({selector(m.BROKER_THROTTLE_RATE, CLUSTERS)})",
                  "{{cluster}} {{kind}} throttle, sum over brokers")],
                 "Bps", "The copy cannot exceed the sum of the destination brokers' follower throttles (nor of "
                        "the sources' leader throttles). A copy rate at the throttle line is throttle-bound."), 12)]),
        (8, [(timeseries("Cluster ETA over time", [(eta, "{{cluster}} ETA")], "s",
                         "Gaps mean unknown: the copy does not outrun the leaders' growth."), 12),
             (timeseries("Partitions per state", [(selector(m.PARTITIONS, CLUSTERS), "{{cluster}} {{state}}")], "none",
                         "Reassigning partitions by their worst replica state.",
                         stacking={"mode": "normal", "group": "A"}, fillOpacity=30,
                         overrides=_state_colors()), 12)]),
        (8, [(timeseries("Throttle actions", [(ACTIONS, "{{cluster}} {{scope}} {{action}}")], "none",
                         "Throttle janitor actions per interval. 'failed' needs a look (see the runbook).",
                         drawStyle="bars", fillOpacity=80), 8),
             (timeseries("Poll errors", [(f"sum by (cluster, api) (increase({selector(m.POLL_ERRORS, CLUSTERS)}"
                                          f"[$__rate_interval]))", "{{cluster}} {{api}}")], "none",
                         "Failed admin requests per interval, by API. A few are retried; a steady stream "
                         "means the monitor cannot see the cluster.", drawStyle="bars", fillOpacity=80), 8),
             (timeseries("Progress records not yet in Kafka", [(selector(m.PROGRESS_SPOOL_RECORDS, CLUSTERS), "{{cluster}} spooled")], "none",
                         "Records the job keeps in its local progress spool until Kafka acknowledges them. Near 0 "
                         "when healthy; rising while the progress topic takes no writes (Poll errors, Produce)."),
              8)]),
        # Plans (execute --max-partitions-in-flight): the whole plan, pending partitions included.
        (8, [(timeseries("Plan partitions per state", [(PLAN_PARTITIONS, "{{cluster}} {{request_id}} {{state}}")], "none",
                         "Partitions of each running or paused plan: pending ones wait for a slot under the plan's "
                         "limits. Flat pending and in_flight lines for long: the plan is stuck (KafkaReassignmentPlanStuck).",
                         stacking={"mode": "normal", "group": "A"}, fillOpacity=30), 8),
             (timeseries("Plan bytes remaining", [(selector(m.PLAN_REMAINING_BYTES, CLUSTERS), "{{cluster}} {{request_id}}")], "bytes",
                         "Bytes each plan still has to copy, pending partitions sized from their leaders' logs."), 8),
             (timeseries("Plan ETA", [(selector(m.PLAN_ETA, CLUSTERS), "{{cluster}} {{request_id}}")], "s",
                         "Until each plan's last partition is moved: the budget model with the pending partitions "
                         "submitted under the plan's limits. Gaps mean unknown."), 8)]),
        (8, [(timeseries("Batch and poll duration", _quantiles(m.BATCH_DURATION, "batch")
                         + _quantiles(m.POLL_DURATION, "poll"), "s",
                         "A batch that takes longer than the trigger interval delays every poll after it."), 8),
             (timeseries("Last poll age over time", [(poll_age, "{{cluster}}")], "s",
                         "Saw-tooth up to the trigger interval when healthy.", thresholdsStyleMode="line",
                         thresholds=[{"color": "green", "value": None}, {"color": "red", "value": POLL_AGE_RED_S}]),
              8),
             (timeseries("Moves left off /metrics", [(f"sum by (cluster, detail, state) "
                                                      f"({selector(m.METRICS_ROWS_OMITTED, CLUSTERS)})",
                                                      "{{cluster}} {{detail}} {{state}}")], "none",
                         "Rows of --metrics-detail without series of their own: /metrics shows a fixed budget of "
                         "rows, unhealthy ones first, then those with the most bytes left. Above 0, the replica "
                         "and broker dashboards show part of the moves (the counts and totals here show all); "
                         "an unhealthy state above 0 fires its alert for the moves left off.",
                         stacking={"mode": "normal", "group": "A"}, fillOpacity=30, overrides=_state_colors()), 8)]),
    ])
    return dashboard("Kafka reassignments: overview", UID,
                     "Ongoing partition reassignments, throttles and the health of kafka-reassign-monitor.",
                     panels, [], annotations=[_throttle_annotation()])
