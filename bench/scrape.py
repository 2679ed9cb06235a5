"""/metrics at 100,000 moving replicas per `--metrics-detail` level: scrape size and scrape time.

No cluster and no Spark: the picture /metrics serves is built the way the job builds it (the progress core,
two polls of history, then streaming.spark.outputs.assemble: the budget model, reasons and rollups), from
generated snapshots in two shapes - one replica added per partition (100,000 partitions) and three
(33,334 partitions) - in topics of 1,000 partitions. For each level the job's metrics (sinks.prometheus.
MonitorMetrics) serve the picture over HTTP on 127.0.0.1 and are scraped SCRAPES times after one warm-up
scrape: body size in bytes, samples (lines that are not comments), the rows left out
(kafka_reassignment_metrics_rows_omitted summed), wall time of the scrape p50 / p95. Three arms, paired
A B C C B A per level on the same picture, the runs of an arm pooled: `before`, /metrics as the job served it
until the row budget (every row, all of it formatted by prometheus_client's server from the registry);
`budget`, the row budget alone (at most METRICS_ROW_BUDGET rows, still formatted by prometheus_client); and
`after`, the job's /metrics now (the row budget, and the snapshot's text written in one pass).
Prints the table and writes it to bench/RESULTS.md.

    .venv/bin/python bench/scrape.py [--replicas 100000] [--scrapes 3] [--port 32290]
"""

import argparse
import gzip
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prometheus_client import start_http_server  # noqa: E402

from bench.results import markdown_table, write_section  # noqa: E402
from sinks import metric_names as m  # noqa: E402
from sinks.prometheus import DETAIL_KEYS, MonitorMetrics  # noqa: E402
from streaming.core.history import empty_memory, step  # noqa: E402
from streaming.core.measure import replica_progress  # noqa: E402
from streaming.core.snapshot_columns import from_snapshot  # noqa: E402
from streaming.spark.outputs import PollFacts, assemble  # noqa: E402
from streaming.spark.stateful import collector_paused  # noqa: E402
from streaming.vocabulary.defaults import METRICS_ROW_BUDGET  # noqa: E402
from streaming.vocabulary.snapshot import Snapshot, table  # noqa: E402

PARTITIONS_PER_TOPIC = 1_000
LEADER = 1
TITLE = "Scrape size per --metrics-detail (bench/scrape.py)"
PAIR_ORDER = ("before", "budget", "after", "after", "budget", "before")
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")  # Prometheus 2.42's scrape request


