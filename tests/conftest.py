import functools
import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tests.cluster_cli import cancel_everything, clear_broker_throttles
from tests.compat_support import VERSIONS as COMPAT_VERSIONS
from tests.compat_support import start_lane
from tests.job_process import OWNED_JOB_CLUSTER, OWNED_JOB_TRIGGER_S
from tests.kafka_fixtures import ROOT, shared_cluster

# Properties are checked for what they say, never for how fast an example runs: the unit tests share the
# machine with the clusters and the job starting beside them (WARMED). Half Hypothesis's 100 examples by default, and
# about a third of what the properties asked before (300-400): their 7 CPU minutes were a quarter of the suite's time
# and ran beside every cluster's and job's start.
settings.register_profile("suite", deadline=None, max_examples=50)
settings.load_profile("suite")

# The Spark drivers the tests start (every `run`, through spark-submit) compile with C1 only, as the local clusters'
# brokers do (deploy/local-cluster.sh): a job in the suite lives one to five minutes, most of them starting, where C2's
# compiler threads cost more CPU than its code saves (measured: a Spark start 28-30 -> 18-19 CPU seconds; a test file
# of three job starts 138 -> 117-125 CPU seconds). The product's own `run` keeps the JVM's default (C1 saved only in a job's first minutes).
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")

# Session fixtures stopped right after the last test that uses them, not at the session's end: an idle job
# still polls every trigger (about a core on this machine) and an idle cluster still runs three JVMs, both
# taken from every test after. Ordered: a job before the cluster it polls. Stopping twice is harmless.
STOPPED_AFTER_LAST_USE = {"polling_job": "stop", "default_trigger_job": "stop", "owned_job": "stop",
                          "fault_job": "stop", "fault_default_job": "stop", "fault_cluster": "down",
                          "reauth_job": "stop", "secure_cluster": "down", "disk_job": "stop", "disk_cluster": "down"}
# Shared jobs whose tests must run one after the other: a job's janitor claims (as observed) and removes the
# throttles of any test run while it is up; a job left up between its tests costs every test in between. The secured
# cluster's `reauth_job` (tests/test_secured_cluster.py) runs beside tests that start no move: each declares it.
RUN_TOGETHER = ("owned_job", "fault_job", "fault_default_job", "disk_job", "reauth_job")

LAST_USE = pytest.StashKey()

# `--part` (tests/run_suite.py): the tests on clusters of their own that no other test uses - the fault cluster, the
# disk cluster and the compatibility lane's versions but the shared cluster's; the secured cluster's; or every other
# test. The three parts share nothing but the machine (clusters, ports, jobs, directories), so `make test` runs them
# side by side.
def _on_clusters_of_their_own(item):
    version = _compat_version(item)
    return ({"fault_cluster", "disk_cluster", "cut_off_cluster"} & set(item.fixturenames)
            or (version is not None and not version.shared))


def _on_the_secured_cluster(item):
    return "secure_cluster" in item.fixturenames


PARTS = {"faults-and-versions": _on_clusters_of_their_own, "secured": _on_the_secured_cluster,
         "others": lambda item: not (_on_clusters_of_their_own(item) or _on_the_secured_cluster(item))}


def pytest_addoption(parser):
    parser.addoption("--part", choices=sorted(PARTS), help="run only this part of the suite (tests/run_suite.py)")


