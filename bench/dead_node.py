"""A poll right after a node is SIGKILLed, and a progress write across the same kill; polls while a
node hangs (SIGSTOP), before and after; and the healthy request times the door's deadline is chosen from.

On a local 3-node cluster of its own: one long-lived admin door (as the job's executor keeps one), polls with
`--timeout` TIMEOUT (all partitions, throttles read, like the job). Per victim - the active controller, the
node the door sends controller-bound requests to, another broker - three warm polls, then SIGKILL and four
polls in a row: the first poll's wall time, the slowest of the next three, the APIs that failed, and whether
the poll reported the dead broker not alive. Then an `acks=all` write of 60 records to an RF-3 topic through
the door's producer (what the job's progress writer does), timed from the kill: Kafka acknowledges it only
once it has fenced the dead broker. The node is restarted before the next victim.

Prints a markdown table and writes it to bench/RESULTS.md, section "Poll after a SIGKILL (bench/dead_node.py)".

`--stop TREE`: per victim - the active controller, another broker - the same long-lived door polls
in a loop (all partitions, throttles, as the job's executor does) while a thread lists the reassignments every
second (as the job's controller does); the victim is SIGSTOPped for STOP_S and then continued. Reported: the
first poll after the stop, the polls completed during the stop (how many, the slowest, the longest gap between
two), the controller's longest gap between two answered lists, the APIs that failed, whether the victim was reported
not alive, and after SIGCONT how long until a poll reported it alive again. Paired A B B A against TREE (older
code, run from its own tree with this venv): "before" / "after". Section "Polls while a node hangs (bench/dead_node.py
--stop)".

`--fresh-doors TREE`: a broker that is not the active controller is SIGSTOPped for STOP_S, and meanwhile
a new door polls once, again and again, as a Spark worker's first poll does (each worker process makes its own door
on first use, and Spark replaces idle workers): how many doors were made, how many could not connect, the slowest
connect and the slowest connect plus poll, and how many polls reported the stopped broker not alive. Paired A B B A
against TREE as `--stop`. Section "A new door while a node hangs (bench/dead_node.py --fresh-doors)".

`--request-times 100,10000`: the door's own requests timed on a healthy cluster while N partitions move (to a
stopped broker, bench/moves.py), per Kafka API: p50, p95 and max of each request's round trip as kafka-python
completes it, over the polls of the job's executor; the evidence the request deadline
(streaming.vocabulary.defaults.REQUEST_DEADLINE_S) is chosen from. Section "Healthy request times (bench/dead_node.py
--request-times)".

    .venv/bin/python bench/dead_node.py [--timeout 10] [--runs 1]
    .venv/bin/python bench/dead_node.py --stop /tmp/before-tree [--stop-seconds 40]
    .venv/bin/python bench/dead_node.py --fresh-doors /tmp/before-tree [--timeout 5] [--stop-seconds 40]
    KAFKA_HEAP=1g .venv/bin/python bench/dead_node.py --request-times 100,10000
    (CLUSTER_DIR, KAFKA_BASE_PORT: the cluster's directory and ports, default .local-cluster/bench-dead-node, 35390)
"""

import argparse
import collections
import inspect
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.moves import cluster, wait_until  # noqa: E402
from bench.results import markdown_table, write_section  # noqa: E402
from kafka import KafkaAdminClient  # noqa: E402

from streaming.cluster.admin import KafkaClusterAdmin  # noqa: E402
from streaming.control.applier import applier_of  # noqa: E402
from streaming.cluster.poller import poll  # noqa: E402

