"""Setting throttles through the one writer (streaming.control.applier.Applier.set_throttles) on the fake cluster:
what a read-back misses is set again until the cluster shows it, or the read-back's time is up."""

import pytest

from streaming.control.applier import applier_of
from streaming.control.ownership.store import MemoryLedger
from streaming.control.throttles.claims import ThrottleSetting
from streaming.vocabulary.errors import ClusterError
from tests.fake_cluster import FakeCluster

ALTER_LOG_DIRS_RATE = (2, "alter_log_dirs")
SETTING = ThrottleSetting(appends={("t", "follower"): {(0, 2)}}, rates={ALTER_LOG_DIRS_RATE: 2_000_000}, entries=(),
                          rate_claims=(), foreign={}, all_replicas=())


class SweptOnce(FakeCluster):
    """A janitor whose ledger predates the request's record takes the rate out right after the first set."""

    swept = False

    def writer(self, grant):
        writer = super().writer(grant)
        alter = writer.alter_throttles

        def alter_then_sweep(changes):
            answers = alter(changes)
            if not self.swept:
                self.swept = True
                self.rates.pop(ALTER_LOG_DIRS_RATE, None)
            return answers

        writer.alter_throttles = alter_then_sweep
        return writer


CASES = [
    # id, cluster, whether the throttles end up set, alters of the broker rate
    ("visible-at-once", FakeCluster(), True, 1),
    ("swept-between-set-and-read-back-is-set-again", SweptOnce(), True, 2),
    ("never-applied-is-not-visible", FakeCluster(ignore={("broker", "2")}), False, None),
]


@pytest.mark.parametrize("cluster, visible, rate_alters", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_throttle_the_read_back_misses_is_set_again(cluster, visible, rate_alters):
    cluster.partitions = {("t", 0): {"replicas": [1], "isr": [1], "leader": 1}}
    applier = applier_of(cluster, MemoryLedger())
    if visible:
        applier.set_throttles(SETTING, timeout_s=0.0)
        assert cluster.rates[ALTER_LOG_DIRS_RATE] == 2_000_000 and cluster.topics[("t", "follower")] == "0:2"
        assert sum(1 for alter in cluster.alters if alter[:3] == ("broker", "2", "alter_log_dirs")) == rate_alters
    else:
        with pytest.raises(ClusterError, match="throttles not visible after setting them"):
            applier.set_throttles(SETTING, timeout_s=0.0)