# What needs no test to get ready - the three clusters and three jobs' first Spark start, two and a half minutes
# of waiting - starts in one background thread, in the order the run first uses them, while the tests that use
# none of them run first; the fixture waits for its own. A fixture no selected test uses is not started. The
# tests of the warmed jobs on the shared cluster come first among its tests: those jobs claim no throttle, and
# they are stopped after their last test, before any other test of that cluster runs.
# The compatibility lane (tests/compat_support.py) runs last, one Kafka version after another, each on a cluster and
# a job of its own (the default version on the shared cluster). Each version's lane (about 1.2 GB: three brokers
# of 256 MB heap, the job) is warmed in a thread of its own: the first LANES_AHEAD once the test before the lane's
# first test has begun (LANES_CUE; earlier, their idle jobs and JVMs would take the CPU from every test until then),
# each later one once the tests of the version LANES_AHEAD before it have begun. A lane's start (50-95 s measured at
# load 12-30, of which 25 CPU seconds) outlasts one version's tests (15-45 s), and a start waits mostly for a share
# of the CPU: two start side by side. At most LANES_AHEAD + 1 lanes run at once; each is stopped after its last test.
CLUSTER_FIXTURES = ("cluster", "fault_cluster", "secure_cluster", "disk_cluster")
FIRST_ON_THE_CLUSTER = ("polling_job", "default_trigger_job")
COMPAT_NAMES = tuple(version.warm_name for version in COMPAT_VERSIONS)
LANES_AHEAD = 2
WARM_ORDER = ("cluster", *FIRST_ON_THE_CLUSTER, "fault_cluster", "fault_job", "secure_cluster", "reauth_job",
              "disk_cluster", "disk_job", *COMPAT_NAMES)
# The shared cluster's warmed jobs: flags after the master; neither removes a throttle (tests set and clear their own).
JOB_FLAGS = {
    # tests/test_job_cluster.py: a short trigger, stall window and rate window keep its moves small
    "polling_job": ("--trigger-interval", "2s", "--stall-after", "8s", "--rate-window", "10s",
                    "--throttle-cleanup", "off"),
    # the ETA test's second view of the same moves, at the default trigger
    "default_trigger_job": ("--throttle-cleanup", "off", "--quiet"),
}
WARMED = {}  # fixture name -> Warming
IN_USE = {name: threading.Event() for name in COMPAT_NAMES}  # set when the version's first test begins
SESSION_ENDING = threading.Event()  # a lane still waiting to be warmed then is not started
LANES_NEAR = threading.Event()  # the test before the lane's first test has begun: the first lanes are warmed
LANES_CUE = pytest.StashKey()  # on that test
LANES = []  # every compat lane the session had: stopped in threads of their own, joined at the session's end


class Warming:
    """One thing started in the background thread: `get()` waits for it (and raises what its start raised)."""

    def __init__(self):
        self.done, self.value, self.error = threading.Event(), None, None

    def get(self):
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value


def _warm(starts):
    """Start each of `starts` in turn."""
    for name, start in starts:
        try:
            WARMED[name].value = start()
        except Exception as error:  # handed to the fixture, which raises it in its first test
            WARMED[name].error = error
        finally:
            WARMED[name].done.set()


def _compat_version(item):
    """The Kafka version of a compatibility-lane test (its `compat` parameter), else None."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("compat") if callspec is not None else None


def _uses(item, names):
    version = _compat_version(item)
    return any(name in item.fixturenames or (version is not None and version.warm_name == name) for name in names)


def _warmed_after(lanes, index):
    """What must have happened before lane `index` is warmed: the tests of an earlier lane begun, or the lane near."""
    if index >= LANES_AHEAD:
        return IN_USE[lanes[index - LANES_AHEAD].warm_name]
    return IN_USE[lanes[0].warm_name] if lanes[index].shared else LANES_NEAR


def _warm_lane(version, after):
    """A version's lane (tests.compat_support.start_lane), once the event `after` is set."""
    while not after.wait(1):
        if SESSION_ENDING.is_set():
            return None
    return start_lane(version, WARMED["cluster"].get() if version.shared else None)


def _started(name, start):
    """The fixture's object: the warmed one when the background thread started it, else started now."""
    return WARMED[name].get() if name in WARMED else start()


