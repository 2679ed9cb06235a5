"""A broker the job cannot reach while Kafka can: inside a network namespace of the test's own, a Kafka 3.9.1 KRaft
cluster whose brokers replicate on a listener of their own (deploy/local-cluster.sh REPLICATION_LISTENER=1), the job
at a 2 s trigger, a throttled move 1 -> [1, 3] (the victim) beside a move 1 -> [1, 2] (the healthy one); then every
packet to broker 3's client port dropped for 40 s (nftables in the namespace: the host's tables are never touched).
Kafka still lists broker 3 alive and keeps replicating to it. Asserted, from what an operator sees:
- the streaming query never fails, and a Spark batch runs at least every two triggers + 1 s;
- the published polls (the last-poll gauge) stay at most two triggers + 1 s apart, and so do the healthy move's
  updates on /metrics (a new poll's picture of it: its copied bytes, rate and ETA; how long after its destination's
  log on disk reached a size /metrics showed it is a figure);
- the victim's replica is UNOBSERVED on /metrics (from the middle of the cut: a batch polled before it may be shown
  seconds into it) and in its progress records polled while the port is cut off, never BROKER_OFFLINE, the records' reason saying that broker 3 does not answer the job and that Kafka lists it alive (which
  is true: its log on disk grew meanwhile);
- once healed, both moves complete and every throttle `execute` set is gone within 1 s of the end of the move it
  served;
- SIGTERM then stops the job: exit 0, no traceback.

It runs in the `faults-and-versions` part of `make test` (tests/run_suite.py), the last of it. Costs a cluster start, a Spark start,
the 40 s cut and the moves' ends after it."""

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from sinks.metric_names import REPLICA_COPIED_BYTES, REPLICA_COPY_RATE, REPLICA_ETA, REPLICA_STATE
from streaming.vocabulary.errors import EXIT_OK
from streaming.vocabulary.states import ReplicaState
from tests.fault_support import BatchWatch, atoms, execute, figure, published_gap_bound_s, replica_states
from tests.job_process import FIRST_POLL_S, JobProcess, sample_value
from tests.kafka_fixtures import ROOT, FaultCluster, wait_for
from tests.netns import NetworkNamespace

# Last of its part: first (no shared cluster fixture), it ran while the part's clusters, jobs and lanes started, and
# a batch polled before the cut reached /metrics seconds into it.
pytestmark = [pytest.mark.cluster, pytest.mark.last_in_part]

TRIGGER_S = 2.0
CUT_S = 40.0
RATE = 1_000_000  # bytes/s on broker 1, shared by the two moves: both still move when the port comes back
MEGABYTES = 40
VERSION = "3.9.1"
# The namespace has a loopback of its own: no port of the host or of another test can collide with these.
BASE_PORT = 29800
VICTIM, HEALTHY_DESTINATION, SOURCE = 3, 2, 1
QUERY_FAILED = "streaming query failed"
SAMPLE_S = 0.2


@pytest.fixture
def cut_off_cluster():
    """The namespace, this test's thread inside it, and a fresh cluster there; all of it gone after the test."""
    with NetworkNamespace(f"reassign-monitor-{os.getpid()}") as namespace, namespace.entered():
        cluster = FaultCluster(Path(os.environ.get("TEST_NETNS_CLUSTER_DIR", ROOT / ".local-cluster" / "netns")),
                               BASE_PORT, KAFKA_VERSION=VERSION, KAFKA_MODE="kraft", REPLICATION_LISTENER="1",
                               KAFKA_HEAP="256m")
        cluster.wipe()
        cluster.up()
        try:
            yield namespace, cluster
        finally:
            cluster.down()


def log_size(cluster, broker, topic):
    """Bytes of the partition's log segments on the broker's disk (what DescribeLogDirs reports), None before any."""
    directory = Path(cluster.env["CLUSTER_DIR"]) / f"node{broker}" / "data" / f"{topic}-0"
    try:
        return sum(f.stat().st_size for f in directory.glob("*.log"))
    except FileNotFoundError:
        return None


