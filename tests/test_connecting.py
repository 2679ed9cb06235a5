"""How the door's kafka-python clients bootstrap while a broker hangs (streaming.cluster.connecting): which bootstrap
servers the next pick is made from, on plain data, and a door's bootstrap against local servers that accept a
connection and never answer (what a SIGSTOPped broker's kernel does), with no Kafka. The broker really stopped is in
tests/test_faults_stop_cluster.py."""

import socket
import threading
import time
from collections import namedtuple

import pytest
from kafka.errors import KafkaTimeoutError

from streaming.cluster.connecting import candidates
from streaming.cluster.door import Door
from streaming.cluster.held import HeldNodes
from streaming.vocabulary.defaults import request_deadline_s
from tests.kafka_fixtures import wait_for

Broker = namedtuple("Broker", "node_id")
BOOTSTRAP = [Broker("bootstrap-0"), Broker("bootstrap-1"), Broker("bootstrap-2")]

CANDIDATE_CASES = [
    # id, failed in this client, the brokers the next pick is made from
    ("none-failed-all", set(), ["bootstrap-0", "bootstrap-1", "bootstrap-2"]),
    ("a-hung-one-lapsed-the-others", {"bootstrap-1"}, ["bootstrap-0", "bootstrap-2"]),
    ("two-failed-the-last", {"bootstrap-0", "bootstrap-2"}, ["bootstrap-1"]),
    # kafka-python's reconnect backoff paces the attempts then, as without the rule
    ("every-one-failed-all-again", {"bootstrap-0", "bootstrap-1", "bootstrap-2"},
     ["bootstrap-0", "bootstrap-1", "bootstrap-2"]),
    ("a-failed-broker-node-is-not-a-bootstrap-one", {3}, ["bootstrap-0", "bootstrap-1", "bootstrap-2"]),
]


@pytest.mark.parametrize("failed, picked_from", [pytest.param(*c[1:], id=c[0]) for c in CANDIDATE_CASES])
def test_candidates(failed, picked_from):
    assert [b.node_id for b in candidates(BOOTSTRAP, failed)] == picked_from


class HungServer:
    """A listening socket whose connections are accepted and never answered, each read until the client closes
    it: `connections` is [(accepted, closed or None)] in monotonic seconds."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.address = "127.0.0.1:%d" % self.socket.getsockname()[1]
        self.connections = []
        self._halt = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._halt.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            self.connections.append([time.monotonic(), None])
            threading.Thread(target=self._read, args=(connection, len(self.connections) - 1), daemon=True).start()

    def _read(self, connection, index):
        connection.settimeout(0.1)
        while not self._halt.is_set():
            try:
                if not connection.recv(4096):
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        self.connections[index][1] = time.monotonic()
        connection.close()

    def close(self):
        self._halt.set()
        self.socket.close()


class UnbootstrappedDoor(Door):
    """The door's own client making (`_connect`), without its first bootstrap."""

    def __init__(self, bootstrap, timeout_s):
        self._bootstrap, self._settings = bootstrap, {}
        self._timeout_s, self._deadline_s = timeout_s, request_deadline_s(timeout_s)
        self._lock, self._held_lock = threading.Lock(), threading.Lock()
        self._held, self._addresses, self._kafka, self._log = HeldNodes(timeout_s, 0.5), {}, None, None


def test_a_hung_bootstrap_server_costs_one_request_deadline_and_the_next_one_is_asked():
    # kafka-python alone picked one of them and gave that connection the whole budget: the other was never asked, and
    # a door made while a broker hung failed when it picked that one although two brokers answered.
    servers = [HungServer(), HungServer()]
    door = UnbootstrappedDoor(",".join(s.address for s in servers), timeout_s=2.0)
    deadline_s, budget_s = door._deadline_s, 1.6 * door._deadline_s
    started = time.monotonic()
    try:
        with pytest.raises(KafkaTimeoutError):
            door._connect(budget_s)
        took_s = time.monotonic() - started
        # the servers' threads record the first contact's close a moment after the door closed it
        wait_for(lambda: [c for s in servers for c in s.connections if c[1] is not None], 5, interval_s=0.02,
                 message="the first contact's close")
        contacts = sorted(c for s in servers for c in s.connections)
    finally:
        for server in servers:
            server.close()
    assert [len(s.connections) for s in servers] == [1, 1], contacts
    (first_at, first_closed), (second_at, _) = contacts
    assert first_closed is not None and deadline_s - 0.2 <= first_closed - first_at <= deadline_s + 0.5, contacts
    assert second_at - first_at <= deadline_s + 0.5 and took_s <= budget_s + 0.5, (contacts, took_s)


def test_an_authentication_without_a_verdict_by_the_deadline_is_not_said_to_have_succeeded(tmp_path):
    """The connection diagnosis (streaming.cluster.connect_diagnosis) against a server that accepts and never
    answers, over SASL_PLAINTEXT: TCP succeeds, the SASL handshake gets no answer. What it says names the missing
    verdict, never an authentication that succeeded (said so once of a wrong password at a load of 25)."""
    from streaming.cluster.connect_diagnosis import diagnose
    from streaming.vocabulary import client_config
    from streaming.vocabulary.errors import Unreachable

    server = HungServer()
    config_path = tmp_path / "client.properties"
    config_path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                           "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                           'username="admin" password="not-the-password";\n')
    try:
        found = diagnose(server.address, client_config.read_config(config_path), 2.0)
    finally:
        server.close()
    assert isinstance(found, Unreachable), found
    assert "authentication as user admin with SCRAM-SHA-512 had no verdict" in str(found), found
    assert "succeeded on a second attempt" not in str(found) and "not-the-password" not in str(found)
