"""The fleet job (`run --clusters FILE` without --cluster) on three real clusters of two Kafka versions, one of them
secured: the secured cluster (4.1.1, SASL_SSL, through a client profile) and two clusters of this test's own, 3.9.1
and 4.1.1 KRaft. One job, one Spark query:
- a throttled move on each cluster, executed through the fleet file: each reported in its own cluster's progress topic
  under its own `cluster`, with an ETA, and its throttles removed by the job once it completed;
- every broker of the test's own cluster SIGSTOPped for 40 s: the two other clusters' published polls stay at most two
  triggers + 1 s apart, a move on the 4.1.1 one made meanwhile is reported and its throttles removed, and the
  stopped cluster's kafka_reassignment_cluster_up says why;
- the test's own cluster taken out of the fleet file while the job runs, then put back: its series leave /metrics and
  come back, while a move in flight on the secured cluster keeps its state (the same state_since_ms, its rate measured
  across the change);
- a real Prometheus scraping the job throughout: every dashboard query parses, the queries show all three clusters,
  and the job's /metrics (three clusters in one) passes `promtool check metrics`.

It runs in the `secured` part of `make test` (tests/run_suite.py), the last of it."""

import contextlib
import json
import os
import shutil
import subprocess
import signal
import threading
import time
from pathlib import Path

import pytest

from dashboards.build import all_queries
from sinks.metric_names import CLUSTER_INFO, CLUSTER_UP, LAST_POLL, PARTITIONS
from sinks.records import REPLICA_KIND
from streaming.vocabulary.errors import EXIT_OK
from tests.cluster_cli import cli, expect_throttles, ownership_topic, write_plan
from tests.job_process import BATCHES, FIRST_POLL_S, JobProcess, read_raw
from tests.kafka_fixtures import ROOT, LocalCluster, wait_for
from tests.prometheus_server import prometheus_server
from tests.test_job_dashboards_cluster import scrape

# Last of the secured part: the reauth job (conftest) watches the secured cluster until its last test, and its janitor
# would take the throttles of this test's moves (docs/development.md, the secured cluster).
pytestmark = [pytest.mark.cluster, pytest.mark.last_in_part]

TRIGGER_S = 2.0
PUBLISHED_GAP_BOUND_S = 2 * TRIGGER_S + 1
STOPPED_S = 40.0
RATE = 300_000  # bytes/s: a 4 MB move takes ten seconds or more
MEGABYTES = 4
SLOW_RATE, SLOW_MEGABYTES = 200_000, 6  # in flight for tens of seconds: across a reload of the fleet file
OWN_VERSION = "3.9.1"


# The test's own clusters, (name, Kafka version): on TEST_FLEET_KAFKA_BASE_PORT + 150 x their place (brokers +1..3,
# controllers +101..103) and in TEST_FLEET_CLUSTER_DIR/NAME. Not the shared cluster: the job's janitor adopts the
# throttles of any move it sees (docs/ownership.md "Adoption"), and the `others` part's tests move partitions there
# meanwhile.
OWN_CLUSTERS = (("own", OWN_VERSION), ("plain", "4.1.1"))
PORTS_PER_CLUSTER = 150


def own_cluster(place):
    name, version = OWN_CLUSTERS[place]
    return LocalCluster(Path(os.environ.get("TEST_FLEET_CLUSTER_DIR", ROOT / ".local-cluster" / "fleet")) / name,
                        int(os.environ.get("TEST_FLEET_KAFKA_BASE_PORT", "30900")) + PORTS_PER_CLUSTER * place,
                        KAFKA_VERSION=version, KAFKA_MODE="kraft", KAFKA_HEAP="256m")


def fleet_text(secure_cluster, plain, own=None):
    clusters = [
        "[client-profiles.secured-admin]\n" f'command-config = "{secure_cluster.admin_config}"\n',
        "[clusters.secured]\n" f'bootstrap-servers = "{secure_cluster.bootstrap}"\nclient-profile = "secured-admin"\n'
        'labels = { tier = "secure" }\n',
        "[clusters.plain]\n" f'bootstrap-servers = "{plain.bootstrap}"\n',
    ]
    if own is not None:
        clusters.append("[clusters.own]\n" f'bootstrap-servers = "{own.bootstrap}"\n'
                        "[clusters.own.run]\n" 'trigger-interval = "2s"\n')
    return "\n".join(clusters)