SECTION = "Poll after a SIGKILL (bench/dead_node.py)"
STOP_SECTION = "Polls while a node hangs (bench/dead_node.py --stop)"
TIMES_SECTION = "Healthy request times (bench/dead_node.py --request-times)"
FRESH_SECTION = "A new door while a node hangs (bench/dead_node.py --fresh-doors)"
ENV = {"CLUSTER_DIR": os.environ.get("CLUSTER_DIR", str(ROOT / ".local-cluster" / "bench-dead-node")),
       "KAFKA_BASE_PORT": os.environ.get("KAFKA_BASE_PORT", "35390"),
       **({"KAFKA_HEAP": os.environ["KAFKA_HEAP"]} if "KAFKA_HEAP" in os.environ else {})}
PAIR_ORDER = ["before", "after", "after", "before"]
NODES = (1, 2, 3)
RECORDS = 60


def bootstrap_of_env():
    return ",".join(f"127.0.0.1:{int(ENV['KAFKA_BASE_PORT']) + n}" for n in NODES)


def pid_of(node):
    return int((Path(ENV["CLUSTER_DIR"]) / f"node{node}" / "pid").read_text())


def active_controller(bootstrap):
    """The KRaft quorum leader (DescribeQuorum of __cluster_metadata)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, bootstrap_timeout_ms=5000)
    try:
        return admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["leader_id"]
    finally:
        admin.close()


def kill(node):
    pid = pid_of(node)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not _alive(pid), 15, f"node {node} to die")


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def timed_poll(door):
    started = time.monotonic()
    snapshot = poll(door, all_partitions=True)
    return time.monotonic() - started, snapshot


def one_kill(door, bootstrap, victim, role, topic):
    for _ in range(3):
        timed_poll(door)
    killed = time.monotonic()
    kill(victim)
    first_s, first = timed_poll(door)
    rest = [timed_poll(door) for _ in range(3)]
    write_started = time.monotonic()
    try:
        applier_of(door).publish(topic, [(str(k), b"x" * 200) for k in range(RECORDS)], 60)
        written = f"{time.monotonic() - killed:.1f}"
    except Exception as error:  # reported, not fatal to the bench
        written = f"failed after {time.monotonic() - write_started:.1f} s ({type(error).__name__})"
    failed = sorted({e.api for _, s in [(first_s, first), *rest] for e in s.errors})
    reported_down = all(victim not in s.alive_brokers() for _, s in [(first_s, first), *rest])
    cluster(ENV, "up")  # restarts the dead node
    return [role, victim, f"{first_s:.2f}", f"{max(s for s, _ in rest):.2f}", ", ".join(failed) or "none",
            "yes" if reported_down else "no", written]


def stop_arm(bootstrap, victim, role, timeout_s, stop_s):
    """One SIGSTOP of `victim` under this tree's door (module docstring): the row's figures as a dict."""
    door = KafkaClusterAdmin(bootstrap, None, timeout_s)
    listed, halt, handed = [], threading.Event(), {}
    # As the job does where the code has it (since the door holds nodes that do not answer): the controller lists through `listed_or_last`, and while
    # that is the last list (the controller answers nobody) the polls take it instead of asking (`listed`).
    listing = getattr(door, "listed_or_last", None)
    takes_listed = "listed" in inspect.signature(poll).parameters

    def watch():  # the job's controller: ListPartitionReassignments about every second
        while not halt.is_set():
            try:
                rows, last = listing() if listing is not None else (door.list_reassignments(), False)
                handed["rows"] = rows if last else None
                listed.append(time.monotonic())
            except Exception:  # a failed list is a gap, as for the controller
                pass
            halt.wait(1.0)

    try:
        for _ in range(3):
            timed_poll(door)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        pid = pid_of(victim)
        stopped = time.monotonic()
        os.kill(pid, signal.SIGSTOP)
        polls = []  # (ended, seconds, APIs failed, brokers reported alive or None)
        try:
            while time.monotonic() - stopped < stop_s:
                polls.append(surviving_poll(door, handed.get("rows") if takes_listed else None))
        finally:
            os.kill(pid, signal.SIGCONT)
        continued = time.monotonic()
        back_s = None
        while time.monotonic() - continued < 60:
            _, _, _, alive = surviving_poll(door)
            if alive is not None and victim in alive:
                back_s = time.monotonic() - continued
                break
        halt.set()
        watcher.join(15)
    finally:
        door.close()
    ends = [stopped] + [end for end, _, _, _ in polls]
    lists = [stopped] + [t for t in listed if stopped <= t <= continued] + [continued]
    return {"role": role, "victim": victim, "first_s": polls[0][1], "polls": len(polls),
            "failed_polls": sum(1 for _, _, _, alive in polls if alive is None),
            "slowest_s": max(took for _, took, _, _ in polls), "gap_s": max(b - a for a, b in zip(ends, ends[1:])),
            "watch_gap_s": max(b - a for a, b in zip(lists, lists[1:])),
            "failed": sorted({api for _, _, apis, _ in polls for api in apis}),
            "reported_down": all(alive is not None and victim not in alive for _, _, _, alive in polls[1:]),
            "back_s": back_s}


def surviving_poll(door, listed=None):
    """A poll as the job's source makes it (`listed`: the controller's last list, handed while the controller answers
    nobody), surviving its failure (the source reports a poll that raised as a failed DescribeCluster): (ended,
    seconds, APIs failed, brokers reported alive, None when it raised)."""
    started = time.monotonic()
    try:
        snapshot = poll(door, all_partitions=True, **({} if listed is None else {"listed": listed}))
    except Exception:
        return time.monotonic(), time.monotonic() - started, ["DescribeCluster"], None
    return time.monotonic(), time.monotonic() - started, [e.api for e in snapshot.errors], snapshot.alive_brokers()


def fresh_doors_arm(bootstrap, victim, role, timeout_s, stop_s):
    """New doors, one poll each, while `victim` is SIGSTOPped (module docstring): the row's figures as a dict."""
    pid = pid_of(victim)
    stopped = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    doors = []  # (seconds to connect, seconds to connect and poll, connected, the victim reported not alive)
    try:
        while time.monotonic() - stopped < stop_s:
            started = time.monotonic()
            try:
                door = KafkaClusterAdmin(bootstrap, None, timeout_s)
            except Exception:  # the source reports it as a failed DescribeCluster: the batch shows nothing
                doors.append((time.monotonic() - started, time.monotonic() - started, False, False))
                continue
            connected_s = time.monotonic() - started
            try:
                _, _, _, alive = surviving_poll(door)
            finally:
                door.close()
            doors.append((connected_s, time.monotonic() - started, True, alive is not None and victim not in alive))
    finally:
        os.kill(pid, signal.SIGCONT)
    return {"role": role, "victim": victim, "doors": len(doors), "failed": sum(1 for d in doors if not d[2]),
            "slowest_connect_s": max(d[0] for d in doors), "slowest_s": max(d[1] for d in doors),
            "reported_down": sum(1 for d in doors if d[3])}


