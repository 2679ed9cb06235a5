"""`reassign-monitor run`: the streaming job (see streaming.job). Spark is imported only here."""

from streaming.durations import seconds
from streaming.errors import BadInput


def add_arguments(parser):
    parser.add_argument("--master", default="local[*]",
                        help="Spark master (default local[*]); use '' under spark-submit, which sets it")
    parser.add_argument("--checkpoint-location", default="reassign-monitor-checkpoint", metavar="DIR",
                        help="durable directory: rates, states and the batch log survive restarts")
    parser.add_argument("--progress-topic", default="reassignment-progress", metavar="NAME")
    parser.add_argument("--metrics-port", type=int, default=9469)
    parser.add_argument("--metrics-address", default="0.0.0.0", help="address /metrics listens on")
    parser.add_argument("--metrics-detail", choices=("replica", "partition", "topic"), default="replica",
                        help="label detail of the per-replica metrics (bounds cardinality)")
    parser.add_argument("--trigger-interval", default="10s", help="poll interval (default 10s)")
    parser.add_argument("--stall-after", default="10m", help="no growth for this long is STALLED (default 10m)")
    parser.add_argument("--rate-window", default="60s", help="smoothing window of rates (default 60s)")
    parser.add_argument("--throttle-cleanup", choices=("owned", "all", "off"), default="owned")
    parser.add_argument("--dry-run", action="store_true", help="decide and report throttle removals, alter nothing")
    parser.add_argument("--quiet", action="store_true", help="no per-batch progress lines on stdout")


def config_from(args):
    from streaming.job import JobConfig

    if not 0 < args.metrics_port < 65536:
        raise BadInput(f"--metrics-port {args.metrics_port}: not a port")
    return JobConfig(
        bootstrap=args.bootstrap_server, command_config=args.command_config, timeout_s=args.timeout,
        master=args.master or None, checkpoint_location=args.checkpoint_location,
        progress_topic=args.progress_topic, metrics_port=args.metrics_port, metrics_address=args.metrics_address,
        metrics_detail=args.metrics_detail, trigger_interval_s=seconds(args.trigger_interval),
        stall_after_s=seconds(args.stall_after), rate_window_s=seconds(args.rate_window),
        throttle_cleanup=args.throttle_cleanup, dry_run=args.dry_run, quiet=args.quiet)


def run(args):
    from sinks.janitor import janitor_factory
    from streaming.job import run as run_job

    return run_job(config_from(args), janitor_factory)
