"""duties.log_dirs alone, and the controller sweeping the moment a broker's last future log ended (a move between log
dirs is in no reassignment list): the alter-log-dirs rate we own goes within a tick, not with the next batch."""

from dataclasses import replace

import pytest

from streaming.control.duties.log_dir_moves import LogDirMoves
from streaming.control.ownership.records import RateClaim
from streaming.control.ownership.store import MemoryLedger
from tests.controller_support import a_controller
from tests.fake_cluster import FakeCluster
from tests.test_janitor import MB, request

# (future logs at each look, the owned brokers, the ends each look reports)
LOOKS = [
    ([{1}, {1}, set()], {1}, [[], [], [1]]),  # its move between log dirs ends at the third look
    ([{1, 2}, {2}, set()], {1, 2}, [[], [1], [2]]),  # one broker's at a time
    ([{1}, set()], set(), [[], []]),  # no owned rate: nothing looked at, nothing ends
    ([set(), {1}, {1}], {1}, [[], [], []]),  # one that starts later has not ended
]


@pytest.mark.parametrize("futures, owned, ends", LOOKS, ids=["ends", "one-at-a-time", "not-owned", "starts-later"])
def test_the_end_of_a_brokers_last_future_log(futures, owned, ends):
    cluster = FakeCluster()
    duty = LogDirMoves(cluster)
    seen = []
    for future in futures:
        cluster.future = future
        seen.append(duty.ended(frozenset(owned)))
    assert seen == ends


def test_a_failed_look_ends_nothing_and_keeps_what_it_knew():
    cluster = FakeCluster(future={1})
    duty = LogDirMoves(cluster)
    assert duty.ended(frozenset({1})) == []
    cluster.future, cluster.fail["describe_log_dirs"] = set(), RuntimeError("no answer")
    assert duty.ended(frozenset({1})) == [] and duty.future_on == {1}
    del cluster.fail["describe_log_dirs"]
    assert duty.ended(frozenset({1})) == [1]


def test_the_controller_removes_its_alter_log_dirs_rate_at_the_tick_after_the_move_ended(tmp_path):
    cluster = FakeCluster(rates={(1, "alter_log_dirs"): MB}, future={1})
    ledger = MemoryLedger.of(replace(request(), moves=(), entries=(), rates=(RateClaim(1, "alter_log_dirs", MB, None),)))
    controller, _, clock = a_controller(cluster, ledger, gate_dir=tmp_path)
    controller.tick()
    clock.now += 1
    controller.tick()
    assert (1, "alter_log_dirs") in cluster.rates  # the future log is still there: Broker in use
    cluster.future = set()
    clock.now += 1
    controller.tick()
    assert (1, "alter_log_dirs") not in cluster.rates
