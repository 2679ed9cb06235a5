"""What the job calls the cluster it watches: the `cluster` label of every metric and the `cluster` field of every
progress record (docs/metrics.md "The cluster label"), so that several clusters' series and records can stand side
by side in one Prometheus and one consumer.

The name is the fleet file's cluster name with `--clusters FILE --cluster NAME`, else `--cluster-name NAME`, else
the first address of `--bootstrap-server`: known before the cluster answers (a cluster that never answers still
has a name to say so under), the same on every restart, and different for any two clusters (two clusters never
share a broker's address). Kafka's cluster id is none of the first two: it is known only after a poll, and a
random string on a dashboard. Records carry it as well, as `cluster_id`.
"""

import re

CLUSTER = "cluster"  # the label's name and the record field's
# A name given by the operator (fleet file, --cluster-name): plain characters, as it lands in labels, log lines
# and Spark's application name.
NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
NAME_RULE = "1 to 64 ASCII letters, digits, '.', '_' or '-'"


def default_name(bootstrap_servers):
    """The name of a cluster nobody named: its first bootstrap address (`HOST:PORT`)."""
    return bootstrap_servers.split(",")[0].strip()


def name_of(named, bootstrap_servers):
    """The cluster's name: `named` (the fleet file's or --cluster-name's) when given, else the default."""
    return named or default_name(bootstrap_servers)
