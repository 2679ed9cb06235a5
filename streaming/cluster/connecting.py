"""How the door's kafka-python clients connect: every connection is set up within the request deadline, the
bootstrap's included, and a bootstrap server that failed is not picked again while another is left.

kafka-python bootstraps from a bootstrap server picked at random and gives that one connection what is left of the
whole bootstrap budget (`bootstrap_timeout_ms`: 0.7 of --timeout for the door's first client); the request deadline it
is configured with only bounds the connections it opens later. A broker that hangs (SIGSTOP: its kernel accepts the
connection, nothing answers) then took the whole budget whenever it was picked, and the client was not made. A door
is made while a broker hangs whenever a Spark worker polls for the first time (each worker process has its own door,
and Spark replaces idle workers), and that poll failed whole ("batch N: poll failed: DescribeCluster: connecting to
...: no usable answer within the timeout"), so the batch that should have shown the stopped broker's replicas
BROKER_OFFLINE one trigger after Kafka fenced it showed nothing (tests/test_faults_stop_cluster.py, issue 28).
Bounded, a bootstrap server that does not answer costs one request deadline and the next pick goes to another one;
refused connections and the pacing of attempts stay kafka-python's. Measured while one of three brokers was
SIGSTOPped: before, 11 of 29 new doors could not connect, each after --timeout, during the stop and after the fence
alike; bounded, none of 37, the slowest connect one deadline (bench/RESULTS.md "A new door while a node hangs").

`bounded_client` is the `kafka_client` both KafkaAdminClient and KafkaConsumer take: they call it for their network
client before they bootstrap, so the bounds hold from the first connection on.
"""


def candidates(brokers, failed):
    """The bootstrap brokers kafka-python picks its next bootstrap server from: those whose node id is not in
    `failed` (a connection refused or lapsed, or a Metadata unanswered, in this client), or all of them once every one
    has failed (kafka-python's reconnect backoff then paces the attempts, as it did before)."""
    untried = [broker for broker in brokers if broker.node_id not in failed]
    return untried or list(brokers)


def bounded_client(deadline_ms):
    """A `kafka_client` for KafkaAdminClient and KafkaConsumer: kafka-python's network client, each of its connections
    set up within `deadline_ms` (TCP, ApiVersions, SASL), and its bootstrap servers picked from `candidates`."""
    from kafka.net.compat import KafkaNetClient

    def made(**configs):
        client = KafkaNetClient(**configs)
        _bound(client._manager, deadline_ms)
        return client
    return made


def _bound(manager, deadline_ms):
    # kafka-python's own default is 10 s, growing to 30 s: requests made while a connection is set up wait for it.
    manager.config["socket_connection_setup_timeout_ms"] = deadline_ms
    manager.config["socket_connection_setup_timeout_max_ms"] = deadline_ms
    failed = set()
    get_connection, update_backoff = manager.get_connection, manager.update_backoff
    bootstrap_brokers = manager.cluster.bootstrap_brokers

    def bounded_get_connection(node_id, timeout_ms=None, **options):
        # The bootstrap passes what is left of its whole budget; other connections pass nothing and get the setting.
        return get_connection(node_id, timeout_ms=None if timeout_ms is None else min(timeout_ms, deadline_ms),
                              **options)

    def noting_update_backoff(node_id):
        # Every failed bootstrap attempt passes here: a connection refused or lapsed, a Metadata unanswered or empty.
        if manager.cluster.is_bootstrap(node_id):
            failed.add(node_id)
        return update_backoff(node_id)

    manager.get_connection = bounded_get_connection
    manager.update_backoff = noting_update_backoff
    manager.cluster.bootstrap_brokers = lambda: candidates(bootstrap_brokers(), failed)
