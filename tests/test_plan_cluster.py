"""Plans against the real three-node cluster: `execute --wait` under limits, SIGKILLed mid-plan and resumed,
pause and resume, cancel. A watcher thread polls the cluster itself (never the executor's output) and
records every poll at which a limit was exceeded."""

import json
import signal
import subprocess
import threading
import time
from collections import Counter

import pytest

from sinks.plans.advance import advance_once
from sinks.plans.plan_store import KafkaPlanStore
from sinks.throttles.ownership import PENDING
from sinks.throttles.ownership_store import KafkaOwnershipStore
from streaming.cluster.admin import KafkaClusterAdmin
from streaming.commands.reassign_common import connect as real_connect
from streaming.commands.reassign_common import strict_poll
from streaming.vocabulary.config_keys import TOPIC_THROTTLE_KEYS
from tests.cluster_cli import (MB, cli, expect_throttles, ownership_topic, reassigning, replicas, throttles,
                               write_plan)
from tests.job_process import CLI
from tests.kafka_fixtures import wait_for

pytestmark = pytest.mark.cluster

POLL_S = 0.25


class Watcher(threading.Thread):
    """Polls reassignments, replicas and the topic's throttled-replicas lists until stopped; keeps every
    violation of the limits and the peaks seen. The lists' invariant (README "Contract changes" 32): at most
    max_in_flight partitions named, and a partition not reassigning keeps its entries only until the second
    wave submission seen after that (its advancer's next step sweeps before it submits). A submission is a
    poll that lists a partition it did not list before; two steps between two polls count once (lenient)."""

    def __init__(self, cluster, topic, targets, max_in_flight, max_per_broker):
        super().__init__(daemon=True)
        self.cluster, self.topic, self.targets = cluster, topic, targets
        self.max_in_flight, self.max_per_broker = max_in_flight, max_per_broker
        self.violations, self.polls, self.done = [], 0, 0
        self.peak_in_flight = self.peak_per_broker = self.peak_throttled = 0
        self.errors = []
        self.submissions, self.idle_since, self._listed = 0, {}, set()
        self._stop_event = threading.Event()

    def run(self):
        from kafka.admin import ConfigResource, ConfigResourceType

        admin = self.cluster.admin()
        try:
            while not self._stop_event.is_set():
                try:
                    ongoing = admin.list_partition_reassignments()
                    per_broker = Counter(b for r in ongoing.values() for b in set(r["replicas"]) | set(r["adding_replicas"]))
                    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic)])
                    values = [configs.get("topic", {}).get(self.topic, {}).get(key, {}).get("value") or ""
                              for key in TOPIC_THROTTLE_KEYS.values()]
                    throttled = {int(entry.split(":")[0]) for value in values for entry in value.split(",") if entry}
                    [described] = admin.describe_topics([self.topic])
                except Exception as error:  # a poll that failed shows nothing; the next one will
                    self.errors.append(repr(error))
                    continue
                self.polls += 1
                listed = {tp.partition for tp in ongoing if tp.topic == self.topic}
                self.submissions += bool(listed - self._listed)
                self._listed = listed
                for p in throttled - listed:
                    self.idle_since.setdefault(p, self.submissions)
                for p in set(self.idle_since) - (throttled - listed):
                    del self.idle_since[p]
                overdue = sorted(p for p, since in self.idle_since.items() if self.submissions - since >= 2)
                self.done = sum(1 for p in described["partitions"]
                                if p["replica_nodes"] == self.targets[p["partition_index"]]
                                and (self.topic, p["partition_index"]) not in {(tp.topic, tp.partition) for tp in ongoing})
                busiest = max(per_broker.values(), default=0)
                self.peak_in_flight = max(self.peak_in_flight, len(ongoing))
                self.peak_per_broker = max(self.peak_per_broker, busiest)
                self.peak_throttled = max(self.peak_throttled, len(throttled))
                if (len(ongoing) > self.max_in_flight or busiest > self.max_per_broker
                        or len(throttled) > self.max_in_flight or overdue):
                    self.violations.append((round(time.monotonic(), 1), len(ongoing), dict(per_broker),
                                            sorted(throttled), overdue))
                self._stop_event.wait(POLL_S)
        finally:
            admin.close()

    def stop(self):
        self._stop_event.set()
        self.join(30)


