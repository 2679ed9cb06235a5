"""The secured cluster's long job under 60 s tokens (`reauth_job`, judged by tests/test_secured_cluster.py
test_job_across_token_lifetimes): started by the suite's background warm-up as soon as the secured cluster is up
(tests/conftest.py WARM_ORDER), so its five minutes have passed by the time its test runs, and stopped after its last
user. On the secured cluster only tests that start no move and set no throttle run while it is up (that test's
docstring says why); tests on other clusters do not meet it."""

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from streaming.cluster import acls
from streaming.vocabulary import client_config
from tests.job_process import JobProcess

REAUTH_RUN_S = 300  # the job's run before its move: five lifetimes of the issuer's tokens
REAUTH_TRIGGER_S = 5
REAUTH_CLIENT = "oauth-reauth-monitor"  # its OAuth client: the principal User:oauth-reauth-monitor
REAUTH_OWN = "sec-reauth-ownership"  # its ownership topic: the cases beside it delete and seed the default one
REAUTH_COUNT = Path(__file__).parent / "java" / "ReauthCount.java"


@dataclass
class LongRun:
    job: JobProcess
    directory: Path  # its checkpoint and log
    started_s: float  # time.monotonic() when it was started
    reauths_then: subprocess.Popen  # the brokers' re-authentication counts when it was started (count_reauths)

    def stop(self):  # conftest STOPPED_AFTER_LAST_USE, and the session's end
        self.job.stop()
        if self.reauths_then.returncode is None:  # not read: its test did not run
            self.reauths_then.kill()
            self.reauths_then.communicate()


def count_reauths(cluster):
    """The brokers' own counts of SASL re-authentications, read over JMX (tests/java/ReauthCount.java, the only
    place a broker shows them): started now, read with `reauths`."""
    return subprocess.Popen(["java", "--add-modules", "jdk.attach", str(REAUTH_COUNT),
                             *(str(cluster.pid(node)) for node in (1, 2, 3))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def reauths(counting, timeout_s=120):
    """(successful, failed) re-authentications over every broker, from a `count_reauths` process."""
    out, err = counting.communicate(timeout=timeout_s)
    assert counting.returncode == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == 3, out
    return sum(int(row[1]) for row in rows), sum(int(row[2]) for row in rows)


def start_reauth_job(cluster):
    """The streaming job as an OAUTHBEARER principal with exactly `run`'s grants, on the secured `cluster`; its
    checkpoint and log in the cluster's directory (made afresh)."""
    directory = cluster.dir / "reauth-job"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    job = JobProcess(cluster.bootstrap, directory / "checkpoint", directory / "job.log",
                     "--trigger-interval", f"{REAUTH_TRIGGER_S}s", "--throttle-cleanup", "owned",
                     "--ownership-topic", REAUTH_OWN, "--debug")
    monitor = cluster.principal(REAUTH_CLIENT, acls.grants("run", progress_topic=job.progress_topic,
                                                           ownership_topic=REAUTH_OWN),
                                directory, client_config.OAUTHBEARER)
    job.args += ["--command-config", str(monitor)]
    counting = count_reauths(cluster)
    job.start()
    return LongRun(job, directory, time.monotonic(), counting)
