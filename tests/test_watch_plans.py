"""The job advances plans from its driver's watch (streaming.control.plans.advancer): on the admin fake with the plan
and ownership stores in memory, the same `advance_once` as tests/test_plan_advance.py."""

from streaming.control.ownership.leases import Lease, holder_of
from streaming.control.ownership.plans import PAUSED, RUNNING
from streaming.control.plans.scheduler import Limits
from streaming.cluster.poller import poll
from streaming.vocabulary.errors import ClusterError
from streaming.control.plans.advancer import MONITORING_ONLY, PlanAdvancer
from tests.test_plan_advance import PLAN_ID, setup

ME = "job h:1"


def advancer(fake, plans, owners, acts=True):
    return PlanAdvancer(fake, plans, owners, lambda topics: poll(fake, topics=topics, throttles=True), 1.0,
                        acts=acts, me=ME)


def test_a_running_plan_is_stepped_at_most_once_per_interval():
    fake, plans, owners = setup(limits=Limits(2))
    job = advancer(fake, plans, owners)
    [status] = job.tick(100.0, 10_000).values()
    assert status.advanced_by == ME and status.step.submitted == (("t", 0), ("t", 1))
    assert job.tick(100.5, 10_500)[PLAN_ID].step is status.step  # within the interval: not stepped again
    assert len(fake.starts) == 1


def test_a_plan_another_advancer_holds_is_reported_not_stepped():
    fake, plans, owners = setup()
    plans.put_lease(Lease(PLAN_ID, "execute --wait h:2", 9_000, 24_000))
    status = advancer(fake, plans, owners).tick(100.0, 10_000)[PLAN_ID]
    assert status.advanced_by == "execute --wait h:2" and status.step is None and fake.starts == []


def test_refused_steps_are_reported_as_not_advanced_and_the_job_goes_on():
    fake, plans, owners = setup()
    def refused(targets):
        raise ClusterError("AlterPartitionReassignments refused: not authorized (Alter on Cluster)")

    fake.start_reassignments = refused
    job = advancer(fake, plans, owners)
    status = job.tick(100.0, 10_000)[PLAN_ID]
    assert status.not_advanced.startswith("ClusterError: AlterPartitionReassignments refused")
    assert status.state == RUNNING
    assert holder_of(plans.leases(PLAN_ID)).until_ms == 10_000  # let go: `resume --wait` may take it
    waves = len(owners.records())
    assert job.tick(130.0, 40_000)[PLAN_ID].not_advanced == status.not_advanced
    assert len(owners.records()) == waves  # no wave tried (and aborted) again within RETRY_AFTER_S
    job.tick(161.0, 71_000)
    assert len(owners.records()) == waves + 1  # tried again


def test_a_job_that_changes_nothing_reports_plans_without_stepping_them():
    fake, plans, owners = setup(state=PAUSED)
    status = advancer(fake, plans, owners, acts=False).tick(100.0, 10_000)[PLAN_ID]
    assert (status.state, status.not_advanced, fake.starts, plans.claims) == (PAUSED, MONITORING_ONLY, [], [])


def test_a_finished_plan_is_kept_until_a_batch_reported_how_it_ended():
    fake, plans, owners = setup(partitions=1)
    job = advancer(fake, plans, owners)
    job.tick(100.0, 10_000)
    fake.partitions[("t", 0)] = {"replicas": [2], "isr": [2], "leader": 2}
    assert job.tick(102.0, 12_000)[PLAN_ID].state == "done"
    assert job.tick(104.0, 14_000)[PLAN_ID].state == "done"  # no batch wrote its last record yet
    job.reported([PLAN_ID])
    assert job.tick(106.0, 16_000) == {} and job.tick(108.0, 18_000) == {}


def test_the_watch_steps_active_plans_and_keeps_batches_running_for_them(tmp_path):
    from tests.test_watch import a_watch, batch

    fake, plans, owners = setup()
    watch, _, _ = a_watch(tmp_path, fake)
    watch.plans = advancer(fake, plans, owners)
    watch.batch_done(*batch())
    assert watch.tick() == "plans_active"  # the fake starts nothing moving: only the plan wants batches
    assert fake.starts == [{("t", 0): [2], ("t", 1): [2]}]
    assert watch.plan_statuses()[PLAN_ID].advanced_by == ME


def test_an_idle_watch_reads_plans_once_a_trigger_and_each_tick_while_something_moves(tmp_path):
    from tests.test_watch import a_watch, batch

    fake, plans, owners = setup(state=PAUSED)
    plans.latest.clear()  # no plan at all
    watch, _, clock = a_watch(tmp_path, fake)
    watch.plans = advancer(fake, plans, owners)
    reads = []
    watch.plans.plans.refresh = lambda: reads.append(clock.now)
    watch.batch_done(*batch())
    watch.tick()
    clock.now += 5
    assert watch.tick() is None and reads == [1000.0]  # idle: not before a trigger interval (10 s here)
    clock.now += 5
    watch.tick()
    assert reads == [1000.0, 1010.0]  # a plan whose first wave finished unseen is picked up
    fake.reassigning[("t", 0)] = ([2, 1], [2], [1])
    clock.now += 1
    watch.tick()
    clock.now += 1
    watch.tick()
    assert reads == [1000.0, 1010.0, 1011.0, 1012.0]


def test_the_throttles_a_plan_step_removed_count_in_the_throttle_actions_metric(tmp_path):
    """A plan's step sweeps with a janitor of its own: its removals count like the watch's own sweeps."""
    from types import SimpleNamespace

    from sinks.metric_names import THROTTLE_ACTIONS
    from tests.test_watch import a_watch, batch, sample

    removed = SimpleNamespace(scope="broker", action="removed")
    step = SimpleNamespace(throttle_actions=(removed, removed), submitted=(), cancelled=(), refused=(), counts={})
    status = SimpleNamespace(step=step, state=RUNNING, not_advanced=None, advanced_by=ME)
    fake, _, _ = setup()
    watch, metrics, _ = a_watch(tmp_path, fake)
    watch.plans = SimpleNamespace(tick=lambda now_s, now_ms: {PLAN_ID: status}, statuses={PLAN_ID: status})
    watch.batch_done(*batch())
    watch.tick()
    assert sample(metrics, THROTTLE_ACTIONS, scope="broker", action="removed") == 2.0