class CheckingStarts:
    """The real door, except that it first asserts that none of the partitions it is asked to start
    reassigns already (read from the cluster at that moment)."""

    def __init__(self, admin, cluster):
        self.admin, self.cluster, self.starts = admin, cluster, []

    def __getattr__(self, name):
        return getattr(self.admin, name)

    def start_reassignments(self, targets):
        already = reassigning(self.cluster) & set(targets)
        assert not already, f"submitted while already reassigning: {sorted(already)}"
        self.starts.append(sorted(targets))
        return self.admin.start_reassignments(targets)


def spread_plan(cluster, tmp_path, prefix, partitions, megabytes):
    """A topic whose partition i lives on broker i%3+1 and moves to broker (i+1)%3+1, with data."""
    assignment = {p: [p % 3 + 1] for p in range(partitions)}
    targets = {p: [(p + 1) % 3 + 1] for p in range(partitions)}
    topic = cluster.create_topic(cluster.unique_topic(prefix), assignment, megabytes=megabytes)
    return topic, targets, write_plan(tmp_path / "plan.json", [(topic, p, targets[p]) for p in range(partitions)])


def waves_of(bootstrap, own, request_id):
    admin = KafkaClusterAdmin(bootstrap)
    try:
        return [r for r in KafkaOwnershipStore(admin, own).records() if r.plan_id == request_id]
    finally:
        admin.close()


def run_until_killed(argv, log, watcher, done_at):
    """Run the CLI as a process writing to `log` and SIGKILL it once the watcher sees `done_at` partitions
    done. Returns the log's text."""
    with open(log, "w") as out:
        process = subprocess.Popen([CLI, *map(str, argv)], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: watcher.done >= done_at or process.poll() is not None, 180,
                 message=f"{done_at} partitions done")
        assert process.poll() is None, f"it ended before it was killed: {log.read_text()[-2000:]}"
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
    return log.read_text()