def snapshot(replicas, per_partition, poll_id, ts_ms):
    """`replicas` moves, `per_partition` replicas added to each partition (brokers 2, 3, ...), each copying
    1 MB per poll of a 1 GB leader log on broker 1."""
    adding = list(range(LEADER + 1, LEADER + 1 + per_partition))
    keys = [(f"topic-{n // PARTITIONS_PER_TOPIC}", n % PARTITIONS_PER_TOPIC) for n in range(-(-replicas // per_partition))]
    logs = [{"broker": broker, "log_dir": "d", "topic": topic, "partition": partition,
             "size": 1_000_000_000 if broker == LEADER else poll_id * 1_000_000, "offset_lag": 0, "is_future": False}
            for topic, partition in keys for broker in [LEADER, *adding]]
    brokers = [LEADER, *adding]
    return Snapshot(ts_ms=ts_ms, cluster_id="synthetic", tables={
        "reassignments": [{"topic": t, "partition": p, "replicas": brokers, "adding": adding, "removing": []}
                          for t, p in keys],
        "partitions": [{"topic": t, "partition": p, "leader": LEADER, "replicas": brokers, "isr": [LEADER]}
                       for t, p in keys],
        "log_dirs": logs, "offsets": [],
        "brokers": table("brokers", [{"broker": b, "alive": True} for b in brokers]),
        "log_dirs_answered": table("log_dirs_answered", [{"broker": b} for b in brokers]),
        "topic_throttles": [], "broker_throttles": []})


def picture(replicas, per_partition):
    """The Prometheus picture of the second of two polls 10 s apart (rates known)."""
    with collector_paused():
        first = from_snapshot(snapshot(replicas, per_partition, 1, 1_000_000))
        memory, _ = step(empty_memory(), replica_progress(first), first.ts_ms)
        second = snapshot(replicas, per_partition, 2, 1_010_000)
        _, report = step(memory, replica_progress(from_snapshot(second)), second.ts_ms)
        facts = PollFacts("synthetic", second.ts_ms, 12, 0.5, (), {})
        tables = {name: second.tables[name] for name in ("brokers", "log_dirs_answered", "topic_throttles",
                                                          "broker_throttles", "reassignments")}
        return assemble(report, tables, facts, batch_id=2, cluster="bench").picture


def scrape(url):
    """(seconds, bytes on the wire, body) of one scrape asked for as Prometheus asks: OpenMetrics, gzip."""
    request = urllib.request.Request(url, headers={"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=600) as answer:
        wire = answer.read()
        elapsed = time.monotonic() - started
        body = gzip.decompress(wire) if answer.headers.get("Content-Encoding") == "gzip" else wire
    return elapsed, len(wire), body


def serve_registry(metrics, port):
    """The whole registry formatted by prometheus_client's own server, as /metrics was served until the row budget."""
    server, _ = start_http_server(port, addr="127.0.0.1", registry=metrics.registry)
    return lambda: (server.shutdown(), server.server_close())


def serve_before(metrics, port):
    metrics.snapshot.budget = sys.maxsize
    return serve_registry(metrics, port)


def serve_after(metrics, port):
    metrics.serve(port)
    return metrics.close


def measure(shot, detail, arm, port, scrapes):
    metrics = MonitorMetrics("bench", detail)
    metrics.snapshot.update(shot)
    close = {"before": serve_before, "budget": serve_registry, "after": serve_after}[arm](metrics, port)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        _, wire, body = scrape(url)
        times = [scrape(url)[0] for _ in range(scrapes)]
    finally:
        close()
    lines = [line for line in body.splitlines() if line and not line.startswith(b"#")]
    omitted = sum(float(line.rsplit(b" ", 1)[1]) for line in lines
                  if line.startswith(m.METRICS_ROWS_OMITTED.name.encode() + b"{"))
    return len(body), wire, len(lines), int(omitted), times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=100_000)
    parser.add_argument("--scrapes", type=int, default=3)
    parser.add_argument("--port", type=int, default=32290)
    args = parser.parse_args()
    rows, load_start = [], os.getloadavg()[0]
    for per_partition in (1, 3):
        shot = picture(args.replicas, per_partition)
        for detail in DETAIL_KEYS:
            pooled = {}
            for arm in PAIR_ORDER:
                print(f"{per_partition} replica(s) per partition, --metrics-detail {detail}, {arm}...", flush=True)
                size, wire, samples, omitted, times = measure(shot, detail, arm, args.port, args.scrapes)
                pooled.setdefault(arm, (size, wire, samples, omitted, []))[4].extend(times)
            for arm, (size, wire, samples, omitted, times) in pooled.items():
                p95 = sorted(times)[max(0, round(0.95 * len(times)) - 1)]
                rows.append([f"{args.replicas:,} replicas, {per_partition} per partition "
                             f"({len(shot.partitions):,} partitions, {len(shot.topics)} topics)", detail, arm,
                             f"{size / 1e6:.1f}", f"{wire / 1e6:.2f}", f"{samples:,}", f"{omitted:,}",
                             f"{statistics.median(times):.2f}",
                             f"{p95:.2f}"])
    headers = ["moving replicas", "--metrics-detail", "arm", "scrape MB", "gzipped MB", "samples", "rows omitted",
               "scrape p50 s", "scrape p95 s"]
    text = markdown_table(headers, rows)
    print(text)
    write_section(TITLE, f"The job's metrics serving the picture of one batch (built as the job builds it, without "
                  f"Spark), scraped over HTTP on 127.0.0.1 as Prometheus asks (OpenMetrics, gzip; scrape MB is the "
                  f"body unzipped) {args.scrapes} times after one warm-up scrape per run, "
                  f"arms `before` (every row, prometheus_client formatting the whole registry: /metrics until the "
                  f"row budget), `budget` (at most {METRICS_ROW_BUDGET:,} rows, still prometheus_client's formatting) "
                  f"and `after` (the row budget, the snapshot's text written in one pass: /metrics now) paired "
                  f"A B C C B A, {2 * args.scrapes} scrapes per arm; the counters and histograms are "
                  f"included. 1-minute load average at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f}."
                  f"\n\n" + text)


if __name__ == "__main__":
    main()
