"""The per-broker view: what each destination broker receives (the replica metrics summed by broker)
against the throttle configured on it, and which throttles are set where. The sums are over the rows on
/metrics: past its row budget (the overview's "Moves left off /metrics") they leave out the healthy moves
with the fewest bytes left, and every panel that sums says so."""

from sinks import metric_names as m
from dashboards.common import CLUSTERS, dashboard, label_variable, layout, selector, timeseries

UID = "krm-brokers"
PARTIAL = (" Summed over the moves on /metrics: when the overview shows moves left off it, the healthy ones with "
           "the fewest bytes left are missing here.")
REPLICAS = (CLUSTERS, 'topic=~"$topic"', 'broker=~"$broker"')
BROKER = "{{cluster}} broker {{broker}}"  # a broker id is a cluster's own: its legend names the cluster


def by_broker(metric):
    return f"sum by (cluster, broker) ({selector(metric, *REPLICAS)})"


def build():
    remaining = (f"sum by (cluster, broker) ((1 - {selector(m.REPLICA_PROGRESS_RATIO, *REPLICAS)})"
                 f" * {selector(m.REPLICA_TARGET_BYTES, *REPLICAS)})")
    follower = selector(m.BROKER_THROTTLE_RATE, CLUSTERS, 'broker=~"$broker"', 'kind="follower"')
    panels = layout([
        (9, [(timeseries("Incoming reassignment rate per broker", [
                 (by_broker(m.REPLICA_COPY_RATE), BROKER),
                 (follower, f"{BROKER} follower throttle")], "Bps",
                 "Bytes per second arriving at each destination broker for the replicas it is adding, with the "
                 "follower throttle that caps it. Needs --metrics-detail replica (the broker label)." + PARTIAL), 12),
             (timeseries("Bytes remaining per broker", [(remaining, BROKER)], "bytes",
                         "Bytes each destination broker still has to copy: (1 - progress) x leader log size." + PARTIAL),
              12)]),
        (9, [(timeseries("Copied bytes per broker", [(by_broker(m.REPLICA_COPIED_BYTES), BROKER)],
                         "bytes", "Bytes of the new replicas' logs already on each destination broker." + PARTIAL), 12),
             (timeseries("Replica moves per broker and state", [
                 (f"sum by (cluster, broker, state) ({selector(m.REPLICA_STATE, *REPLICAS)})", f"{BROKER} {{{{state}}}}")],
                 "none", "Moving replicas per destination broker, by state." + PARTIAL,
                 stacking={"mode": "normal", "group": "A"}, fillOpacity=30), 12)]),
        (9, [(timeseries("Throttle rates per broker", [
                 (selector(m.BROKER_THROTTLE_RATE, CLUSTERS, 'broker=~"$broker"'), f"{BROKER} {{{{kind}}}}")], "Bps",
                 "Configured leader / follower replication throttles and the alter-log-dirs limit. A line that "
                 "outlives every reassignment is a leaked throttle."), 12),
             (timeseries("Throttled replicas per topic", [
                 (selector(m.TOPIC_THROTTLED_REPLICAS, CLUSTERS, 'topic=~"$topic"'), "{{cluster}} {{topic}} {{kind}}")], "none",
                 "Entries in each topic's leader / follower throttled-replicas config; -1 means '*' (all)."), 12)]),
    ])
    return dashboard("Kafka reassignments: brokers", UID,
                     "Incoming reassignment traffic and replication throttles per broker.", panels,
                     [label_variable("topic", "Topic"), label_variable("broker", "Broker")])