def test_plan_under_limits_survives_three_sigkills_and_resumes(cluster, clean, tmp_path):
    partitions, in_flight, per_broker = 30, 5, 3
    topic, targets, plan = spread_plan(cluster, tmp_path, "plan", partitions, megabytes=0.4)
    own = ownership_topic()
    clean += [topic, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    watcher = Watcher(cluster, topic, targets, in_flight, per_broker)
    watcher.start()
    text = run_until_killed(["execute", *common, "--reassignment-json-file", plan, "--throttle", MB // 5,
                             "--max-partitions-in-flight", in_flight, "--max-moves-per-broker", per_broker, "--wait"],
                            tmp_path / "execute.log", watcher, partitions // 4)
    request_id = next(line.split()[-1] for line in text.splitlines() if line.startswith("Request id: "))
    rollback = json.loads(text.split("Current partition replica assignment\n\n", 1)[1].split("\n\n", 1)[0])
    assert sorted((p["partition"], p["replicas"]) for p in rollback["partitions"]) == \
        [(p, [p % 3 + 1]) for p in range(partitions)]
    for kill, done_at in enumerate((partitions // 2, partitions * 3 // 4), start=2):  # killed while resumed, twice
        text += run_until_killed(["resume", *common, "--request-id", request_id, "--wait"],
                                 tmp_path / f"resume{kill}.log", watcher, done_at)
    assert 0 < watcher.done < partitions, "killed mid-plan"

    checking = []

    def connect(args):
        checking.append(CheckingStarts(real_connect(args), cluster))
        return checking[-1]

    code, out, err = cli("resume", *common, "--request-id", request_id, "--wait", connect=connect)
    watcher.stop()
    assert code == 0, f"{err}\n{out[-2000:]}"
    assert f"Plan {request_id} done" in out
    assert [replicas(cluster, topic, p) for p in range(partitions)] == [targets[p] for p in range(partitions)]
    assert watcher.polls > 20, (watcher.polls, watcher.errors[:3])
    assert watcher.violations == [], f"{watcher.violations[:3]}\n{text[-3000:]}\n{out[-3000:]}"
    assert watcher.peak_per_broker == per_broker  # the limit that binds here (3 brokers: at most 4 moves)
    expect_throttles(cluster, [topic], {})
    assert any(checking[0].starts), "the resumed executor submitted the rest"
    waves = waves_of(cluster.bootstrap, own, request_id)
    submitted = Counter((m.topic, m.partition) for w in waves for m in w.moves)
    assert set(submitted) == {(topic, p) for p in range(partitions)} and max(submitted.values()) == 1
    assert not [w for w in waves if w.state == PENDING]
    print(f"plan of {partitions}: {len(waves)} waves, peaks: in flight {watcher.peak_in_flight}, "
          f"per broker {watcher.peak_per_broker}, throttled partitions {watcher.peak_throttled}")


def test_pause_holds_free_slots_resume_submits_and_cancel_reverts_and_drops(cluster, clean, tmp_path):
    """Partitions 0 and 1 copy 3 MB each at a 100 kB/s throttle, long enough to be caught moving (one fetch
    carries up to 1 MB whatever the rate: MEASURED.md); the others are tiny. Three in flight at most."""
    partitions = 8
    topic, targets, plan = spread_plan(cluster, tmp_path, "pause", partitions, megabytes=0.02)
    cluster.produce(topic, [0, 1], megabytes=3)
    own = ownership_topic()
    clean += [topic, own]
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", own]
    code, out, err = cli("execute", *common, "--reassignment-json-file", plan, "--throttle", MB // 10,
                         "--max-partitions-in-flight", 3, "--output", "json")
    assert code == 0, err
    request_id = json.loads(out.splitlines()[0])["request_id"]
    assert json.loads(out.splitlines()[1])["submitted"] == [f"{topic}-0", f"{topic}-1", f"{topic}-2"]

    code, out, err = cli("pause", *common, "--request-id", request_id)
    assert code == 0 and "paused" in out, err
    assert {(topic, 0), (topic, 1)} <= reassigning(cluster)  # what moves keeps moving

    admin = KafkaClusterAdmin(cluster.bootstrap)
    try:
        plans, owners = KafkaPlanStore(admin, own), KafkaOwnershipStore(admin, own)

        def paused_step():  # what the job's watch will call; paused, it submits nothing into the free slot
            step = advance_once(admin, lambda topics: strict_poll(admin, topics), plans, owners, request_id,
                                time.time() * 1000, 10)
            assert step.plan.state == "paused" and step.submitted == ()
            return step.counts.get("done") == 1 and step

        step = wait_for(paused_step, 60, message="partition 2 done while paused")
        assert step.counts == {"done": 1, "in_flight": 2, "pending": 5}
    finally:
        admin.close()
    leader, follower = (throttles(cluster, [topic]).get((topic, kind), frozenset()) for kind in ("leader", "follower"))
    assert {e.split(":")[0] for e in leader | follower} == {"0", "1"}  # partition 2's entries went with it

    code, out, err = cli("resume", *common, "--request-id", request_id, "--output", "json")
    assert code == 0, err
    assert json.loads(out)["submitted"] == [f"{topic}-3"]

    code, out, err = cli("cancel", *common, "--request-id", request_id)
    assert code == 0, err
    assert f"Plan {request_id} cancelled" in out and f"cancelled {topic}-0,{topic}-1" in out
    assert not reassigning(cluster)
    moved = {2} | ({3} if replicas(cluster, topic, 3) == targets[3] else set())  # 3 is tiny: it may have finished
    assert [replicas(cluster, topic, p) for p in range(partitions)] == \
        [targets[p] if p in moved else [p % 3 + 1] for p in range(partitions)]
    expect_throttles(cluster, [topic], {})
    submitted = sorted(m.partition for w in waves_of(cluster.bootstrap, own, request_id) for m in w.moves)
    assert submitted == [0, 1, 2, 3]  # 4 to 7 never submitted
    code, _, err = cli("resume", *common, "--request-id", request_id)
    assert code == 2 and "cancelled" in err
