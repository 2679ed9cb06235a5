"""`make test`: the whole suite as two pytest processes side by side (`--part`, tests/conftest.py).

One part is the tests on clusters nobody else uses: the fault cluster's (brokers and the controller killed or
paused for 40 s, the job killed at random moments), the disk cluster's and the compatibility lane's Kafka versions. They spend most of
their time waiting on Kafka's timeouts and on their own clusters' starts; run after everything else they made the
suite half as long again. The other part's output is shown as it runs; this part's is kept in a file and shown
once both are done. The exit status is the first failing part's.

The shared cluster is wiped first, as a fresh clone's (CI) is: kept from run to run, it held every earlier run's
topics (a progress topic per job: 112 after a day's runs), which every job's polls and throttle reads went over: the
`others` part took 36 minutes on it, 27 from a wiped one."""

import subprocess
import sys

from streaming.vocabulary.errors import EXIT_INTERRUPTED
from tests.kafka_fixtures import ROOT, shared_cluster

PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=40")
BESIDE, SHOWN = "faults-and-versions", "others"
BESIDE_LOG = ROOT / ".local-cluster" / f"{BESIDE}.log"


def main():
    shared_cluster().wipe()
    BESIDE_LOG.parent.mkdir(parents=True, exist_ok=True)
    with BESIDE_LOG.open("w") as log:
        beside = subprocess.Popen([*PYTEST, "--part", BESIDE], cwd=ROOT, stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=subprocess.STDOUT)
        shown = subprocess.Popen([*PYTEST, "--part", SHOWN], cwd=ROOT, stdin=subprocess.DEVNULL)
        try:
            statuses = [shown.wait(), beside.wait()]
        except KeyboardInterrupt:  # Ctrl-C reached both parts too: each stops the clusters and jobs it started
            beside.wait()
            shown.wait()
            return EXIT_INTERRUPTED
    print(f"\n----- part {BESIDE}, run beside the above ({BESIDE_LOG.relative_to(ROOT)}) -----")
    print(BESIDE_LOG.read_text(), end="", flush=True)
    return next((status for status in statuses if status != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