class CutWatch(BatchWatch):
    """BatchWatch (batch lines and the last-poll gauge, every 0.2 s) with, from the same scrapes, the healthy
    replica's picture on /metrics (copied bytes, rate, ETA), the victim replica's states there, and the two
    destinations' logs on disk. Started from the test's thread, so in the namespace."""

    def __init__(self, job, cluster, healthy, victim):
        super().__init__(job)
        self.cluster, self.healthy, self.victim = cluster, healthy, victim
        self.healthy_picture, self.states, self.disk = [], [], []  # [(monotonic, value)]

    def sampled(self, now, samples):
        self.healthy_picture.append((now, tuple(
            sample_value(samples, metric.name, topic=self.healthy, partition=0, broker=HEALTHY_DESTINATION)
            for metric in (REPLICA_COPIED_BYTES, REPLICA_COPY_RATE, REPLICA_ETA))))
        self.states.append((now, {dict(labels)["state"] for (name, labels), value in samples.items()
                                   if name == REPLICA_STATE.name and value == 1
                                   and dict(labels).get("topic") == self.victim}))
        self.disk.append((now, log_size(self.cluster, HEALTHY_DESTINATION, self.healthy),
                          log_size(self.cluster, VICTIM, self.victim)))

    def batches_between(self, since, until):
        return sorted(t for t, _ in self.seen.values() if since <= t <= until)

    def longest_batch_gap(self, since, until):
        """Seconds without a batch line from `since` to `until`, both ends counted."""
        times = [since, *self.batches_between(since, until), until]
        return max(b - a for a, b in zip(times, times[1:]))

    def longest_published_cut_gap(self, since, until):
        """Seconds between two polls the job published (the gauge's values: Unix times) while sampled from `since` to
        `until`: the cut's own, not the gap into it that BatchWatch.longest_published_gap counts too."""
        values = sorted({gauge for t, _, gauge in self.polls if since <= t <= until})
        return max([b - a for a, b in zip(values, values[1:])], default=None)

    def longest_healthy_update_gap(self, since, until):
        """Seconds between two new pictures of the healthy move on /metrics (its copied bytes, rate and ETA: a new
        poll changes the rate's smoothing, whatever was copied) from `since` to `until`."""
        changes = [since] + [t for (t, picture), (_, before) in zip(self.healthy_picture[1:], self.healthy_picture)
                             if since <= t <= until and picture != before] + [until]
        return max(b - a for a, b in zip(changes, changes[1:]))

    def healthy_lag(self, since, until):
        """The longest time from a size the healthy destination's log reached on disk (between `since` and `until`)
        to /metrics showing at least it; None when one was never shown."""
        lags = []
        for t, size, _ in self.disk:
            if since <= t <= until and size:
                shown = next((s for s, (copied, _, _) in self.healthy_picture
                              if s >= t and copied is not None and copied >= size), None)
                lags.append(None if shown is None else shown - t)
        return None if None in lags else max(lags, default=None)

    def victim_states(self, since, until):
        return set().union(*(states for t, states in self.states if since <= t <= until))

    def victim_grew_on_disk(self, since, until):
        sizes = [victim for t, _, victim in self.disk if since <= t <= until and victim is not None]
        return bool(sizes) and sizes[-1] > sizes[0]


class EndWatch(threading.Thread):
    """With one admin client made after the port came back: when each topic's move left the reassignment list and
    when each throttle atom (fault_support.atoms) went away, asked every 0.1 s."""

    def __init__(self, cluster, topics, owned):
        super().__init__(daemon=True)
        self.cluster, self.topics, self.owned = cluster, topics, owned
        self.ended, self.gone = {}, {}
        self.halt = threading.Event()

    def run(self):
        admin = self.cluster.admin()
        try:
            while not self.halt.is_set() and (len(self.ended) < len(self.topics) or len(self.gone) < len(self.owned)):
                moving = {tp.topic for tp in admin.list_partition_reassignments()}
                left = atoms(self.cluster, self.topics, admin)
                now = time.monotonic()
                for topic in self.topics:
                    if topic not in moving:
                        self.ended.setdefault(topic, now)
                for atom in self.owned - left:
                    self.gone.setdefault(atom, now)
                self.halt.wait(0.1)
        finally:
            admin.close()

    def late_removals(self, served):
        """[(atom, seconds after the end of the last move it served)] of the atoms gone more than 1 s after it, or
        never; `served(atom)`: the topics whose moves it throttled."""
        late = []
        for atom in sorted(self.owned, key=str):
            ends = [self.ended.get(topic) for topic in served(atom)]
            if None in ends or atom not in self.gone:
                late.append((atom, None))
            elif self.gone[atom] - max(ends) > 1.0:
                late.append((atom, round(self.gone[atom] - max(ends), 2)))
        return late