@pytest.hookimpl(trylast=True)  # after -k and -m deselected what will not run
def pytest_collection_modifyitems(config, items):
    part = config.getoption("part")
    if part is not None:
        config.hook.pytest_deselected(items=[item for item in items if not PARTS[part](item)])
        items[:] = [item for item in items if PARTS[part](item)]
    uses = _uses
    lane = lambda item: _compat_version(item) is not None  # noqa: E731
    last = lambda item: item.get_closest_marker("last_in_part") is not None  # noqa: E731
    items.sort(key=lambda item: (last(item), uses(item, CLUSTER_FIXTURES) or lane(item), lane(item),  # stable
                                 not uses(item, FIRST_ON_THE_CLUSTER)))
    used = [name for name in WARM_ORDER if any(uses(item, (name,)) for item in items)]
    lanes = [version for version in COMPAT_VERSIONS if version.warm_name in used]
    # The shared cluster's lane is warmed only behind another version's lane (lanes run after every other test of
    # that cluster: its job would take their throttles) and when the shared cluster is warmed; else its fixture
    # starts it.
    used = [name for name in used if not any(v.shared and v.warm_name == name and (v == lanes[0] or "cluster" not in used)
                                             for v in lanes)]
    if used and not config.option.collectonly:
        starts = {"cluster": _start_cluster, "fault_cluster": _start_fault_cluster,
                  "fault_job": lambda: _start_fault_job(WARMED["fault_cluster"].get()),
                  "secure_cluster": _start_secure_cluster,
                  "reauth_job": lambda: _start_reauth_job(WARMED["secure_cluster"].get()),
                  "disk_cluster": _start_disk_cluster,
                  "disk_job": lambda: _start_disk_job(WARMED["disk_cluster"].get()),
                  **{name: functools.partial(_start_shared_job, name, lambda: WARMED["cluster"].get())
                     for name in FIRST_ON_THE_CLUSTER}}
        WARMED.update((name, Warming()) for name in used)
        threading.Thread(target=_warm, args=([(name, starts[name]) for name in used if name not in COMPAT_NAMES],),
                         name="warm-up", daemon=True).start()
        first_lane = next((i for i, item in enumerate(items) if lane(item)), None)
        if first_lane is not None:
            items[max(first_lane - 1, 0)].stash[LANES_CUE] = True
        for i, version in enumerate(lanes):
            if version.warm_name in used:
                start = functools.partial(_warm_lane, version, _warmed_after(lanes, i))
                threading.Thread(target=_warm, args=([(version.warm_name, start)],), name=f"warm-up {version.id}",
                                 daemon=True).start()
    for name in STOPPED_AFTER_LAST_USE:
        users = [i for i, item in enumerate(items) if name in item.fixturenames]
        if not users:
            continue
        if name in RUN_TOGETHER and users != list(range(users[0], users[-1] + 1)):
            between = next(items[i].nodeid for i in range(users[0], users[-1]) if i not in users)
            raise pytest.UsageError(f"the tests using {name} must run one after the other; {between} runs between")
        items[users[-1]].stash.setdefault(LAST_USE, []).append(name)


def pytest_sessionfinish(session):
    """Stop what the background thread started that no fixture stopped (the session ended before its first
    user, or that user failed to set up). Stopping twice is harmless; a job before the cluster it polls."""
    SESSION_ENDING.set()
    for lane in LANES:
        lane.join()
    for name, stop in {**STOPPED_AFTER_LAST_USE, **dict.fromkeys(COMPAT_NAMES, "close"), "cluster": "down"}.items():
        if name in WARMED and WARMED[name].done.wait(600) and WARMED[name].value is not None:
            getattr(WARMED[name].value, stop)()


def pytest_runtest_setup(item):
    if item.stash.get(LANES_CUE, False):
        LANES_NEAR.set()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    torn_down = yield  # the test's own fixtures first: their clean-up may still need the cluster
    for name in STOPPED_AFTER_LAST_USE:  # in the table's order
        if name in item.stash.get(LAST_USE, ()) and name in item.funcargs:
            getattr(item.funcargs[name], STOPPED_AFTER_LAST_USE[name])()
    return torn_down


