"""Every Prometheus metric the job exports: name, type, labels, help. Defined once, imported by the
collector, the dashboards, the alert-rule tests and the contract tests; docs/metrics.md is generated from it.

Every family's first label is `cluster` (CLUSTER, streaming.vocabulary.cluster_name): which cluster the series is
about, so that the series of several clusters can stand side by side in one Prometheus."""

from dataclasses import dataclass

from streaming.vocabulary.cluster_name import CLUSTER
from streaming.vocabulary.config_keys import THROTTLE_SCOPES  # noqa: F401 (label values of THROTTLE_ACTIONS)
from streaming.vocabulary.defaults import METRICS_ROW_BUDGET
from streaming.vocabulary.errors import KINDS
from streaming.vocabulary.throttle_actions import THROTTLE_ACTION_NAMES  # noqa: F401 (label values)


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str  # gauge | counter | histogram
    labels: tuple[str, ...]
    help: str


REPLICA = (CLUSTER, "topic", "partition", "broker")

REPLICA_COPIED_BYTES = Metric("kafka_reassignment_replica_copied_bytes", "gauge", REPLICA,
                              "Bytes of the new replica's log on the destination broker (numerator).")
REPLICA_TARGET_BYTES = Metric("kafka_reassignment_replica_target_bytes", "gauge", REPLICA,
                              "Bytes of the leader's log (denominator); absent when unknown.")
REPLICA_PROGRESS_RATIO = Metric("kafka_reassignment_replica_progress_ratio", "gauge", REPLICA,
                                "Copied / target bytes, 0..1; 1 once the replica is in the ISR.")
REPLICA_IN_ISR = Metric("kafka_reassignment_replica_in_isr", "gauge", REPLICA,
                        "1 when the destination broker is in the partition's ISR.")
REPLICA_COPY_RATE = Metric("kafka_reassignment_replica_copy_rate_bytes_per_second", "gauge", REPLICA,
                           "Smoothed bytes copied per second.")
REPLICA_ETA = Metric("kafka_reassignment_replica_eta_seconds", "gauge", REPLICA,
                     "Seconds until the replica catches up; absent when it cannot at the current rates.")
REPLICA_STALLED = Metric("kafka_reassignment_replica_stalled_seconds", "gauge", REPLICA,
                         "Seconds since the copied bytes last grew; 0 while progressing.")
REPLICA_REMOTE_BYTES = Metric("kafka_reassignment_replica_remote_bytes", "gauge", REPLICA,
                              "Bytes of the partition in tiered storage (KIP-405), which the new replica does not "
                              "copy: never in the target or the bytes remaining. An estimate (docs/progress.md "
                              "\"Tiered storage\"); 0 without tiered storage, absent when unknown.")
REPLICA_STATE = Metric("kafka_reassignment_replica_state", "gauge", REPLICA + ("state",),
                       "1 for the replica move's current state.")
REPLICA_DIAGNOSIS = Metric("kafka_reassignment_replica_diagnosis", "gauge", REPLICA + ("reason_code",),
                           "1 for a replica move that is not healthy, labelled with why (a reason code of "
                           "streaming.vocabulary.reasons); absent for a healthy move.")
METRICS_ROWS_OMITTED = Metric(
    "kafka_reassignment_metrics_rows_omitted", "gauge", (CLUSTER, "detail", "state"),
    f"Rows of the --metrics-detail level (label detail) left out of the per-row series, per state: /metrics shows "
    f"at most {METRICS_ROW_BUDGET} rows, unhealthy ones first, then those with the most bytes left, so that a "
    f"scrape stays small and fast. The cluster-wide gauges still count them. A STALLED, FALLING_BEHIND or "
    f"BROKER_OFFLINE count above 0 means more moves are unhealthy than are shown.")
PARTITIONS = Metric("kafka_reassignment_partitions", "gauge", (CLUSTER, "state"),
                    "Reassigning partitions per (worst replica) state.")
REMAINING_BYTES = Metric("kafka_reassignment_remaining_bytes", "gauge", (CLUSTER,),
                         "Bytes still to copy over all ongoing reassignments.")
COPY_RATE = Metric("kafka_reassignment_copy_rate_bytes_per_second", "gauge", (CLUSTER,),
                   "Cluster copy rate over all moving replicas.")
ETA = Metric("kafka_reassignment_eta_seconds", "gauge", (CLUSTER,),
             "Seconds until all ongoing reassignments complete; absent when unknown.")
BROKER_THROTTLE_RATE = Metric("kafka_reassignment_broker_throttle_rate_bytes_per_second", "gauge",
                              (CLUSTER, "broker", "kind"), "Configured replication throttle rate per broker.")
