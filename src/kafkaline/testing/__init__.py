"""Test helpers: a real Kafka-protocol broker on a loopback port.

>>> from kafkaline.testing import LocalBroker
>>> with LocalBroker() as broker:                            # doctest: +SKIP
...     broker.create_topic("events", partitions=6)
...     print(broker.bootstrap_servers)
127.0.0.1:40771

Several nodes in front of one broker (leaders, kills, NOT_LEADER_OR_FOLLOWER)::

>>> with LocalCluster(brokers=3) as cluster:                 # doctest: +SKIP
...     cluster.create_topic("events", partitions=6)
...     cluster.kill_node(2)

Importing this package starts nothing.
"""

from kafkaline.errors import BrokerBinaryNotFound
from kafkaline.testing.broker import STORAGE_KINDS, LocalBroker, TopicFactory, resolve_broker_bin
from kafkaline.testing.cluster import METADATA_SCOPES, LocalCluster
from kafkaline.testing.errors import (
    BrokerStartError,
    BrokerStartTimeoutError,
    LocalBrokerError,
    TopicCommandError,
)
from kafkaline.testing.fault_proxy import FaultProxy
from kafkaline.testing.read_committed import (
    CommittedLog,
    PartitionView,
    apply_read_committed,
    read_committed_log,
)
from kafkaline.testing.tls_terminator import (
    TestCertificates,
    TlsTerminator,
    make_test_certificates,
)

__all__ = [
    "METADATA_SCOPES",
    "STORAGE_KINDS",
    "BrokerBinaryNotFound",
    "BrokerStartError",
    "BrokerStartTimeoutError",
    "CommittedLog",
    "FaultProxy",
    "LocalBroker",
    "LocalBrokerError",
    "LocalCluster",
    "PartitionView",
    "TestCertificates",
    "TlsTerminator",
    "TopicCommandError",
    "TopicFactory",
    "apply_read_committed",
    "make_test_certificates",
    "read_committed_log",
    "resolve_broker_bin",
]
