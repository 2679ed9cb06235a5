import os
from pathlib import Path

import pytest

from tests.cluster_cli import cancel_everything, clear_broker_throttles
from tests.kafka_fixtures import ROOT, LocalCluster


@pytest.fixture(scope="session")
def cluster():
    """One real three-node cluster for the whole session. Its own directory and ports (overridable
    with TEST_CLUSTER_DIR / TEST_KAFKA_BASE_PORT) so a running demo cluster is never touched; stopped
    at the end when this session started it."""
    cluster_dir = Path(os.environ.get("TEST_CLUSTER_DIR", ROOT / ".local-cluster" / "test"))
    local = LocalCluster(cluster_dir, int(os.environ.get("TEST_KAFKA_BASE_PORT", "29090"))).up()
    yield local
    local.down()


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
