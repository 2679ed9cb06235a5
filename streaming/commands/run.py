"""`reassign-monitor run`: the streaming job (see streaming.spark.driver). Spark is imported only there.

Everything the operator gave is checked before Spark starts or any topic is created (`preflight`): the
flags, that the metrics port can be bound, that a local checkpoint location is (or can become) a
writable directory, that there is a Java to start Spark with, and that the cluster answers. A failure is one line and exit 2 (or 3 for the
cluster), not a Java stack trace after a minute of Spark start-up.
"""

import os
import re
import shutil
import socket
import tempfile

from streaming.commands import flags
from streaming.vocabulary import defaults, durations, throttle_values
from streaming.spark.checkpoint import local_path
from streaming.commands import reassign_common as common
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput
from streaming.vocabulary.kafka_limits import PORT_MAX
from streaming.vocabulary.throttle_actions import OWNED, POLICIES

# Spark master URLs this job can run on ('' under spark-submit, which sets the master itself).
MASTER_PATTERN = re.compile(r"local(\[([1-9][0-9]{0,3}|\*)(,[1-9][0-9]{0,3})?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]"
                            r"|yarn|(spark|k8s)://\S+")
TRIGGER_BOUNDS_S = (0.1, durations.DAY_S)
STALL_AFTER_BOUNDS_S = (1.0, 7 * durations.DAY_S)
RATE_WINDOW_BOUNDS_S = (1.0, durations.DAY_S)
THROTTLE_INTERVAL_BOUNDS_S = (0.1, durations.DAY_S)
MAX_GUARD_LENGTH = 10_000


def master(text):
    if text and not MASTER_PATTERN.fullmatch(text):
        raise BadInput(f"--master {shown(text)!r}: not a Spark master (local[*], local[N], spark://HOST:PORT, "
                       "k8s://URL, yarn)")
    return text


def add_arguments(parser):
    parser.add_argument("--master", default=defaults.MASTER,
                        help="Spark master (default local[*]); use '' under spark-submit, which sets it")
    parser.add_argument("--checkpoint-location", default=defaults.CHECKPOINT_LOCATION, metavar="DIR",
                        help="durable directory: rates, states and the batch log survive restarts")
    common.add_progress_topic(parser, help_text="compacted topic the progress records go to (created if absent)")
    parser.add_argument("--metrics-port", type=int, default=defaults.METRICS_PORT, metavar="PORT",
                        help=f"port /metrics listens on (default {defaults.METRICS_PORT})")
    parser.add_argument("--metrics-address", default=defaults.METRICS_ADDRESS, metavar="ADDRESS",
                        help=f"address /metrics listens on (default {defaults.METRICS_ADDRESS}: every interface)")
    parser.add_argument("--metrics-detail", choices=("replica", "partition", "topic"), default=defaults.METRICS_DETAIL,
                        help="rows of the per-replica metrics: one per replica, partition or topic; at most "
                             f"{defaults.METRICS_ROW_BUDGET:,} rows get series, unhealthy ones first, the rest are "
                             "counted in kafka_reassignment_metrics_rows_omitted")
    parser.add_argument("--trigger-interval", type=durations.flag(*TRIGGER_BOUNDS_S),
                        default=defaults.TRIGGER_INTERVAL_S, metavar="DURATION", help=f"poll interval (default {defaults.TRIGGER_INTERVAL_S:g}s)")
    parser.add_argument("--stall-after", type=durations.flag(*STALL_AFTER_BOUNDS_S), default=defaults.STALL_AFTER_S,
                        metavar="DURATION", help=f"no growth for this long is STALLED (default {defaults.STALL_AFTER_S:g}s)")
    parser.add_argument("--rate-window", type=durations.flag(*RATE_WINDOW_BOUNDS_S), default=defaults.RATE_WINDOW_S,
                        metavar="DURATION", help=f"smoothing window of rates (default {defaults.RATE_WINDOW_S:g}s)")
    parser.add_argument("--throttle-cleanup", choices=POLICIES, default=defaults.THROTTLE_CLEANUP,
                        help="which throttles the job removes: owned (what this tool set or adopted), all (every "
                             "throttle once nothing reassigns, like kafka-reassign-partitions --verify), off (report only)")
    parser.add_argument("--dry-run", action="store_true", help="decide and report throttle removals, alter nothing")
    parser.add_argument("--quiet", action="store_true", help="no per-batch progress lines on stdout")
    parser.add_argument("--throttle", choices=(throttle_values.AUTO,),
                        help="auto: steer the rates of requests executed with --throttle auto, within the bounds")
    common.add_auto_throttle_bounds(parser)
    parser.add_argument("--throttle-interval", type=durations.flag(*THROTTLE_INTERVAL_BOUNDS_S),
                        default=defaults.THROTTLE_INTERVAL_S, metavar="DURATION",
                        help=f"with --throttle auto: at most one change per broker this often "
                             f"(default {defaults.THROTTLE_INTERVAL_S:g}s)")
    parser.add_argument("--throttle-guard-url", type=flags.checked(throttle_values.guard_url), metavar="URL",
                        help="with --throttle auto: Prometheus to ask the guard query (http://prometheus:9090)")
    parser.add_argument("--throttle-guard", metavar="PROMQL",
                        help="with --throttle auto: a query whose non-empty result means stress (cut the rates)")
    common.add_ownership_topic(parser)