@pytest.fixture(scope="session")
def cluster():
    """One real three-node cluster for the whole session (tests.kafka_fixtures.shared_cluster); stopped at the end
    when this session started it. `make test` wipes it first (tests/run_suite.py)."""
    local = _started("cluster", _start_cluster)
    yield local
    local.down()


def _start_cluster():
    return shared_cluster().up()


@pytest.fixture(scope="module", params=COMPAT_VERSIONS, ids=lambda version: version.id)
def compat(request):
    """One Kafka version's lane (tests.compat_support.Lane: its cluster, its job), shared by that version's tests;
    pytest runs them one version after another. Stopped after the version's last test (in the background)."""
    version = request.param
    IN_USE[version.warm_name].set()
    shared = request.getfixturevalue("cluster") if version.shared else None
    asked = time.monotonic()
    lane = _started(version.warm_name, lambda: start_lane(version, shared))
    lane.waited_s = time.monotonic() - asked  # what the lane's start cost the run (0 when warmed in time)
    LANES.append(lane)
    yield lane
    lane.stop()


@pytest.fixture
def clean(cluster):
    """A clean slate around each test: no reassignment running, no broker throttle left behind."""
    cancel_everything(cluster)
    clear_broker_throttles(cluster)
    created = []
    yield created
    cancel_everything(cluster)
    clear_broker_throttles(cluster)
    cluster.delete_topics(created)


@pytest.fixture(scope="session")
def fault_cluster():
    """A dedicated three-node cluster for the fault tests (broker kills, pauses): its own directory and
    ports, so the shared `cluster` never sees a dead node. Always fresh (wiped, then started): the first
    job run against it is a run against a cluster nobody touched. Stopped at the end."""
    local = _started("fault_cluster", _start_fault_cluster)
    yield local
    local.down()


def _start_fault_cluster():
    from tests.kafka_fixtures import FaultCluster

    cluster_dir = Path(os.environ.get("TEST_FAULT_CLUSTER_DIR", ROOT / ".local-cluster" / "faults"))
    local = FaultCluster(cluster_dir, int(os.environ.get("TEST_FAULT_KAFKA_BASE_PORT", "29700")))
    local.wipe().up()
    local.started_here = True  # wiped and started for this session: stopped by it
    return local


@pytest.fixture(scope="session")
def secure_cluster():
    """One secured cluster (SASL_SSL, SCRAM-SHA-512, StandardAuthorizer) for the session, on its own
    directory and ports (TEST_SECURE_CLUSTER_DIR / TEST_SECURE_KAFKA_BASE_PORT); stopped at the end when
    this session started it."""
    local = _started("secure_cluster", _start_secure_cluster)
    yield local
    local.down()


def _start_secure_cluster():
    from tests.secure_cluster import SecureCluster

    cluster_dir = Path(os.environ.get("TEST_SECURE_CLUSTER_DIR", ROOT / ".local-cluster" / "test-secure"))
    return SecureCluster(cluster_dir, int(os.environ.get("TEST_SECURE_KAFKA_BASE_PORT", "29500"))).up()


@pytest.fixture(scope="session")
def reauth_job(secure_cluster):
    """The secured cluster's job under 60 s tokens (tests/reauth_job.py), warmed as soon as that cluster is up and
    stopped after its last user (STOPPED_AFTER_LAST_USE); RUN_TOGETHER keeps the tests that do not declare it from
    running between its users."""
    return _started("reauth_job", lambda: _start_reauth_job(secure_cluster))


def _start_reauth_job(secure_cluster):
    from tests.reauth_job import start_reauth_job

    return start_reauth_job(secure_cluster)


