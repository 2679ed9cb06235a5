"""The door never closes a kafka-python client under a request that uses it: the driver's threads (the controller's
ticks and looks, a poll of its own while a batch is late, the batch handler's reads) share one door, and one request's
stale-picture error drops the client the others may still be using. Before, the drop closed it at once and the others
failed with "NetworkSelector closed!" (seen on a real cluster after a killed broker came back). Here the clients are
stand-ins that fail any request running while they are closed; the door's own call path (`_call`) drives them."""

import threading
import time
from collections import Counter

import pytest
from kafka.errors import NotControllerError

from streaming.cluster.door import Door
from streaming.vocabulary.defaults import TIMEOUT_S, request_deadline_s
from streaming.vocabulary.kafka_apis import METADATA


class Client:
    """A kafka-python client as the door uses it: `ask(seconds)` is a request that takes that long, and fails the way
    kafka-python's does when the client is closed under it."""

    def __init__(self, number):
        self.number, self.closed, self.requests = number, False, 0

    def ask(self, seconds):
        self.requests += 1
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.closed:
                raise RuntimeError("NetworkSelector closed!")
            time.sleep(0.005)
        return self.number

    def close(self):
        self.closed = True


class ClientsDoor(Door):
    """The door's client lifetimes and call path, without a cluster: each bootstrap makes a new `Client`."""

    def __init__(self):
        self._timeout_s, self._deadline_s = TIMEOUT_S, request_deadline_s(TIMEOUT_S)
        self._lock, self.requests, self.retried = threading.Lock(), 0, Counter()
        self._kafka, self._in_use, self._retired = None, Counter(), {}
        self.made = []

    def _new_client(self, budget_s):
        self.made.append(Client(len(self.made)))
        return self.made[-1]

    def _steer(self, kafka):
        return kafka

    def _reroute(self):
        return None


def stale_once(door):
    """A request whose client's picture of the cluster is stale the first time (NOT_CONTROLLER): the door drops that
    client and the retry bootstraps a new one."""
    failed = []

    def work(kafka):
        if not failed:
            failed.append(kafka.number)
            raise NotControllerError()
        return kafka.ask(0.01)
    return door._call(METADATA, work)


@pytest.mark.parametrize("requests_alongside", [1, 4], ids=["one-poll-alongside", "four-polls-alongside"])
def test_a_client_dropped_while_requests_use_it_is_closed_when_the_last_one_ended(requests_alongside):
    door = ClientsDoor()
    answers, errors, started = [], [], threading.Barrier(requests_alongside + 1)

    def long_request():
        try:
            started.wait()
            answers.append(door._call(METADATA, lambda kafka: kafka.ask(0.3)))
        except Exception as error:  # what the fix prevents: a request failing because its client was closed
            errors.append(error)

    threads = [threading.Thread(target=long_request) for _ in range(requests_alongside)]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.05)  # the long requests are under way on the first client
    assert stale_once(door) == 1  # the retry went to a new client
    first = door.made[0]
    assert not first.closed  # retired, still in use
    for thread in threads:
        thread.join(5)
    assert errors == [] and answers == [0] * requests_alongside
    assert first.closed  # closed by the last request that used it
    assert not door.made[1].closed and door._in_use == Counter() and door._retired == {}


def test_a_client_no_request_uses_is_closed_at_once_when_dropped():
    door = ClientsDoor()
    door._call(METADATA, lambda kafka: kafka.ask(0))
    door._drop()
    assert door.made[0].closed and door._kafka is None


def test_a_drop_never_retires_the_client_another_request_made_since():
    """Two requests fail on the same stale client: the second's drop must not close the new client the first made."""
    door = ClientsDoor()
    old = door._connect()
    door._retire(old)
    new = door._connect(use=True)
    door._retire(old)  # a late drop of the stale client
    assert door._kafka is new and not new.closed