def write_fresh_table(rows, loads, timeout_s, stop_s, before_tree):
    table = markdown_table(
        ["node stopped", "id", "code", f"doors made in {stop_s:g} s", "could not connect", "slowest connect s",
         "slowest connect and poll s", "polls reporting it not alive"],
        [[f["role"], f["victim"], arm, f["doors"], f["failed"], f"{f['slowest_connect_s']:.2f}",
          f"{f['slowest_s']:.2f}", f["reported_down"]] for arm, f in rows])
    body = (f"{table}\n\nLocal 3-node cluster (KRaft, combined nodes) on the shared 2-core machine, `--timeout "
            f"{timeout_s:g}` (the fault tests' job: request deadline 2.5 s, first bootstrap within 0.7 of the "
            f"timeout). A broker that is not the active controller is SIGSTOPped for {stop_s:g} s; meanwhile one new "
            f"door after another connects and polls once (all partitions, throttles), as a Spark worker's first poll "
            f"does. "
            f"before = {before_tree} (kafka-python's bootstrap: one server picked at random, its connection given the "
            f"whole bootstrap budget), after = this tree (each bootstrap connection within the request deadline, a "
            f"server that failed not picked again while another is left: streaming.cluster.connecting). A B B A; 1-min "
            f"load average at start / end of each run: "
            + ", ".join(f"{arm} {start:.1f}/{end:.1f}" for arm, start, end in loads) + ".\n")
    print(body)
    write_section(FRESH_SECTION, body)


