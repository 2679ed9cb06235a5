"""The batches' polls wait on a request at most half a trigger (streaming.vocabulary.defaults.poll_request_deadline_s),
and the executors' doors get that deadline through the source's options (streaming.spark.source.Target)."""

import pytest

from streaming.spark.driver import JobConfig
from streaming.spark.source import Target
from streaming.vocabulary.defaults import REQUEST_DEADLINE_S, poll_request_deadline_s


@pytest.mark.parametrize("timeout_s, trigger_s, expected_s", [
    (10.0, 10.0, REQUEST_DEADLINE_S),  # the defaults: the door's own deadline
    (10.0, 2.0, 1.0),  # half the trigger
    (10.0, 4.0, 2.0),
    (3.0, 10.0, 1.5),  # half --timeout, as the door's own
    (1.0, 1.0, 0.5),
])
def test_a_poll_waits_on_a_request_at_most_half_a_trigger(timeout_s, trigger_s, expected_s):
    assert poll_request_deadline_s(timeout_s, trigger_s) == expected_s


def test_the_deadline_reaches_the_executor_through_the_options():
    target = Target.of_config(JobConfig(bootstrap="127.0.0.1:9092", timeout_s=10.0, trigger_interval_s=2.0))
    assert target.deadline_s == 1.0
    assert Target.of(target.options()) == target


def test_options_without_a_deadline_give_the_doors_own():
    assert Target.of({"bootstrap": "127.0.0.1:9092", "timeout": "10.0"}).deadline_s is None
