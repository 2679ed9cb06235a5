"""The job's controller (streaming.control.controller) on the one admin fake (tests/fake_cluster.py) and an
in-memory ledger, with a clock the test moves: what the controller, janitor, steering and plan tests share."""

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from sinks.prometheus import MonitorMetrics
from streaming.cluster.poller import poll
from streaming.control.controller import Controller
from streaming.control.duties.plans import Plans
from streaming.control.findings import BatchFindings
from streaming.control.ownership.store import MemoryLedger
from streaming.vocabulary.kafka_apis import DESCRIBE_CONFIGS, LIST_REASSIGNMENTS, PRODUCE, READ
from streaming.vocabulary.throttle_actions import Policy

CLUSTER_NAME = "under-test"  # the controller's metrics' and records' `cluster`


@dataclass
class Elsewhere(MemoryLedger):
    """The ownership topic as another process (`execute`) writes it: a record `arrives` at the n-th read (refresh)
    from now, whichever reader (a duty of the controller, a plan's step) makes that read."""
    coming: list = field(default_factory=list)  # [reads still to come, record]

    def arrives(self, record, at_read):
        self.coming.append([at_read, record])

    def refresh(self):
        for arrival in self.coming:
            arrival[0] -= 1
        for _, record in [a for a in self.coming if a[0] == 0]:
            self.put(record)


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class Writer:
    """The progress topic's writer: what was written, failing the first `fail` writes."""

    def __init__(self, fail=0):
        self.written, self.fail = [], fail

    def write(self, keyed):
        if self.fail:
            self.fail -= 1
            raise RuntimeError("no leader")
        self.written += keyed


def a_controller(cluster, ledger=None, gate_dir=None, writer=None, trigger_s=10.0, clock=None, wall=None,
                 logged=None, plans=False, steering=None, guard=None, throttle_interval_s=30.0, picture_of=None,
                 **policy):
    """(controller, metrics, clock): the controller over `cluster` (a FakeCluster) and `ledger` (a MemoryLedger),
    with the janitor's Policy(**policy). `wall` defaults to the clock; `plans`: advance plans (reading the fake);
    `steering`: the job's `--throttle auto` bounds."""
    metrics = MonitorMetrics(CLUSTER_NAME, apis=(LIST_REASSIGNMENTS, READ, DESCRIBE_CONFIGS, PRODUCE))
    clock = clock or Clock()
    directory = Path(gate_dir or tempfile.mkdtemp(prefix="controller-test-"))
    log = logged.append if logged is not None else (lambda line: None)
    controller = Controller(cluster, ledger if ledger is not None else MemoryLedger(), metrics,
                            str(directory / "gate.json"), trigger_s, Policy(**policy), writer=writer or Writer(),
                            read=lambda topics: poll(cluster, topics=topics, throttles=True), timeout_s=1.0,
                            steering=steering, throttle_interval_s=throttle_interval_s, guard=guard,
                            clock=clock, wall=wall or clock, log=log, plans=plans, picture_of=picture_of)
    controller.applier.readback_timeout_s = 0.5
    return controller, metrics, clock


def use_plans(controller, advancer):
    """The controller's plans duty over `advancer` (a PlanAdvancer, or a stand-in with its `tick`, `statuses` and
    `reported`)."""
    controller.duties = replace(controller.duties, plans=Plans(advancer, controller.metrics, controller.clock,
                                                               controller._say))


def findings(snapshot, batch_id=7, tracks_moves=False, reported=(), **more):
    """A batch's findings as the batch handler hands them over."""
    return BatchFindings(batch_id=batch_id, snapshot=snapshot, tracks_moves=tracks_moves, reported=frozenset(reported),
                         **more)


def sample(metrics, metric, **labels):
    return metrics.registry.get_sample_value(metric.name, {"cluster": CLUSTER_NAME, **labels})