def test_a_broker_cut_off_from_the_job_but_not_from_kafka(cut_off_cluster, tmp_path):
    namespace, cluster = cut_off_cluster
    victim, healthy = cluster.unique_topic("cut-victim"), cluster.unique_topic("cut-healthy")
    for topic in (victim, healthy):
        cluster.create_topic(topic, {0: [SOURCE]}, megabytes=MEGABYTES)
    job = JobProcess(cluster.bootstrap, tmp_path / "checkpoint", tmp_path / "job.log", "--trigger-interval",
                     f"{TRIGGER_S:g}s", "--master", "local[2]", "--rate-window", "10s")
    job.start()
    watch = CutWatch(job, cluster, healthy, victim)
    try:
        job.wait_first_batch(FIRST_POLL_S)
        before = atoms(cluster, [victim, healthy])
        execute(cluster, tmp_path, [(victim, 0, [SOURCE, VICTIM]), (healthy, 0, [SOURCE, HEALTHY_DESTINATION])],
                str(RATE))
        owned = atoms(cluster, [victim, healthy]) - before
        assert owned, "execute set no throttle"
        watch.__enter__()
        wait_for(lambda: (job.metric(REPLICA_COPIED_BYTES.name, topic=healthy, partition=0,
                                     broker=HEALTHY_DESTINATION) or 0) > 0, 60, interval_s=0.2,
                 message="the healthy move's first bytes on /metrics")
        with namespace.dropping_to(BASE_PORT + VICTIM):
            cut = time.monotonic()  # once the rule is in place (three nft calls: a second and more under load)
            cut_wall_ms = time.time() * 1000
            time.sleep(CUT_S)  # the fault's duration itself
        healed = time.monotonic()
        healed_wall_ms = time.time() * 1000
        ends = EndWatch(cluster, [victim, healthy], owned)
        ends.start()
        ends.join(240)
        ends.halt.set()
        watch.__exit__()
        log = job.log()
        stop_offset = len(log)
        job.process.send_signal(signal.SIGTERM)
        code = job.process.wait(60)
        after_stop = job.log()[stop_offset:]
    finally:
        if watch.is_alive():
            watch.__exit__()
        job.stop()

    bound_s = published_gap_bound_s(TRIGGER_S)
    records = [(v["ts_ms"], state, v.get("reason") or "") for _, state, v in replica_states(job, victim, 0, VICTIM)]
    during = [(state, reason) for ts_ms, state, reason in records
              if cut_wall_ms + 1000 * bound_s <= ts_ms <= healed_wall_ms]
    found = {
        "batch_gap_s": round(watch.longest_batch_gap(cut, healed), 2),
        "batches_during_cut": len(watch.batches_between(cut, healed)),
        "published_gap_s": watch.longest_published_cut_gap(cut, healed),
        "healthy_update_gap_s": round(watch.longest_healthy_update_gap(cut, healed), 2),
        "healthy_disk_to_metrics_s": watch.healthy_lag(cut, healed - bound_s),
        # A batch whose poll came before the cut may reach /metrics seconds into it (a batch under load): what
        # /metrics shows from the middle of the cut on, and that it never says BROKER_OFFLINE.
        "victim_states_on_metrics": sorted(watch.victim_states(cut + CUT_S / 2, healed)),
        "victim_states_whole_cut": sorted(watch.victim_states(cut, healed)),
        "victim_grew_on_disk": watch.victim_grew_on_disk(cut, healed),
        "victim_records_during_cut": sorted({state for state, _ in during}),
        "query_failures": [line for line in log.splitlines() if QUERY_FAILED in line],
        "late_removals": ends.late_removals(lambda atom: {victim, healthy} if atom[0] == SOURCE
                                            else {victim} if atom[0] in (victim, VICTIM) else {healthy}),
        "ended": sorted(ends.ended), "exit": code,
    }
    figure("broker_cut_off_from_the_job", trigger_s=TRIGGER_S, bound_s=bound_s,
           **{k: v for k, v in found.items() if k != "query_failures"})

    assert not found["query_failures"], f"the streaming query failed: {found['query_failures'][:3]}"
    assert found["batch_gap_s"] <= bound_s, (
        f"{found['batch_gap_s']} s without a Spark batch while broker {VICTIM}'s port was cut off (bound two triggers "
        f"+ 1 s = {bound_s:g} s; {found['batches_during_cut']} batches in {CUT_S:g} s)")
    assert found["published_gap_s"] is not None and found["published_gap_s"] <= bound_s, (
        f"{found['published_gap_s']} s between two published polls during the cut (bound {bound_s:g} s)")
    assert found["healthy_update_gap_s"] <= bound_s, (
        f"{found['healthy_update_gap_s']} s between two pictures of the healthy move on /metrics during the cut "
        f"(bound {bound_s:g} s)")
    assert found["victim_grew_on_disk"], "broker 3's log did not grow during the cut: Kafka did not replicate to it"
    assert found["victim_states_on_metrics"] == [ReplicaState.UNOBSERVED.name], (
        f"the victim's replica on /metrics in the second half of the cut: {found['victim_states_on_metrics']} (want "
        f"UNOBSERVED only)")
    assert ReplicaState.BROKER_OFFLINE.name not in found["victim_states_whole_cut"], (
        f"the victim's replica on /metrics during the cut: {found['victim_states_whole_cut']} (Kafka lists broker "
        f"{VICTIM} alive: never BROKER_OFFLINE)")
    assert during and found["victim_records_during_cut"] == [ReplicaState.UNOBSERVED.name], (
        f"the victim's progress records polled during the cut: {found['victim_records_during_cut']}")
    kafka_view = re.compile(rf"destination broker {VICTIM} does not answer the job since \S+ UTC; Kafka lists it alive")
    assert all(kafka_view.search(reason) for _, reason in during), (
        f"the UNOBSERVED records do not say broker {VICTIM} does not answer the job and Kafka lists it alive: "
        f"{sorted({reason for _, reason in during})[:3]}")
    assert found["ended"] == sorted([victim, healthy]), f"moves that did not complete: {found['ended']}"
    assert not found["late_removals"], (
        f"throttles removed later than 1 s after the end of the moves they served (None: never): "
        f"{found['late_removals']}")
    assert code == EXIT_OK and "Traceback" not in after_stop and "run: error" not in after_stop, (
        f"SIGTERM: exit {code}; the job's last lines: {after_stop[-1500:]}")
