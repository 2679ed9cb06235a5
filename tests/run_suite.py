"""`make test`: the whole suite as three pytest processes side by side (`--part`, tests/conftest.py).

One part is the tests on clusters nobody else uses: the fault cluster's (brokers and the controller killed or
paused for 40 s, the job killed at random moments), the disk cluster's and the compatibility lane's Kafka versions. They
spend most of their time waiting on Kafka's timeouts and on their own clusters' starts; run after everything else they
made the suite half as long again. Another is the secured cluster's (every SASL mechanism, its KDC and token issuer,
the five-minute job under 60 s tokens): run last in the part of the shared cluster's tests, it was a chain of about
eight minutes alone on an idle machine after the fault part had ended. The `others` part's output is shown as it
runs; the two others' are kept in files and shown once all are done. The exit status is the first failing part's.

The shared cluster is wiped first, as a fresh clone's (CI) is: kept from run to run, it held every earlier run's
topics (a progress topic per job: 112 after a day's runs), which every job's polls and throttle reads went over: the
`others` part took 36 minutes on it, 27 from a wiped one."""

import subprocess
import sys

from streaming.vocabulary.errors import EXIT_INTERRUPTED
from tests.kafka_fixtures import ROOT, shared_cluster

PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=40")
BESIDE, SHOWN = ("faults-and-versions", "secured"), "others"


def log_of(part):
    return ROOT / ".local-cluster" / f"{part}.log"


def main():
    shared_cluster().wipe()
    log_of(SHOWN).parent.mkdir(parents=True, exist_ok=True)
    logs = {part: log_of(part).open("w") for part in BESIDE}
    try:
        beside = {part: subprocess.Popen([*PYTEST, "--part", part], cwd=ROOT, stdin=subprocess.DEVNULL,
                                         stdout=logs[part], stderr=subprocess.STDOUT) for part in BESIDE}
        shown = subprocess.Popen([*PYTEST, "--part", SHOWN], cwd=ROOT, stdin=subprocess.DEVNULL)
        try:
            statuses = [shown.wait(), *(process.wait() for process in beside.values())]
        except KeyboardInterrupt:  # Ctrl-C reached every part too: each stops the clusters and jobs it started
            for process in (*beside.values(), shown):
                process.wait()
            return EXIT_INTERRUPTED
    finally:
        for log in logs.values():
            log.close()
    for part in BESIDE:
        print(f"\n----- part {part}, run beside the above ({log_of(part).relative_to(ROOT)}) -----")
        print(log_of(part).read_text(), end="", flush=True)
    return next((status for status in statuses if status != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