class Sampler(threading.Thread):
    """/metrics every 0.2 s: each cluster's last-poll gauge [(Unix time seen, value)]."""

    def __init__(self, job, clusters):
        super().__init__(daemon=True)
        self.job, self.polls = job, {name: [] for name in clusters}
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            samples = self.job.samples()
            for name, seen in self.polls.items():
                value = samples.get((LAST_POLL.name, frozenset({("cluster", name)})))
                if value is not None:
                    seen.append((time.time(), value))
            self._halt.wait(0.2)

    def longest_gap(self, name, since, until):
        """The longest time between two polls of `name` published between Unix times `since` and `until`, and from
        the last one to `until`."""
        values = sorted({value for seen, value in self.polls[name] if since <= seen <= until})
        before = [value for seen, value in self.polls[name] if seen < since]
        values = ([before[-1]] if before else []) + [v for v in values if not before or v > before[-1]]
        return max([b - a for a, b in zip(values, values[1:])] + [until - values[-1]]) if values else None

    def stop(self):
        self._halt.set()
        self.join(5)


def records(settings, topic, cluster_name, topic_moved):
    """The replica records of `topic_moved` in the progress `topic`, each checked to name `cluster_name`."""
    values = [json.loads(value) for _, value in read_raw(settings, topic)]
    mine = [value for value in values if value.get("topic") == topic_moved]
    assert {value["cluster"] for value in mine} <= {cluster_name}
    return mine


def completed(job, cluster, name, topic):
    """The records of the move of `topic` on `cluster` once one says it COMPLETED (the batch after the throttles'
    removal writes it)."""
    reported = []

    def done():
        reported[:] = records(cluster.settings(), job.progress_topic, name, topic)
        return "COMPLETED" in [r["state"] for r in reported]

    wait_for(done, 60, interval_s=2, message=f"cluster {name}: the record of {topic}'s completion")
    return reported


def execute(fleet, name, own_topic, plan, rate=RATE):
    code, _, err = cli("execute", "--clusters", fleet, "--cluster", name, "--ownership-topic", own_topic,
                       "--reassignment-json-file", plan, "--throttle", str(rate))
    assert code == EXIT_OK, err


def cluster_up(job, name):
    return {dict(labels)["reason"]: value for (metric, labels), value in job.samples().items()
            if metric == CLUSTER_UP.name and dict(labels).get("cluster") == name}