def guard_of(args):
    """(url, query) of the guard, both or neither, and only with --throttle auto."""
    if (args.throttle_guard_url is None) != (args.throttle_guard is None):
        raise BadInput("--throttle-guard-url and --throttle-guard go together")
    if args.throttle_guard is not None:
        if args.throttle != throttle_values.AUTO:
            raise BadInput("--throttle-guard needs --throttle auto")
        if not args.throttle_guard.strip() or len(args.throttle_guard) > MAX_GUARD_LENGTH:
            raise BadInput(f"--throttle-guard must be a PromQL query of 1 to {MAX_GUARD_LENGTH} characters")
    return args.throttle_guard_url, args.throttle_guard


def config_from(args):
    from streaming.spark.driver import JobConfig

    if not 0 < args.metrics_port <= PORT_MAX:
        raise BadInput(f"--metrics-port {shown(args.metrics_port, 20)}: not a port (1-{PORT_MAX})")
    steering = common.auto_throttle_bounds(args)
    if steering is not None and (args.dry_run or args.throttle_cleanup != OWNED):
        raise BadInput("--throttle auto changes rates and restores them at completion: it needs --throttle-cleanup "
                       "owned and no --dry-run")
    guard_url, guard_query = guard_of(args)
    return JobConfig(
        bootstrap=args.bootstrap_server, command_config=args.command_config,
        cluster_name=flags.given_cluster_name(args),
        timeout_s=args.timeout,
        master=master(args.master) or None, checkpoint_location=args.checkpoint_location,
        progress_topic=args.progress_topic, ownership_topic=args.ownership_topic,
        metrics_port=args.metrics_port, metrics_address=args.metrics_address,
        metrics_detail=args.metrics_detail, trigger_interval_s=args.trigger_interval,
        stall_after_s=args.stall_after, rate_window_s=args.rate_window,
        throttle_cleanup=args.throttle_cleanup, dry_run=args.dry_run, quiet=args.quiet,
        steering=steering, throttle_interval_s=args.throttle_interval, guard_url=guard_url, guard_query=guard_query)


def check_metrics_port(address, port):
    """Bind (and release) what the metrics server will bind, as it binds it (SO_REUSEADDR, like
    prometheus_client's server): a port in use is reported before anything starts."""
    where = f"--metrics-address {shown(address)} --metrics-port {port}"
    try:
        family, kind, _, _, sockaddr = socket.getaddrinfo(address or None, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError, ValueError) as error:
        raise BadInput(f"{where}: not an address of this machine ({error})") from error
    with socket.socket(family, kind) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(sockaddr)
        except OSError as error:
            raise BadInput(f"{where}: cannot listen there ({error.strerror or error})") from error


