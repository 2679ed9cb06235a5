"""Every default an operator can override, and the fixed bounds documented beside them, defined once: the
CLI's flags, the job's config and the documentation read them from here."""

PROGRESS_TOPIC = "reassignment-progress"
OWNERSHIP_TOPIC = "reassignment-monitor-throttles"
TIMEOUT_S = 10.0  # --timeout: bound on each call to the cluster
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
THROTTLE_CLEANUP = "owned"
# Steady replica (and partition) rows whose progress records are rewritten each batch: up to this many, every one
# every batch; past it, each steady row once every ceil(steady rows / budget) batches (sinks.records.rewritten).
# Transitions and finished moves are written every batch whatever the count. Not a flag (docs/records.md
# "When records are written").
RECORD_ROW_BUDGET = 10_000
