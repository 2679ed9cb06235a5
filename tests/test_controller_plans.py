"""The job advances plans from its controller (streaming.control.plans.advancer): on the admin fake with the ledger
in memory, the same `advance_once` as tests/test_plan_advance.py, through the controller's one writer."""

from streaming.cluster.poller import poll
from streaming.control.ownership.leases import Lease, holder_of
from streaming.control.plans.advancer import MONITORING_ONLY, PlanAdvancer
from streaming.control.plans.scheduler import Limits
from streaming.vocabulary.errors import ClusterError
from tests.controller_support import a_controller, sample, use_plans
from tests.test_controller import batch
from tests.test_plan_advance import PLAN_ID, setup, writer
from streaming.vocabulary.states import PlanState

ME = "job h:1"


def advancer(fake, ledger, acts=True):
    return PlanAdvancer(fake, writer(fake, ledger), lambda topics: poll(fake, topics=topics, throttles=True), 1.0,
                        acts=acts, me=ME)


def controller_with_plans(tmp_path, fake, ledger):
    controller, metrics, clock = a_controller(fake, ledger, gate_dir=tmp_path)
    use_plans(controller, advancer(fake, ledger))
    return controller, metrics, clock


def test_a_running_plan_is_stepped_at_most_once_per_interval():
    fake, ledger = setup(limits=Limits(2))
    job = advancer(fake, ledger)
    [status] = job.tick(100.0, 10_000).values()
    assert status.advanced_by == ME and status.step.submitted == (("t", 0), ("t", 1))
    assert job.tick(100.5, 10_500)[PLAN_ID].step is status.step  # within the interval: not stepped again
    assert len(fake.starts) == 1


def test_a_plan_another_advancer_holds_is_reported_not_stepped():
    fake, ledger = setup()
    ledger.put_lease(Lease(PLAN_ID, "execute --wait h:2", 9_000, 24_000))
    status = advancer(fake, ledger).tick(100.0, 10_000)[PLAN_ID]
    assert status.advanced_by == "execute --wait h:2" and status.step is None and fake.starts == []


def test_refused_steps_are_reported_as_not_advanced_and_the_job_goes_on():
    fake, ledger = setup()
    fake.fail["start_reassignments"] = ClusterError("AlterPartitionReassignments refused: not authorized (Alter on Cluster)")
    job = advancer(fake, ledger)
    status = job.tick(100.0, 10_000)[PLAN_ID]
    assert status.not_advanced.startswith("NotStarted: AlterPartitionReassignments refused")  # rolled back
    assert status.state == PlanState.RUNNING
    assert holder_of(ledger.leases(PLAN_ID)).until_ms == 10_000  # let go: `resume --wait` may take it
    waves = len(ledger.records())
    assert job.tick(130.0, 40_000)[PLAN_ID].not_advanced == status.not_advanced
    assert len(ledger.records()) == waves  # no wave tried (and aborted) again within RETRY_AFTER_S
    job.tick(161.0, 71_000)
    assert len(ledger.records()) == waves + 1  # tried again


def test_a_job_that_changes_nothing_reports_plans_without_stepping_them():
    fake, ledger = setup(state=PlanState.PAUSED)
    status = advancer(fake, ledger, acts=False).tick(100.0, 10_000)[PLAN_ID]
    assert (status.state, status.not_advanced, fake.starts, ledger.claims) == (PlanState.PAUSED, MONITORING_ONLY, [], [])


def test_a_finished_plan_is_kept_until_a_batch_reported_how_it_ended():
    fake, ledger = setup(partitions=1)
    job = advancer(fake, ledger)
    job.tick(100.0, 10_000)
    fake.partitions[("t", 0)] = {"replicas": [2], "isr": [2], "leader": 2}
    assert job.tick(102.0, 12_000)[PLAN_ID].state == "done"
    assert job.tick(104.0, 14_000)[PLAN_ID].state == "done"  # no batch wrote its last record yet
    job.reported([PLAN_ID])
    assert job.tick(106.0, 16_000) == {} and job.tick(108.0, 18_000) == {}


def test_the_controller_steps_active_plans_and_keeps_batches_running_for_them(tmp_path):
    fake, ledger = setup()
    controller, _, _ = controller_with_plans(tmp_path, fake, ledger)
    controller.hand_over(batch())
    assert controller.tick() == "plans_active"  # the fake starts nothing moving: only the plan wants batches
    assert fake.starts == [{("t", 0): [2], ("t", 1): [2]}]
    assert controller.plan_statuses()[PLAN_ID].advanced_by == ME


def test_an_idle_controller_reads_plans_once_a_trigger_and_each_tick_while_something_moves(tmp_path):
    fake, ledger = setup(state=PlanState.PAUSED)
    ledger.plan_headers.clear()  # no plan at all
    controller, _, clock = controller_with_plans(tmp_path, fake, ledger)
    rounds = []
    tick = controller.duties.plans.advancer.tick
    controller.duties.plans.advancer.tick = lambda now_s, now_ms: rounds.append(clock.now) or tick(now_s, now_ms)
    controller.hand_over(batch())
    controller.tick()
    clock.now += 5
    assert controller.tick() is None and rounds == [1000.0]  # idle: not before a trigger interval (10 s here)
    clock.now += 5
    controller.tick()
    assert rounds == [1000.0, 1010.0]  # a plan whose first wave finished unseen is picked up
    fake.reassigning[("t", 0)] = ([2, 1], [2], [1])
    clock.now += 1
    controller.tick()
    clock.now += 1
    controller.tick()
    assert rounds == [1000.0, 1010.0, 1011.0, 1012.0]


def test_the_throttles_a_plan_step_removed_count_in_the_throttle_actions_metric(tmp_path):
    """A plan's step sweeps: its removals count like the controller's own sweeps."""
    from types import SimpleNamespace

    from sinks.metric_names import THROTTLE_ACTIONS

    removed = SimpleNamespace(scope="broker", action="removed")
    step = SimpleNamespace(throttle_actions=(removed, removed), submitted=(), cancelled=(), refused=(), counts={})
    status = SimpleNamespace(step=step, state=PlanState.RUNNING, not_advanced=None, advanced_by=ME)
    fake, ledger = setup()
    controller, metrics, _ = a_controller(fake, ledger, gate_dir=tmp_path)
    use_plans(controller, SimpleNamespace(tick=lambda now_s, now_ms: {PLAN_ID: status}, statuses={PLAN_ID: status},
                                          reported=lambda request_ids: None))
    controller.hand_over(batch())
    controller.tick()
    assert sample(metrics, THROTTLE_ACTIONS, scope="broker", action="removed") == 2.0