TOPIC_THROTTLED_REPLICAS = Metric("kafka_reassignment_topic_throttled_replicas", "gauge", (CLUSTER, "topic", "kind"),
                                  "Entries in the topic's throttled-replicas config; '*' counts as -1.")
THROTTLE_ACTIONS = Metric("kafka_reassignment_throttle_actions_total", "counter", (CLUSTER, "scope", "action"),
                          "Throttle janitor actions (removed, restored, dry_run, failed) and --throttle auto changes (raised, lowered).")
# The reason of a cluster the job looks at: polled, or the kind of error its last look met (the error table).
POLLED = "polled"
CLUSTER_UP_REASONS = (POLLED, *KINDS)
CLUSTER_UP = Metric("kafka_reassignment_cluster_up", "gauge", (CLUSTER, "reason"),
                    "1 while the job's looks at the cluster (a ListPartitionReassignments every controller tick) "
                    "succeed, reason polled; 0 when the last look failed, reason the kind of error it met "
                    "(streaming.vocabulary.errors KINDS: unreachable, authentication, tls, authorization, refused, ...). "
                    "Absent until the first look.")
CLUSTER_INFO = Metric("kafka_reassignment_cluster_info", "gauge", (CLUSTER,),
                      "1 for each cluster the job watches, labelled with the fleet file's labels of the cluster "
                      "(docs/operations.md \"Several clusters\"; none for a cluster given by --bootstrap-server): join "
                      "them to any series with `* on(cluster) group_left(LABEL) kafka_reassignment_cluster_info`.")
LAST_POLL = Metric("kafka_reassignment_monitor_last_poll_timestamp_seconds", "gauge", (CLUSTER,),
                   "Unix time of the last successful poll of the cluster.")
POLL_DURATION = Metric("kafka_reassignment_monitor_poll_duration_seconds", "histogram", (CLUSTER,),
                       "Wall time of one poll of the cluster.")
BATCH_DURATION = Metric("kafka_reassignment_monitor_batch_duration_seconds", "histogram", (CLUSTER,),
                        "Wall time of one whole micro-batch.")
POLL_ERRORS = Metric("kafka_reassignment_monitor_poll_errors_total", "counter", (CLUSTER, "api"),
                     "Failed admin requests during polls, per API.")
PROGRESS_SPOOL_RECORDS = Metric(
    "kafka_reassignment_monitor_progress_spool_records", "gauge", (CLUSTER,),
    "Progress records the job made durable in its local spool and Kafka has not acknowledged yet (docs/"
    "architecture.md \"The progress spool\"); always 0 with a remote checkpoint location, whose batches write to "
    "Kafka themselves. Near 0 when healthy; rising while the progress topic takes no writes (poll errors, api "
    "Produce, say why).")
PLAN_PARTITIONS = Metric("kafka_reassignment_plan_partitions", "gauge", (CLUSTER, "request_id", "state"),
                         "Partitions of a running or paused plan per state (pending, in_flight, done, cancelled, left_alone, failed); "
                         "a finished plan's series stay one batch, with its last counts.")
PLAN_REMAINING_BYTES = Metric("kafka_reassignment_plan_remaining_bytes", "gauge", (CLUSTER, "request_id"),
                              "Bytes a running or paused plan still has to copy, pending partitions included.")
PLAN_ETA = Metric("kafka_reassignment_plan_eta_seconds", "gauge", (CLUSTER, "request_id"),
                  "Seconds until the plan's last partition is moved, pending ones submitted under its limits "
                  "(the budget model); absent when unknown.")

ALL = (REPLICA_COPIED_BYTES, REPLICA_TARGET_BYTES, REPLICA_PROGRESS_RATIO, REPLICA_IN_ISR, REPLICA_COPY_RATE,
       REPLICA_ETA, REPLICA_STALLED, REPLICA_REMOTE_BYTES, REPLICA_STATE, REPLICA_DIAGNOSIS, METRICS_ROWS_OMITTED, PARTITIONS, REMAINING_BYTES,
       COPY_RATE, ETA, BROKER_THROTTLE_RATE, TOPIC_THROTTLED_REPLICAS, THROTTLE_ACTIONS, CLUSTER_UP, CLUSTER_INFO, LAST_POLL,
       POLL_DURATION,
       BATCH_DURATION, POLL_ERRORS, PROGRESS_SPOOL_RECORDS, PLAN_PARTITIONS, PLAN_REMAINING_BYTES, PLAN_ETA)

