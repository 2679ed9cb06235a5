"""Every dashboard query against a real Prometheus scraping the real job while a real throttled move runs: the
fleet overview's too, each query filtered by the `cluster` variable (at "All") and every series named by the job's
--cluster-name.

The move is started with `reassign-monitor execute --throttle --max-partitions-in-flight` (a plan of one
partition, which the job advances: the plan panels have data too), so the job's janitor (`--throttle-cleanup
owned`, the default) removes its throttles at completion and the throttle-action panels have data too.
A second, tiny move held at a 1 B/s leader throttle shows a replica whose copied bytes stop growing (the
"Stalled replicas" panel) and is cancelled once Prometheus has seen it. Every query must parse and must
have returned data at some moment: instant queries during and after the move, and one range query over
the whole window ("did it ever return data"). The job's /metrics taken mid-move passes `promtool check
metrics` without a single lint problem.
"""

import json
import shutil
import subprocess
import time
import urllib.request

import pytest
from kafka import TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from dashboards.build import all_queries
from sinks import metric_names as m
from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from tests.cluster_cli import throttles
from tests.job_process import CLI, OWNED_JOB_CLUSTER
from tests.kafka_fixtures import wait_for
from tests.prometheus_server import prometheus_server

pytestmark = pytest.mark.cluster

MEGABYTES = 32  # at RATE: a move of 30+ s
RATE = 1_000_000
SOURCE, DESTINATION = 1, 2  # the big move
STUCK_SOURCE, STUCK_DESTINATION = 3, 1  # the tiny stalled move (broker 3's leader rate: 1 B/s)

# Queries a healthy move cannot make return data, each with why. Keep this short: anything a move can
# produce cheaply, the test makes it produce instead.
NO_DATA_EXPECTED = {
    'sum by (cluster, api) (increase(kafka_reassignment_monitor_poll_errors_total{cluster=~".*"}[1m]))':
        "the poll-errors counter's series appear at the first failed admin request; a healthy cluster answers "
        "every one, and making a broker refuse requests would disturb the other tests sharing the cluster",
    'kafka_reassignment_replica_diagnosis{cluster=~".*", topic=~".*", broker=~".*"} == 1':
        "a diagnosis series exists only while a move is unhealthy long enough for a reason (STALLED, FALLING_BEHIND, "
        "PENDING for two triggers): this test's stuck move is cancelled as soon as it stops growing; "
        "test_job_cluster sees THROTTLE_TOO_LOW and COPY_BELOW_GROWTH on /metrics",
    'sum by (cluster, reason_code) (kafka_reassignment_replica_diagnosis{cluster=~".*", topic=~".*", broker=~".*"})':
        "the same diagnosis series, summed per reason code",
}


@pytest.fixture
def job(owned_job):
    """The shared job with `--throttle-cleanup owned` and `--stall-after 20s` (conftest), started but not
    waited on: the test produces its data while Spark starts."""
    return owned_job.ensure_started()


