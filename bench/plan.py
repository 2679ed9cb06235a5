"""One plan three ways: all at once, fixed waves, pipelined.

On a three-node cluster of its own (deploy/local-cluster.sh, started here and stopped at the end) one topic
gets `--partitions` partitions of mixed sizes (drawn once, seeded: `--min-mb` to `--max-mb`), partition i on
broker i%3+1. Each arm moves every partition one broker on (i%3+1 -> (i+1)%3+1) under one `--throttle`; the
next arm moves them back, so every arm copies the same bytes over mirrored broker pairs. The arms run one
after the other, rotating their order each round (paired in one run, never sharing the cluster):

  all-at-once  `execute --throttle T` of the whole file, then `verify` once a second until complete (it removes
               the throttles);
  waves        `execute --throttle T` of `--in-flight` partitions, `verify` once a second until that wave is
               complete, then the next wave: what an operator's script does;
  pipelined    `execute --max-partitions-in-flight N --throttle T --wait`: the plan's executor submits the next
               partition as each completes, in the file's order (the default `--order file`, as the waves);
  pipelined-largest  the same with `--order largest`: the largest partitions first, so the plan's tail is its
               smallest partitions.

Measured per arm: wall time from the first command until every partition is at its target and no throttle
the arm set is left (a 0.25 s watcher reads the cluster), and the peak number of partitions named in the
topic's throttled-replicas lists.

    .venv/bin/python bench/plan.py [--partitions 60] [--in-flight 20] [--min-mb 0.1] [--max-mb 4]
                                   [--throttle 2000000] [--rounds 1] [--base-port 31300]
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka.admin import ConfigResource, ConfigResourceType  # noqa: E402

from bench.results import markdown_table, write_section  # noqa: E402
from streaming.vocabulary.config_keys import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS  # noqa: E402
from tests.job_process import CLI  # noqa: E402
from tests.kafka_fixtures import LocalCluster, wait_for  # noqa: E402

CLUSTER_DIR = ROOT / ".local-cluster" / "bench-plan"
BROKERS = (1, 2, 3)
POLL_S = 0.25
VERIFY_EVERY_S = 1.0
ARM_TIMEOUT_S = 1800
TITLE = "Plans: all at once, fixed waves, pipelined (bench/plan.py)"
ARMS = ("all-at-once", "waves", "pipelined", "pipelined-largest")


class Watcher(threading.Thread):
    """Peak partitions named in the topic's throttled-replicas lists, and whether anything still moves or
    stays throttled (for the arm's end)."""

    def __init__(self, cluster, topic):
        super().__init__(daemon=True)
        self.cluster, self.topic = cluster, topic
        self.peak_throttled, self.moving, self.throttled = 0, None, None
        self._stop_event = threading.Event()

    def run(self):
        admin = self.cluster.admin()
        try:
            while not self._stop_event.is_set():
                ongoing = admin.list_partition_reassignments()
                described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic)]
                                                   + [ConfigResource(ConfigResourceType.BROKER, str(b)) for b in BROKERS])
                values = [described.get("topic", {}).get(self.topic, {}).get(key, {}).get("value") or ""
                          for key in TOPIC_THROTTLE_KEYS.values()]
                named = {entry.split(":")[0] for value in values for entry in value.split(",") if entry}
                rates = [described.get("broker", {}).get(str(b), {}).get(key, {}).get("value")
                         for b in BROKERS for key in BROKER_THROTTLE_KEYS.values()]
                self.peak_throttled = max(self.peak_throttled, len(named))
                self.moving = sum(1 for tp in ongoing if tp.topic == self.topic)
                self.throttled = bool(named) or any(rates)
                self._stop_event.wait(POLL_S)
        finally:
            admin.close()

    def stop(self):
        self._stop_event.set()
        self.join(30)


def cli(*argv):
    result = subprocess.run([CLI, *map(str, argv)], capture_output=True, text=True, cwd=ROOT, timeout=ARM_TIMEOUT_S)
    return result.returncode, result.stdout, result.stderr


def plan_file(directory, name, topic, moves):
    path = Path(directory) / f"{name}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": [b]} for p, b in moves]}))
    return path


def until_verified(common, path):
    while True:
        code, out, err = cli("verify", *common, "--reassignment-json-file", path)
        if code == 0:
            return
        if code != 1:
            raise RuntimeError(f"verify failed ({code}): {err or out}")
        time.sleep(VERIFY_EVERY_S)


