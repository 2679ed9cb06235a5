"""Every default an operator can override, and the fixed bounds documented beside them, defined once: the
CLI's flags, the job's config and the documentation read them from here."""

from streaming.vocabulary.throttle_actions import Cleanup

PROGRESS_TOPIC = "reassignment-progress"
OWNERSHIP_TOPIC = "reassignment-monitor-throttles"
TIMEOUT_S = 10.0  # --timeout: bound on each call to the cluster
# Not a flag: each request's own deadline (kafka-python's request and connection-setup timeouts), after which the
# node that did not answer is held as unresponsive (streaming.cluster.held). A call may ask another node after a
# lapse, so it is at most half of --timeout. Measured (bench/dead_node.py, bench/RESULTS.md "Healthy request
# times"): at 10,000 moving partitions the slowest healthy answer of any request a poll makes took 0.27 s at a load
# of 2-5 (ListPartitionReassignments) and about 1 s at a load of 21 (DescribeLogDirs, ListOffsets); 2.5 s keeps a
# margin of 2.5 over the worst and lets the controller's 1 s ticks stay within two 2 s triggers + 1 s of each
# other across a lapse.
REQUEST_DEADLINE_S = 2.5

TRIGGER_INTERVAL_S = 10.0
STALL_AFTER_S = 600.0
RATE_WINDOW_S = 60.0
THROTTLE_INTERVAL_S = 30.0  # --throttle auto: at most one rate change per broker this often
METRICS_PORT = 9469
METRICS_ADDRESS = "0.0.0.0"  # Kubernetes scrapes the pod's address; tests pass 127.0.0.1
METRICS_DETAIL = "replica"
# Rows of --metrics-detail with their own series on /metrics (13 samples each): a scrape of about 6 MB whatever
# the size of the move (bench/RESULTS.md "Scrape size per --metrics-detail"). Not a flag: docs/metrics.md
# "The row budget" says why.
METRICS_ROW_BUDGET = 5_000
CHECKPOINT_LOCATION = "reassign-monitor-checkpoint"
MASTER = "local[*]"
THROTTLE_CLEANUP = Cleanup.OWNED
# Steady replica (and partition) rows whose progress records are rewritten each batch: up to this many, every one
# every batch; past it, each steady row once every ceil(steady rows / budget) batches (sinks.records.rewritten).
# Transitions and finished moves are written every batch whatever the count. Not a flag (docs/records.md
# "When records are written").
RECORD_ROW_BUDGET = 10_000


def request_deadline_s(timeout_s):
    return min(REQUEST_DEADLINE_S, timeout_s / 2)


def poll_request_deadline_s(timeout_s, trigger_interval_s):
    """The request deadline of the batches' polls (the executors' doors): at most half a trigger interval as well, so
    that a broker that stops answering costs the poll that meets it half a trigger, not a trigger and more. At a 2 s
    trigger the whole deadline kept the first batch after one broker's port was cut off 4.5-7.2 s from the one before
    it (tests/test_faults_netns_cluster.py: a new worker's door bootstrapping from that broker paid a second lapse)."""
    return min(request_deadline_s(timeout_s), trigger_interval_s / 2)