def _probe_writable(directory, flag):
    """Create and remove a directory inside `directory`: the only check that holds for root, read-only
    mounts and full disks alike."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".reassign-monitor-probe-", dir=directory))
    except OSError as error:
        raise BadInput(f"{flag}: cannot write in {shown(directory, 200)} ({error.strerror or error})") from error


def check_checkpoint(location):
    """A local checkpoint location must be a writable directory or creatable as one; a remote one
    (hdfs://, s3a://, ...) is Spark's to reach."""
    flag = f"--checkpoint-location {shown(location, 200)}"
    path = local_path(location)
    if path is None:
        return
    if not path:
        raise BadInput(f"{flag}: empty path")
    try:
        path = os.path.abspath(path)
        existing = path
        while not _exists(existing, flag):  # the nearest ancestor that exists is where it will be created
            existing = os.path.dirname(existing)
    except ValueError as error:  # a NUL byte
        raise BadInput(f"{flag}: not a usable path ({error})") from error
    if not os.path.isdir(existing):
        what = "it exists and" if existing == path else shown(existing, 200)
        raise BadInput(f"{flag}: {what} is not a directory")
    _probe_writable(existing, flag)


def _exists(path, flag):
    try:
        os.lstat(path)  # a dangling link exists (and is no directory): Spark could not create it
    except FileNotFoundError:
        return False
    except OSError as error:  # a name too long, a loop of links, a file used as a directory
        raise BadInput(f"{flag}: {error.strerror or error}") from error
    return True


def check_java(environ=os.environ, which=shutil.which):
    """Spark's driver is a JVM, started as pyspark starts it: `$JAVA_HOME/bin/java`, else `java` on PATH. Without
    one, `run` would fail after the controller started, with a Python stack from pyspark's launcher."""
    home = environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else which("java")
    if not java or not os.access(java, os.X_OK):
        where = f"JAVA_HOME={shown(home, 200)} has no bin/java" if home else "no `java` on PATH and no JAVA_HOME"
        raise BadInput(f"no Java to start Spark ({where}): install Java 17 or 21")


def check_cluster(config):
    """One DescribeCluster: an unreachable or refusing cluster is one line (exit 3) before Spark starts."""
    from streaming.cluster.admin import KafkaClusterAdmin
    from streaming.vocabulary.errors import from_kafka_error

    admin = KafkaClusterAdmin(config.bootstrap, config.command_config, config.timeout_s)
    try:
        admin.describe_cluster()
    except Exception as error:
        raise from_kafka_error(error, f"describing {config.cluster}") from error
    finally:
        admin.close()


def preflight(config):
    check_checkpoint(config.checkpoint_location)
    check_metrics_port(config.metrics_address, config.metrics_port)
    check_java()
    check_cluster(config)


def fleet_members(every_cluster):
    """The fleet job's members (streaming.spark.fleet_driver.Member) of `every_cluster()`, the fleet file's clusters'
    args (streaming.commands.fleet.every_cluster): each cluster's flags and client file checked as `run --cluster
    NAME` checks them, a problem named by its cluster."""
    from streaming.spark.fleet_driver import Member
    from streaming.vocabulary.client_config import read_config

    members = []
    for args in every_cluster():
        if args.command_config is not None:
            read_config(args.command_config, args.config_source)
        members.append(Member(config_from(args), args.labels))
    return tuple(members)


def run_fleet(args):
    """`run --clusters FILE` without --cluster: every cluster of the file in one job. Its clusters are not asked
    before the job starts: one that is down or refuses the credentials is retried by the job, its
    kafka_reassignment_cluster_up saying why, and keeps no other cluster waiting."""
    from streaming.spark.fleet_driver import FleetConfig, run_fleet as run_job

    members = fleet_members(args.fleet)
    job = members[0].config
    check_checkpoint(job.checkpoint_location)
    check_metrics_port(job.metrics_address, job.metrics_port)
    check_java()
    return run_job(FleetConfig(job, members, args.clusters, lambda: fleet_members(args.fleet)))


def run(args):
    from streaming.spark.driver import run as run_job

    if getattr(args, "fleet", None) is not None:
        return run_fleet(args)
    config = config_from(args)
    preflight(config)
    return run_job(config)