def paired_children(before_tree, child_flag, roles, timeout_s, stop_s):
    """A B B A child runs (`child_flag`: --stop-child or --fresh-child) per victim of `roles` ("active controller",
    "another broker"): [(arm, figures)], [(arm, load at start, end)]."""
    before_tree = Path(before_tree).resolve()
    # This file runs in the older tree too (it may not have --stop), importing that tree's streaming package.
    shutil.copytree(ROOT / "bench", before_tree / "bench", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "RESULTS.md"))
    trees = {"before": before_tree, "after": ROOT}
    bootstrap = cluster(ENV, "up")
    controller = active_controller(bootstrap)
    victims = [(role, controller if role == "active controller" else next(n for n in NODES if n != controller))
               for role in roles]
    rows, loads = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for role, victim in victims:
            for n, arm in enumerate(PAIR_ORDER):
                out = Path(scratch) / f"{victim}-{n}.json"
                print(f"{role} {victim}: {arm} (run {n + 1} of {len(PAIR_ORDER)})...", flush=True)
                load = os.getloadavg()[0]
                subprocess.run([sys.executable, str(trees[arm] / "bench" / "dead_node.py"), child_flag, str(out),
                                "--victim", str(victim), "--role", role, "--timeout", str(timeout_s),
                                "--stop-seconds", str(stop_s)],
                               cwd=trees[arm], env={**os.environ, "PYTHONPATH": str(trees[arm])}, check=True)
                loads.append((arm, load, os.getloadavg()[0]))
                rows.append((arm, json.loads(out.read_text())))
                time.sleep(5)  # the continued node back in every ISR before the next stop
    return rows, loads


def write_stop_table(rows, loads, timeout_s, stop_s, before_tree):
    def cell(arm, figures):
        return [figures["role"], figures["victim"], arm, f"{figures['first_s']:.2f}",
                f"{figures['polls']} ({figures['failed_polls']} failed)",
                f"{figures['slowest_s']:.2f}", f"{figures['gap_s']:.2f}", f"{figures['watch_gap_s']:.1f}",
                ", ".join(figures["failed"]) or "none", "yes" if figures["reported_down"] else "no",
                "-" if figures["back_s"] is None else f"{figures['back_s']:.1f}"]

    table = markdown_table(["node stopped", "id", "code", "first poll after the stop s", f"polls in {stop_s:g} s",
                            "slowest poll s", "longest gap between polls s", "controller: longest gap between lists s",
                            "APIs failed", "reported not alive", "reported alive s after SIGCONT"],
                           [cell(arm, figures) for arm, figures in rows])
    body = (f"{table}\n\nLocal 3-node cluster (KRaft, combined nodes, broker.session.timeout.ms 9 s: Kafka fences a "
            f"stopped broker after about 9.6 s) on the shared 2-core machine. Per row one long-lived admin door with "
            f"`--timeout {timeout_s:g}` polls back to back as the job's executor does (all partitions, throttles) "
            f"while a thread lists the reassignments every second (the controller); the node is SIGSTOPped for "
            f"{stop_s:g} s, then continued. before = {before_tree} (kafka-python's 10 s request timeout, a node "
            f"held only when its connection was closed or refused), after = this tree (each request's deadline "
            f"2.5 s, a node that let one lapse held as unresponsive until it answers a probe; a lapse of a request "
            f"a broker forwards to the controller holds the path to the controller, and while it does the controller "
            f"lists through `listed_or_last` and the polls take its last list, as the job's batches do). A B B A "
            f"per victim; 1-min load average at start / end of each run: "
            + ", ".join(f"{arm} {start:.1f}/{end:.1f}" for arm, start, end in loads) + ".\n")
    print(body)
    write_section(STOP_SECTION, body)