def run_arm(arm, cluster, topic, moves, args, directory, ownership):
    """One arm moving `moves` [(partition, broker)]: (wall s, peak throttled partitions)."""
    common = ["--bootstrap-server", cluster.bootstrap, "--ownership-topic", ownership]
    watcher = Watcher(cluster, topic)
    watcher.start()
    started = time.monotonic()
    try:
        if arm == "all-at-once":
            whole = plan_file(directory, arm, topic, moves)
            code, out, err = cli("execute", *common, "--reassignment-json-file", whole, "--throttle", args.throttle)
            assert code == 0, err
            until_verified(common, whole)
        elif arm == "waves":
            for i in range(0, len(moves), args.in_flight):
                wave = plan_file(directory, f"{arm}-{i}", topic, moves[i:i + args.in_flight])
                code, out, err = cli("execute", *common, "--reassignment-json-file", wave, "--throttle", args.throttle)
                assert code == 0, err
                until_verified(common, wave)
        else:
            whole = plan_file(directory, arm, topic, moves)
            order = ["--order", "largest"] if arm == "pipelined-largest" else []
            code, out, err = cli("execute", *common, "--reassignment-json-file", whole, "--throttle", args.throttle,
                                 "--max-partitions-in-flight", args.in_flight, *order, "--wait")
            assert code == 0, err + out[-2000:]
        wait_for(lambda: watcher.moving == 0 and watcher.throttled is False, 120, interval_s=POLL_S,
                 message=f"{arm}: nothing moving or throttled")
        return time.monotonic() - started, watcher.peak_throttled
    finally:
        watcher.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=60)
    parser.add_argument("--in-flight", type=int, default=20)
    parser.add_argument("--min-mb", type=float, default=0.1)
    parser.add_argument("--max-mb", type=float, default=4.0)
    parser.add_argument("--throttle", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--base-port", type=int, default=31300)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()

    cluster = LocalCluster(CLUSTER_DIR, args.base_port)
    cluster.up()
    results = {arm: [] for arm in ARMS}
    try:
        sizes = [round(random.Random(args.seed + p).uniform(args.min_mb, args.max_mb), 2) for p in range(args.partitions)]
        home = {p: p % 3 + 1 for p in range(args.partitions)}
        away = {p: (p + 1) % 3 + 1 for p in range(args.partitions)}
        topic = cluster.create_topic(cluster.unique_topic("bench-plan"), {p: [home[p]] for p in range(args.partitions)})
        for p, megabytes in enumerate(sizes):
            cluster.produce(topic, [p], megabytes)
        ownership = f"bench-plan-own-{int(time.time())}"
        forward = True
        with tempfile.TemporaryDirectory() as directory:
            for round_index in range(args.rounds):
                order = ARMS[round_index % len(ARMS):] + ARMS[:round_index % len(ARMS)]
                for arm in order:
                    target = away if forward else home
                    wall, peak = run_arm(arm, cluster, topic, [(p, target[p]) for p in range(args.partitions)],
                                         args, directory, ownership)
                    results[arm].append((wall, peak))
                    print(f"round {round_index + 1} {arm}: {wall:.1f} s, peak throttled partitions {peak}", flush=True)
                    forward = not forward
    finally:
        cluster.down()

    waves_median = statistics.median(w for w, _ in results["waves"])
    rows = [(arm, len(runs), f"{statistics.median(w for w, _ in runs):.1f}",
             f"{min(w for w, _ in runs):.1f} - {max(w for w, _ in runs):.1f}",
             f"{statistics.median(w for w, _ in runs) / waves_median:.2f}", max(p for _, p in runs))
            for arm, runs in results.items()]
    body = (f"{args.partitions} partitions of {args.min_mb:g} to {args.max_mb:g} MB (seeded, {sum(sizes):.0f} MB in "
            f"all), each moved to another broker of three under one {args.throttle / 1e6:g} MB/s throttle; "
            f"{args.in_flight} in flight for waves and pipelined; {args.rounds} round(s), arms in rotated order, "
            f"each arm moving the partitions back where the previous one took them. Wall time: first command "
            f"until every partition is at its target and no throttle is left.\n\n"
            + markdown_table(("arm", "runs", "wall s (median)", "wall s (range)", "x waves", "peak throttled partitions"),
                             rows))
    write_section(TITLE, body)
    print(body)


if __name__ == "__main__":
    main()