def execute_plan(cluster, directory, topic, replicas, throttle):
    """The move as a plan of one partition (`--max-partitions-in-flight`), so the plan panels have data too:
    its first wave is submitted here, the job carries the plan to the end."""
    plan = directory / f"{topic}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}))
    result = subprocess.run([CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file",
                             str(plan), "--throttle", str(throttle), "--max-partitions-in-flight", "1",
                             "--output", "json"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[0])["request_id"]


def reassigning(cluster):
    admin = cluster.admin()
    try:
        return {tp.topic for tp in admin.list_partition_reassignments()}
    finally:
        admin.close()


def cancel(cluster, topics):
    admin = cluster.admin()
    try:
        admin.alter_partition_reassignments({TopicPartition(t, 0): None for t in topics})
    finally:
        admin.close()


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


class Observations:
    """Per query expression: did it ever return data, and any error Prometheus gave for it."""

    def __init__(self, prom, exprs):
        self.prom = prom
        self.exprs = sorted(set(exprs))
        self.data = {e: False for e in self.exprs}
        self.errors = {}

    def instant(self):
        for expr in self.exprs:
            try:
                if self.prom.query(expr):
                    self.data[expr] = True
            except ValueError as error:
                self.errors[expr] = str(error)

    def over(self, start, end):
        for expr in self.exprs:
            try:
                result = self.prom.get("api/v1/query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}",
                                       step="1s")["result"]
            except ValueError as error:
                self.errors[expr] = str(error)
                continue
            if any(series["values"] for series in result):
                self.data[expr] = True


def test_every_dashboard_query_parses_and_returns_data_during_a_real_move(cluster, job, tmp_path):
    queries = all_queries()
    big, stuck = cluster.unique_topic("dash-move"), cluster.unique_topic("dash-stall")
    phases, began = [], time.monotonic()

    def phase(name):
        phases.append(f"{name} +{time.monotonic() - began:.0f}s")

    brokers = {SOURCE, DESTINATION, STUCK_SOURCE, STUCK_DESTINATION}
    with prometheus_server([f"127.0.0.1:{job.metrics_port}"]) as prom:
        try:
            cluster.create_topic(big, {0: [SOURCE]}, megabytes=MEGABYTES)
            cluster.create_topic(stuck, {0: [STUCK_SOURCE]}, megabytes=4)
            phase("data written")
            prom.wait_for_series(m.LAST_POLL.name, timeout=150)
            phase("job polling")
            seen = Observations(prom, [expr for _, _, expr in queries])
            start = time.time()

            cluster.set_configs({stuck: {TOPIC_THROTTLE_KEYS["leader"]: f"0:{STUCK_SOURCE}",
                                         TOPIC_THROTTLE_KEYS["follower"]: f"0:{STUCK_DESTINATION}"}},
                                {STUCK_SOURCE: {BROKER_THROTTLE_KEYS["leader"]: 1}})
            admin = cluster.admin()
            try:
                admin.alter_partition_reassignments({TopicPartition(stuck, 0): [STUCK_SOURCE, STUCK_DESTINATION]})
            finally:
                admin.close()

            # The tiny move stops growing at once; cancel it when Prometheus has seen that (it holds
            # broker 1, and the janitor keeps a broker's rate while any move uses the broker). The big move
            # starts after: however long the idle job's first batch takes on a loaded machine, it is still
            # moving when the panels are queried.
            prom.wait_for_series(f'{m.REPLICA_STALLED.name}{{topic="{stuck}"}} > 0', timeout=180)
            cancel(cluster, [stuck])
            phase("stalled move seen and cancelled")
            execute_plan(cluster, tmp_path, big, [SOURCE, DESTINATION], RATE)

            # Mid-move: every panel's instant query, and one scrape for promtool once the replica and
            # throttle series are all there.
            wait_for(lambda: prom.query(f'{m.REPLICA_ETA.name}{{topic="{big}"}}')
                     and prom.query(f'{m.TOPIC_THROTTLED_REPLICAS.name}{{topic="{big}"}}')
                     and prom.query(m.BROKER_THROTTLE_RATE.name), 30, message="the big move's series")
            mid_move = scrape(job.metrics_port)
            assert f'topic="{big}"' in mid_move
            # Every series of the job names its cluster (--cluster-name), first of its labels.
            assert {s.labels.get(m.CLUSTER) for f in text_string_to_metric_families(mid_move) for s in f.samples
                    if s.name.startswith("kafka_reassignment")} == {OWNED_JOB_CLUSTER}

            def move_done():
                seen.instant()
                return big not in reassigning(cluster)

            wait_for(move_done, 120, interval_s=3, message="the big move to complete")
            phase("move complete")
            assert time.time() - start >= 25, "the move was too short to watch"

            # The janitor removes execute's throttles at completion (before this test's own clean-up can, so
            # the ownership record is settled by the janitor, not left to the next test sharing the job): the
            # counter rises and the annotation's increase() sees it.
            wait_for(lambda: not any(key[0] == big for key in throttles(cluster, [big])), 30, interval_s=0.5,
                     message="the janitor to remove the big move's throttles")
            prom.wait_for_series(f'{m.THROTTLE_ACTIONS.name}{{action="removed"}} > 0', timeout=30)
            prom.wait_for_series(f'sum(increase({m.THROTTLE_ACTIONS.name}{{action="removed"}}[1m])) > 0', timeout=15)
            phase("throttles removed")
            seen.instant()
            seen.over(start - 10, time.time())
            phase("range queries done")
        finally:
            busy = reassigning(cluster) & {big, stuck}
            if busy:
                cancel(cluster, busy)
            cluster.set_configs({t: {key: None for key in TOPIC_THROTTLE_KEYS.values()} for t in (big, stuck)},
                                {b: {key: None for key in BROKER_THROTTLE_KEYS.values()} for b in brokers})
            cluster.delete_topics([big, stuck])

    print(f"\nPhases: {', '.join(phases)}")
    print("Dashboard queries (dashboard | panel | data | expr):")
    for dashboard, title, expr in queries:
        print(f"  {dashboard} | {title} | {'data' if seen.data[expr] else 'NO DATA'} | {expr}")
    assert not seen.errors, seen.errors
    unexpected = [(d, t, e) for d, t, e in queries if not seen.data[e] and e not in NO_DATA_EXPECTED]
    assert not unexpected, f"queries that never returned data during the move: {unexpected}"
    stale = [e for e in NO_DATA_EXPECTED if e not in seen.data]
    assert not stale, f"exceptions naming no dashboard query: {stale}"
    for expr in NO_DATA_EXPECTED:
        if seen.data[expr]:
            print(f"  note: {expr} had data this time (an exception, not a requirement)")

    promtool = shutil.which("promtool")
    assert promtool, "promtool not on PATH (Debian's prometheus package installs it)"
    checked = subprocess.run([promtool, "check", "metrics"], input=mid_move, capture_output=True, text=True,
                             timeout=30)
    print(f"promtool check metrics: exit {checked.returncode}\n{checked.stdout}{checked.stderr}")
    assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked.stdout + checked.stderr