def request_times(sizes, timeout_s):
    """Per size, per API: the round trips of the door's requests over POLLS polls of the job's kind."""
    from bench.moves import bootstrap_of, start_moves, stop_broker, stop_moves

    cluster(ENV, "up")
    bootstrap = bootstrap_of(ENV)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)
    stop_broker(ENV, admin, 3)
    rows, load_start = [], os.getloadavg()[0]
    try:
        for n in sizes:
            chunks = [min(5_000, n - i) for i in range(0, n, 5_000)]  # CreateTopics takes up to 10,000 partitions
            topics = [f"bench-times-{n}-{i}-{uuid.uuid4().hex[:6]}" for i in range(len(chunks))]
            for topic, size in zip(topics, chunks):
                start_moves(admin, bootstrap, topic, size)
            door = KafkaClusterAdmin(bootstrap, None, timeout_s)
            times = collections.defaultdict(list)
            kafka = door._connect()
            routed = kafka._manager.send

            def timed(request, node_id=None, request_timeout_ms=None):
                started = time.monotonic()
                future = routed(request, node_id, request_timeout_ms)
                future.add_callback(lambda _: times[type(request).__name__.removesuffix("Request")].append(
                    time.monotonic() - started))
                return future
            kafka._manager.send = timed
            for _ in range(3):
                poll(door, all_partitions=True)
            times.clear()
            for _ in range(POLLS):
                poll(door, all_partitions=True)
            kafka._manager.send = routed
            # Metadata of every topic as the door answers it now (kafka-python, decoded and mapped: what a poll
            # waits for) and as it did before the door held nodes that do not answer (librdkafka's list_topics, decoded in C).
            for name, call in (("Metadata, the door's (kafka-python) whole call", door._metadata),
                               ("Metadata, librdkafka's list_topics (before)",
                                lambda: door._confluent_admin().list_topics(timeout=timeout_s))):
                for _ in range(POLLS):
                    started = time.monotonic()
                    call()
                    times[name].append(time.monotonic() - started)
            door.close()
            for api, seconds in sorted(times.items()):
                seconds = sorted(seconds)
                rows.append([f"{n:,}", api, len(seconds), f"{statistics.median(seconds) * 1000:.0f}",
                             f"{seconds[int(0.95 * (len(seconds) - 1))] * 1000:.0f}", f"{seconds[-1] * 1000:.0f}"])
            for topic, size in zip(topics, chunks):
                stop_moves(admin, topic, size)
    finally:
        admin.close()
        cluster(ENV, "down")
    table = markdown_table(["moving partitions", "request", "requests", "p50 ms", "p95 ms", "max ms"], rows)
    # Imported here: the --stop arms run this file against older trees, whose defaults lack it.
    from streaming.vocabulary.defaults import REQUEST_DEADLINE_S

    slowest_s = max(float(row[-1]) for row in rows) / 1000
    body = (f"{table}\n\nThe door's requests as the job's executor makes them ({POLLS} polls of all partitions and "
            f"throttles after 3 warm-up polls, one long-lived door), each timed from its send to kafka-python "
            f"completing its future (decoding included; the client's one I/O thread decodes the answers of a poll's "
            f"concurrent requests one after the other). Local 3-node cluster with 1 GB heaps, broker 3 stopped, every "
            f"partition (one 2 KB record) moving to it from broker 1 or 2 (bench/moves.py), 5,000 partitions per "
            f"topic. 1-min load average at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f}. The request "
            f"deadline (streaming.vocabulary.defaults.REQUEST_DEADLINE_S) is {REQUEST_DEADLINE_S:g} s: "
            f"{REQUEST_DEADLINE_S / slowest_s:.1f} times the slowest answer here.\n")
    print(body)
    write_section(TIMES_SECTION, body)