def clusters_shown(prom, exprs, start, end):
    """({cluster names any of the range queries `exprs` returned data for}, {expr: Prometheus' error})."""
    shown, errors = set(), {}
    for expr in exprs:
        try:
            result = prom.get("api/v1/query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step="2s")
        except ValueError as error:
            errors[expr] = str(error)
            continue
        shown |= {series["metric"].get("cluster") for series in result["result"] if series["values"]}
    return shown - {None}, errors


def not_polled(job, name):
    """The reasons kafka_reassignment_cluster_up gives for not polling cluster `name` (its series of value 0)."""
    return [reason for reason, value in cluster_up(job, name).items() if value == 0.0]


def test_three_clusters_of_two_versions_one_secured_in_one_job(secure_cluster, tmp_path):
    stack = contextlib.ExitStack()
    own, plain = own_cluster(0), own_cluster(1)
    starting = [threading.Thread(target=cluster.up) for cluster in (own, plain)]
    for thread in starting:
        thread.start()
    for thread in starting:
        thread.join()
    job = None
    try:
        fleet = tmp_path / "fleet.toml"
        fleet.write_text(fleet_text(secure_cluster, plain, own))
        own_topic = ownership_topic()
        clusters = {"secured": secure_cluster, "plain": plain, "own": own}
        job = JobProcess("unused", tmp_path / "checkpoint", tmp_path / "job.log", "--trigger-interval", f"{TRIGGER_S:g}s",
                         "--ownership-topic", own_topic, "--master", "local[2]", "--rate-window", "10s")
        job.args = [word for word in job.args if word not in ("--bootstrap-server", "unused")] + ["--clusters",
                                                                                                  str(fleet)]
        job.start()
        prom = stack.enter_context(prometheus_server([f"127.0.0.1:{job.metrics_port}"]))
        watched_from = time.time()
        wait_for(lambda: all(job.metric(BATCHES, cluster=name) for name in clusters), FIRST_POLL_S,
                 message="a Spark batch of every cluster")
        sampler = Sampler(job, clusters)
        sampler.start()

        # A throttled move on each cluster, each reported under its own name in its own progress topic.
        moved = {}
        for name, cluster in clusters.items():
            topic = cluster.create_topic(cluster.unique_topic(f"fleet-{name}"), {0: [1]}, megabytes=MEGABYTES)
            moved[name] = topic
            execute(str(fleet), name, own_topic, write_plan(tmp_path / f"{name}.json", [(topic, 0, [2])]))
        for name, cluster in clusters.items():
            expect_throttles(cluster, [moved[name]], {}, timeout_s=120)
        for name, cluster in clusters.items():
            reported = completed(job, cluster, name, moved[name])
            assert any(r.get("eta_seconds") is not None for r in reported if r["state"] != "COMPLETED"), name

        # Every broker of the test's own cluster stopped: the others' polls and removals go on.
        stopped_at = time.time()
        for node in (1, 2, 3):
            os.kill(own.pid(node), signal.SIGSTOP)
        try:
            topic = plain.create_topic(plain.unique_topic("fleet-during"), {0: [1]}, megabytes=MEGABYTES)
            execute(str(fleet), "plain", own_topic, write_plan(tmp_path / "during.json", [(topic, 0, [3])]))
            expect_throttles(plain, [topic], {}, timeout_s=STOPPED_S)
            wait_for(lambda: not_polled(job, "own"), STOPPED_S, message="the stopped cluster shown as not polled")
            why = not_polled(job, "own")
            time.sleep(max(0.0, stopped_at + STOPPED_S - time.time()))
        finally:
            for node in (1, 2, 3):
                os.kill(own.pid(node), signal.SIGCONT)
        gaps = {name: sampler.longest_gap(name, stopped_at, stopped_at + STOPPED_S) for name in ("secured", "plain")}
        print(f"\nFLEET FIGURES stopped cluster: longest published gaps {gaps}, own cluster shown as {why}", flush=True)
        assert all(gap is not None and gap <= PUBLISHED_GAP_BOUND_S for gap in gaps.values()), gaps
        assert why, "the stopped cluster's cluster_up named no reason"

        # The own cluster taken out of the file and put back, a move in flight on the secured cluster meanwhile.
        slow = secure_cluster.create_topic(secure_cluster.unique_topic("fleet-slow"), {0: [1]}, megabytes=SLOW_MEGABYTES)
        execute(str(fleet), "secured", own_topic, write_plan(tmp_path / "slow.json", [(slow, 0, [3])], ), SLOW_RATE)
        wait_for(lambda: job.metric(PARTITIONS.name, cluster="secured", state="COPYING"), 30,
                 message="the secured cluster's move reported")
        fleet.write_text(fleet_text(secure_cluster, plain))
        wait_for(lambda: job.metric(CLUSTER_INFO.name, cluster="own") is None, 30,
                 message="the cluster taken out of the file gone from /metrics")
        fleet.write_text(fleet_text(secure_cluster, plain, own))
        wait_for(lambda: cluster_up(job, "own").get("polled") == 1.0, 60, message="the cluster put back polled")
        expect_throttles(secure_cluster, [slow], {}, timeout_s=120)
        reported = completed(job, secure_cluster, "secured", slow)
        sampler.stop()

        # The dashboards' queries against a Prometheus that scraped the fleet job throughout: none refused, and the
        # fleet overview's show every cluster; the job's /metrics, three clusters in one, passes promtool's lint.
        shown, errors = clusters_shown(prom, [expr for _, _, expr in all_queries()], watched_from, time.time())
        assert not errors, errors
        assert shown >= set(clusters), shown
        checked = subprocess.run([shutil.which("promtool"), "check", "metrics"], input=scrape(job.metrics_port),
                                 capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(), checked.stdout + checked.stderr
        copying = [r for r in reported if r["kind"] == REPLICA_KIND and r["state"] == "COPYING"]
        assert len({r["state_since_ms"] for r in copying}) == 1, "the move's state began anew across the reload"
    finally:
        stack.close()
        if job is not None:
            job.stop()
            print(job.log()[-4000:])
        own.down()
        plain.down()
