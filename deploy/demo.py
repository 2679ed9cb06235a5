"""`make demo`: the streaming job on the embedded default, watching a real throttled reassignment.

1. start the local three-node cluster (deploy/local-cluster.sh, ports 39091-39093);
2. write ~60 MB into three partitions of a demo topic on broker 1;
3. start `reassign-monitor run` (local[*], trigger 2 s, /metrics on 127.0.0.1:9469) and a Prometheus
   scraping it (127.0.0.1:9090);
4. `reassign-monitor execute` moves the partitions to brokers 2 and 3 under a 2 MB/s throttle;
5. the job prints progress every batch; the demo ends once the move completed and the job's janitor
   removed the throttles, then stops everything it started. On Ctrl-C it first cancels what still
   moves with `reassign-monitor cancel`, which also removes the throttles `execute` set.
The cluster is stopped at the end only if the demo started it.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("reassign-monitor"))
STATE_DIR = ROOT / ".local-cluster" / "demo"
TOPIC = "demo-orders"
MOVES = {0: [2], 1: [3], 2: [2, 3]}  # partition -> new replicas (all start on broker 1)
THROTTLE = 2_000_000
METRICS = "127.0.0.1:9469"
PROMETHEUS = "127.0.0.1:9090"


def say(line):
    print(f"\n==> {line}", flush=True)


def cluster(command):
    result = subprocess.run([str(ROOT / "deploy" / "local-cluster.sh"), command], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"local cluster {command} failed: {result.stderr.strip()}")
    return result.stdout.strip().splitlines()[-1]


def create_demo_topic(bootstrap):
    from confluent_kafka import Producer
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        if TOPIC in admin.list_topics():
            admin.delete_topics([TOPIC])
            time.sleep(2)
        admin.create_topics([NewTopic(TOPIC, -1, -1, replica_assignments={p: [1] for p in MOVES})])
        admin.wait_for_topics([TOPIC], timeout_ms=20000)
    finally:
        admin.close()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "none"})
    for partition in MOVES:
        for _ in range(2000):
            producer.produce(TOPIC, os.urandom(10_000), partition=partition)
            producer.poll(0)
    producer.flush(60)


def start_job(bootstrap, log_dir):
    checkpoint = STATE_DIR / "checkpoint"
    return subprocess.Popen([CLI, "run", "--bootstrap-server", bootstrap, "--master", "local[*]",
                             "--trigger-interval", "2s", "--checkpoint-location", str(checkpoint),
                             "--metrics-address", METRICS.split(":")[0], "--metrics-port", METRICS.split(":")[1],
                             "--progress-topic", "reassignment-progress"],
                            stderr=open(log_dir / "job.stderr.log", "w"), start_new_session=True,
                            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})


def start_prometheus(log_dir):
    config = log_dir / "prometheus.yml"
    config.write_text(f"""global: {{scrape_interval: 2s, evaluation_interval: 2s}}
rule_files: [{ROOT / 'deploy' / 'prometheus' / 'alerts.yml'}]
scrape_configs:
  - job_name: reassign-monitor
    static_configs: [{{targets: ['{METRICS}']}}]
""")
    return subprocess.Popen(["prometheus", f"--config.file={config}", f"--web.listen-address={PROMETHEUS}",
                             f"--storage.tsdb.path={log_dir / 'prometheus-data'}"],
                            stdout=subprocess.DEVNULL, stderr=open(log_dir / "prometheus.log", "w"),
                            start_new_session=True)


def metrics_up():
    try:
        with urllib.request.urlopen(f"http://{METRICS}/metrics", timeout=2) as response:
            return b"kafka_reassignment_monitor_last_poll_timestamp_seconds " in response.read()
    except OSError:
        return False


def wait(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(1)
    raise RuntimeError(f"timed out waiting for {what}")


def write_plan(log_dir):
    plan = log_dir / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": p, "replicas": r} for p, r in MOVES.items()]}))
    return plan


def execute_move(bootstrap, plan):
    subprocess.run([CLI, "execute", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan),
                    "--throttle", str(THROTTLE)], check=True)


def cancel_move(bootstrap, plan):
    """Cancel what still moves; `cancel` also removes the throttles `execute` recorded."""
    if state(bootstrap)[0]:
        subprocess.run([CLI, "cancel", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan)])


def state(bootstrap):
    """(partitions still moving, throttle configs left on the demo topic)."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        moving = [tp for tp in admin.list_partition_reassignments() if tp.topic == TOPIC]
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])["topic"][TOPIC]
        throttles = {k: v["value"] for k, v in configs.items() if "throttled" in k and v.get("value")}
        return moving, throttles
    finally:
        admin.close()


def stop(process, seconds=60):
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def main():
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    started_here = "running" not in subprocess.run([str(ROOT / "deploy" / "local-cluster.sh"), "status"],
                                                   capture_output=True, text=True).stdout
    job = prometheus = bootstrap = plan = None
    finished = False
    try:
        say("starting the local Kafka cluster (3 KRaft nodes on 127.0.0.1)")
        bootstrap = cluster("up")
        say(f"writing ~60 MB into {TOPIC} on broker 1")
        create_demo_topic(bootstrap)
        log_dir = Path(tempfile.mkdtemp(prefix="run-", dir=STATE_DIR))
        plan = write_plan(log_dir)
        say("starting the streaming job (Spark local[*]) and Prometheus")
        job = start_job(bootstrap, log_dir)
        prometheus = start_prometheus(log_dir)
        wait(metrics_up, 180, "the job's first poll")
        say(f"metrics: http://{METRICS}/metrics   Prometheus: http://{PROMETHEUS}/graph   logs: {log_dir}")
        say(f"reassigning {TOPIC} to brokers 2 and 3 under a {THROTTLE / 1e6:g} MB/s throttle")
        execute_move(bootstrap, plan)
        wait(lambda: not state(bootstrap)[0], 900, "the move to complete")
        say("move complete; waiting for the job to remove the throttles it owns")
        wait(lambda: not state(bootstrap)[1], 60, "the throttles to be removed")
        finished = True
        say(f"done: {TOPIC} moved and no throttle left behind")
        return 0
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except (RuntimeError, subprocess.CalledProcessError) as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    finally:
        if bootstrap and plan and not finished:
            cancel_move(bootstrap, plan)
        stop(job)
        stop(prometheus, 10)
        if started_here:
            cluster("down")


if __name__ == "__main__":
    sys.exit(main())