POLLS = 15


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--stop", metavar="TREE", help="the SIGSTOP arm, paired against the older code in TREE")
    parser.add_argument("--stop-seconds", type=float, default=40.0)
    parser.add_argument("--fresh-doors", metavar="TREE", help="new doors while a node hangs, paired against TREE")
    parser.add_argument("--request-times", metavar="SIZES", help="healthy request times at these sizes, e.g. 100,10000")
    parser.add_argument("--stop-child", help=argparse.SUPPRESS)  # (child of --stop) write the figures here
    parser.add_argument("--fresh-child", help=argparse.SUPPRESS)  # (child of --fresh-doors) write the figures here
    parser.add_argument("--victim", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--role", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stop_child:
        figures = stop_arm(bootstrap_of_env(), args.victim, args.role, args.timeout, args.stop_seconds)
        Path(args.stop_child).write_text(json.dumps(figures))
        return
    if args.fresh_child:
        figures = fresh_doors_arm(bootstrap_of_env(), args.victim, args.role, args.timeout, args.stop_seconds)
        Path(args.fresh_child).write_text(json.dumps(figures))
        return
    if args.stop:
        rows, loads = paired_children(args.stop, "--stop-child", ["active controller", "another broker"], args.timeout,
                                      args.stop_seconds)
        cluster(ENV, "down")
        write_stop_table(rows, loads, args.timeout, args.stop_seconds, args.stop)
        return
    if args.fresh_doors:
        rows, loads = paired_children(args.fresh_doors, "--fresh-child", ["another broker"], args.timeout,
                                      args.stop_seconds)
        cluster(ENV, "down")
        write_fresh_table(rows, loads, args.timeout, args.stop_seconds, args.fresh_doors)
        return
    if args.request_times:
        request_times([int(n) for n in args.request_times.split(",")], args.timeout)
        return
    bootstrap = cluster(ENV, "up")
    load_start = os.getloadavg()[0]
    rows = []
    door = KafkaClusterAdmin(bootstrap, None, args.timeout)
    try:
        topic = f"bench-dead-node-{uuid.uuid4().hex[:8]}"
        applier_of(door).create_topic(topic, 3, {})
        for _ in range(args.runs):
            timed_poll(door)
            cached = door._kafka._controller_id  # the node kafka-python sends controller-bound requests to
            controller = active_controller(bootstrap)
            victims = [("active controller", controller)]
            if cached not in (None, controller):
                victims.append(("door's controller-bound node", cached))
            victims.append(("another broker", next(n for n in NODES if n not in {v for _, v in victims})))
            for role, victim in victims:
                rows.append(one_kill(door, bootstrap, victim, role, topic))
                time.sleep(5)  # let the restarted node rejoin every ISR before the next kill
    finally:
        door.close()
        cluster(ENV, "down")
    table = markdown_table(["node killed", "id", "first poll after the kill s", "slowest of the next 3 s",
                            "APIs failed", "reported not alive", "acks=all write acknowledged s after the kill"],
                           rows)
    body = (f"{table}\n\nLocal 3-node cluster (KRaft, combined broker+controller nodes, default "
            f"broker.session.timeout.ms 9 s) on the shared 2-core machine; one long-lived admin door with "
            f"`--timeout {args.timeout:g}`, polls as the job makes them (all partitions, throttles). Before the "
            f"door held closed connections as gone, the first poll after killing the active controller "
            f"took 18.3 s at `--timeout 10` and failed (ListPartitionReassignments, DescribeConfigs and "
            f"DescribeLogDirs retried the dead node until the deadline). The write is Kafka's own wait: it "
            f"acknowledges acks=all only once the dead broker is fenced and out of every ISR. 1-min load average "
            f"at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f}.\n")
    print(body)
    write_section(SECTION, body)


if __name__ == "__main__":
    main()