# The disk cluster's deploy/local-cluster.sh environment (tests.disk_cluster.DiskCluster): every setting in one place.
# Two log dirs per broker (JBOD) and remote storage on a local directory (Kafka's LocalTieredStorage).
DISK_CLUSTER_SETTINGS = {"LOG_DIRS_PER_BROKER": "2", "TIERED_STORAGE": "1"}


@pytest.fixture(scope="session")
def disk_cluster():
    """Three brokers with two log dirs each, broker 3's second on a small tmpfs (tests.disk_cluster), and tiered
    storage: for every test of moves between log dirs, of a disk that fills and of remote storage; its own directory
    and ports (TEST_DISK_CLUSTER_DIR / TEST_DISK_KAFKA_BASE_PORT). Wiped and started fresh (a log dir that went offline
    stays offline), stopped and unmounted at the end."""
    local = _started("disk_cluster", _start_disk_cluster)
    yield local
    local.down()


def _start_disk_cluster():
    from tests.disk_cluster import DiskCluster

    cluster_dir = Path(os.environ.get("TEST_DISK_CLUSTER_DIR", ROOT / ".local-cluster" / "disks"))
    local = DiskCluster(cluster_dir, int(os.environ.get("TEST_DISK_KAFKA_BASE_PORT", "29300")), DISK_CLUSTER_SETTINGS)
    local.wipe().up()
    local.started_here = True
    return local


@pytest.fixture(scope="session")
def disk_job(disk_cluster):
    """The job as an operator runs it (`--throttle-cleanup owned`) on the disk cluster, at a 2 s trigger, its first
    batch done; shared by the disk tests (tests/test_disk_cluster.py), which run one after the other."""
    job = _started("disk_job", lambda: _start_disk_job(disk_cluster))
    yield job
    job.stop()
    print(job.log()[-3000:])


def _start_disk_job(disk_cluster):
    from tests.disk_cluster import DISK_JOB_FLAGS
    from tests.job_process import JobProcess

    directory = Path(disk_cluster.env["CLUSTER_DIR"]) / "job"
    directory.mkdir(parents=True, exist_ok=True)
    job = JobProcess(disk_cluster.bootstrap, directory / "checkpoint", directory / "job.log", *DISK_JOB_FLAGS).start()
    try:
        return job.wait_first_batch()
    except Exception:  # the fixture raises it; the job must not outlive the session
        job.stop()
        raise


@pytest.fixture(scope="session")
def fault_job(fault_cluster):
    """The streaming job on the fault cluster, shared by every fault test (tests that kill it start it
    again). Started first thing on the fresh cluster: `first_start` keeps how that first run went (no
    ownership topic yet, created by this very start), for test_first_run_on_a_fresh_cluster_starts. When
    that first start failed, it is started once more so the other fault tests still run."""
    job = _started("fault_job", lambda: _start_fault_job(fault_cluster))
    yield job
    job.stop()
    print(job.log()[-3000:])


def _start_fault_job(fault_cluster):
    import time

    from tests.fault_support import JOB_FLAGS
    from tests.job_process import BATCHES, FIRST_POLL_S, JobProcess
    from tests.kafka_fixtures import wait_for

    # Inside the cluster's directory (wiped with it at the next session), not pytest's rotating tmp dirs:
    # the job's log must outlive the session for the report of a failure.
    directory = Path(fault_cluster.env["CLUSTER_DIR"]) / "job"
    directory.mkdir(parents=True, exist_ok=True)
    job = JobProcess(fault_cluster.bootstrap, directory / "checkpoint", directory / "job.log", *JOB_FLAGS)
    started = time.monotonic()
    job.start()
    try:
        outcome = wait_for(lambda: ("first poll" if job.metric(BATCHES) else None)
                           or (f"exited {job.process.poll()}" if job.process.poll() is not None else None),
                           FIRST_POLL_S, message="the first run's first poll or its exit")
    except AssertionError as timeout:
        outcome = str(timeout)
    job.first_start = {"outcome": outcome, "seconds": time.monotonic() - started, "log": job.log()}
    if job.process.poll() is not None:
        job.start()
    return job


@pytest.fixture(scope="session")
def fault_default_job(fault_cluster):
    """A second job on the fault cluster at the default trigger and --timeout (10 s each), that only observes
    (--throttle-cleanup off: it alters no throttle and writes no ownership record): the default-trigger view of
    tests/test_faults_stop_cluster.py (beside `fault_job`) and tests/test_faults_trigger_cluster.py. Started, not
    waited on, so the first test can prepare its data while Spark starts; its own checkpoint and progress topic."""
    from tests.job_process import JobProcess

    directory = Path(fault_cluster.env["CLUSTER_DIR"]) / "default-job"
    directory.mkdir(parents=True, exist_ok=True)
    job = JobProcess(fault_cluster.bootstrap, directory / "checkpoint", directory / "job.log", "--master", "local[2]",
                     "--throttle-cleanup", "off", "--debug")
    job.start()
    yield job
    job.stop()
    print(job.log()[-3000:])


@pytest.fixture(scope="session")
def polling_job(cluster):
    """The job tests/test_job_cluster.py watches moves with (JOB_FLAGS), its first batch done; tests that kill it
    start it again. Stopped after its last test."""
    job = _started("polling_job", lambda: _start_shared_job("polling_job", lambda: cluster))
    yield job
    job.stop()
    print(job.log()[-3000:])


@pytest.fixture(scope="session")
def default_trigger_job(cluster):
    """A second job on the shared cluster at the default trigger (JOB_FLAGS), its first batch done."""
    job = _started("default_trigger_job", lambda: _start_shared_job("default_trigger_job", lambda: cluster))
    yield job
    job.stop()


def _start_shared_job(name, cluster_of):
    import shutil

    from tests.job_process import JobProcess

    cluster = cluster_of()
    # A fresh checkpoint in the cluster's directory (pytest's temporary directories are made by a fixture).
    directory = Path(cluster.env["CLUSTER_DIR"]) / "jobs" / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    job = JobProcess(cluster.bootstrap, directory / "checkpoint", directory / "job.log", "--master", "local[2]",
                     *JOB_FLAGS[name]).start()
    try:
        return job.wait_first_batch()
    except Exception:  # the fixture raises it; the job must not outlive the session
        job.stop()
        raise


@pytest.fixture(scope="session")
def guard():
    """The `--throttle-guard` the shared job asks (tests.query_api_server): calm until a test sets it firing."""
    from tests.query_api_server import QueryApiServer

    server = QueryApiServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def owned_job(cluster, guard, tmp_path_factory):
    """The job as an operator runs it (`--throttle-cleanup owned`, the default) on the shared cluster, shared
    by the dashboard and janitor tests (test_job_dashboards_cluster, test_job_janitor_cluster: next to each
    other in the run's order), since a Spark start costs half a minute and more. Started, not waited on, so
    a test can write its data while Spark starts; tests that kill it start it again. Stopped after its last
    user: its janitor would claim (as observed) and remove the throttles of any test after it."""
    from tests.job_process import JobProcess

    directory = tmp_path_factory.mktemp("owned-job")
    job = JobProcess(cluster.bootstrap, directory / "checkpoint", directory / "job.log",
                     "--trigger-interval", f"{OWNED_JOB_TRIGGER_S:g}s", "--stall-after", "20s",
                     "--master", "local[2]", "--quiet", "--cluster-name", OWNED_JOB_CLUSTER,
                     # steers only requests executed with --throttle auto (tests/test_job_janitor_cluster.py)
                     "--throttle", "auto", "--throttle-min", "100KB", "--throttle-max", "50MB",
                     "--throttle-interval", "1s",
                     "--throttle-guard-url", guard.url, "--throttle-guard", "produce_latency_p99_seconds > 0.5")
    job.start()
    yield job
    job.stop()
    print(job.log()[-3000:])
