"""LocalCluster seen by independent clients: librdkafka (confluent-kafka) and kafka-python see
several brokers, a leader per partition with replicas and ISR, leaders that move when a node
is killed and come back when it starts; a node that does not lead a partition refuses Produce
with NOT_LEADER_OR_FOLLOWER and, at v10+, names the leader (KIP-951)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer

from kafkaline.errors import ConfigError
from kafkaline.protocol.api import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from kafkaline.protocol.api.produce import (
    PartitionProduceData,
    ProduceResponse,
    TopicProduceData,
)
from kafkaline.record import RecordBatchBuilder
from kafkaline.testing import LocalCluster
from kafkaline.testing.wire import BlockingConnection

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "cluster-events"
PARTITIONS = 6


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(brokers=3, log_dir=tmp_path_factory.mktemp("cluster")) as running:
        running.create_topic(TOPIC, partitions=PARTITIONS)
        yield running


def librdkafka_view(bootstrap: str) -> tuple[dict[int, int], dict[int, tuple[int, list[int]]]]:
    """Broker id -> port, and partition -> (leader, ISR), as librdkafka sees them."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10)
    brokers = {broker.id: broker.port for broker in metadata.brokers.values()}
    partitions = {
        index: (partition.leader, sorted(partition.isrs))
        for index, partition in metadata.topics[TOPIC].partitions.items()
    }
    return brokers, partitions


def test_librdkafka_sees_three_brokers_each_leading_its_partitions(cluster: LocalCluster) -> None:
    brokers, partitions = librdkafka_view(cluster.bootstrap_servers)
    assert brokers == {node: cluster.port(node) for node in (1, 2, 3)}
    assert partitions == {p: ([1, 2, 3][p % 3], [1, 2, 3]) for p in range(PARTITIONS)}
    metadata = AdminClient({"bootstrap.servers": cluster.address(2)}).list_topics(TOPIC)
    assert list(metadata.topics[TOPIC].partitions[1].replicas) == [2, 3, 1]


def test_a_killed_node_loses_its_partitions_and_gets_them_back(cluster: LocalCluster) -> None:
    cluster.kill_node(2)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", cluster.port(2)), timeout=2).close()
    brokers, partitions = librdkafka_view(cluster.address(1))
    assert sorted(brokers) == [1, 3]
    assert partitions[1] == (3, [1, 3])  # the next replica of partition 1: (2, 3, 1)
    assert partitions[4] == (3, [1, 3])
    assert partitions[0] == (1, [1, 3])
    cluster.start_node(2)
    brokers, partitions = librdkafka_view(cluster.address(2))
    assert sorted(brokers) == [1, 2, 3]
    assert partitions[1] == (2, [1, 2, 3])
    assert cluster.live_nodes == (1, 2, 3)


def test_independent_clients_write_through_every_node_and_read_one_log(
    cluster: LocalCluster,
) -> None:
    rdkafka = ConfluentProducer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for index in range(60):
        rdkafka.produce(TOPIC, b"rd-%d" % index, partition=index % PARTITIONS)
    assert rdkafka.flush(10) == 0
    kafka_python = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=0)
    try:
        futures = [
            kafka_python.send(TOPIC, b"kp-%d" % index, partition=index % PARTITIONS)
            for index in range(60)
        ]
        kafka_python.flush(10)
        assert all(future.get(10).offset >= 0 for future in futures)
    finally:
        kafka_python.close(5)
    assert cluster.refused_produce_requests == 0  # both found the leaders
    values = read_all(cluster, 120)
    assert sorted(values) == sorted(
        [b"rd-%d" % i for i in range(60)] + [b"kp-%d" % i for i in range(60)]
    )


def test_librdkafka_keeps_producing_while_a_node_dies(cluster: LocalCluster) -> None:
    rdkafka = ConfluentProducer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "linger.ms": 5,
            "enable.idempotence": True,  # exactly once, so the log can be compared exactly
        }
    )
    delivered: list[bytes] = []
    failed: list[str] = []

    def on_delivery(error: object, message: object) -> None:
        if error is None:
            delivered.append(message.value())  # type: ignore[attr-defined]
        else:
            failed.append(str(error))

    for index in range(2000):
        rdkafka.produce(TOPIC, b"%d" % index, partition=index % PARTITIONS, on_delivery=on_delivery)
        if index == 700:
            cluster.kill_node(3)
        rdkafka.poll(0)
        time.sleep(0.0005)
    assert rdkafka.flush(30) == 0
    assert failed == []
    assert len(delivered) == 2000
    assert sorted(read_all(cluster, 2000)) == sorted(b"%d" % i for i in range(2000))


def produce_to(
    cluster: LocalCluster, node: int, partition: int, version: int
) -> tuple[ProduceResponse, int]:
    builder = RecordBatchBuilder()
    builder.append(int(time.time() * 1000), None, b"raw")
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=TOPIC,
                partition_data=[PartitionProduceData(index=partition, records=builder.build())],
            )
        ],
    )
    with BlockingConnection("127.0.0.1", cluster.port(node)) as conn:
        metadata = conn.request(MetadataRequest(topics=None), 1, MetadataResponse)
        return conn.request(request, version, ProduceResponse), len(metadata.brokers)


def test_a_node_that_does_not_lead_refuses_produce_and_names_the_leader(
    cluster: LocalCluster,
) -> None:
    answer, brokers = produce_to(cluster, node=1, partition=1, version=11)
    assert brokers == 3
    (partition,) = answer.responses[0].partition_responses
    assert partition.error_code == 6  # NOT_LEADER_OR_FOLLOWER
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (2, 0)
    assert [(n.node_id, n.host, n.port) for n in answer.node_endpoints] == [
        (2, "127.0.0.1", cluster.port(2))
    ]
    # Before v10 the answer has no room for the hint.
    answer, _ = produce_to(cluster, node=1, partition=1, version=9)
    (partition,) = answer.responses[0].partition_responses
    assert partition.error_code == 6
    assert partition.current_leader.leader_id == -1
    assert answer.node_endpoints == []
    # The leader takes it.
    answer, _ = produce_to(cluster, node=2, partition=1, version=11)
    assert answer.responses[0].partition_responses[0].error_code == 0
    assert cluster.refused_by_node() == {1: 2}
    assert read_all(cluster, 1) == [b"raw"]


def test_a_request_for_partitions_of_several_leaders_is_split_by_the_node(
    cluster: LocalCluster,
) -> None:
    def batch(value: bytes) -> bytes:
        builder = RecordBatchBuilder()
        builder.append(int(time.time() * 1000), None, value)
        return builder.build()

    def request(acks: int) -> ProduceRequest:
        return ProduceRequest(
            acks=acks,
            timeout_ms=5000,
            topic_data=[
                TopicProduceData(
                    name=TOPIC,
                    partition_data=[
                        PartitionProduceData(index=p, records=batch(b"p%d-acks%d" % (p, acks)))
                        for p in (0, 1, 3)
                    ],
                )
            ],
        )

    with BlockingConnection("127.0.0.1", cluster.port(1)) as conn:
        conn.send_only(request(0), 11)  # acks=0: what node 1 leads is written, the rest dropped
        answer = conn.request(request(-1), 11, ProduceResponse)
    by_partition = {p.index: p for p in answer.responses[0].partition_responses}
    assert sorted(by_partition) == [0, 1, 3]
    assert by_partition[0].error_code == by_partition[3].error_code == 0
    assert by_partition[1].error_code == 6
    assert by_partition[1].current_leader.leader_id == 2
    assert [n.node_id for n in answer.node_endpoints] == [2]
    assert sorted(read_all(cluster, 4)) == [b"p0-acks-1", b"p0-acks0", b"p3-acks-1", b"p3-acks0"]
    assert cluster.refused_produce_requests == 2


def test_the_coordinator_is_a_live_node(cluster: LocalCluster) -> None:
    def coordinator(node: int, version: int) -> tuple[int, int]:
        with BlockingConnection("127.0.0.1", cluster.port(node)) as conn:
            if version < 4:
                answer = conn.request(
                    FindCoordinatorRequest(key="group", key_type=0),
                    version,
                    FindCoordinatorResponse,
                )
                return answer.node_id, answer.port
            answer = conn.request(
                FindCoordinatorRequest(key_type=0, coordinator_keys=["group"]),
                version,
                FindCoordinatorResponse,
            )
            (item,) = answer.coordinators
            return item.node_id, item.port

    assert coordinator(2, 3) == (1, cluster.port(1))
    assert coordinator(3, 4) == (1, cluster.port(1))
    cluster.kill_node(1)
    assert coordinator(3, 4) == (2, cluster.port(2))


def test_each_node_names_only_itself_in_self_scope(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with LocalCluster(
        brokers=2, metadata_scope="self", log_dir=tmp_path_factory.mktemp("self-scope")
    ) as cluster:
        cluster.create_topic(TOPIC, partitions=2)
        for node in (1, 2):
            brokers, partitions = librdkafka_view(cluster.address(node))
            assert brokers == {node: cluster.port(node)}
            assert partitions == {0: (node, [node]), 1: (node, [node])}
        answer, _ = produce_to(cluster, node=1, partition=1, version=11)
        assert answer.responses[0].partition_responses[0].error_code == 0


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ConfigError, match="brokers=0"):
        LocalCluster(brokers=0)
    with pytest.raises(ConfigError, match="metadata_scope='all'"):
        LocalCluster(metadata_scope="all")
    cluster = LocalCluster(brokers=2)
    try:
        with pytest.raises(ConfigError, match="node 5 is not in the cluster"):
            cluster.kill_node(5)
    finally:
        cluster.close()


def read_all(cluster: LocalCluster, count: int, partitions: int = PARTITIONS) -> list[bytes]:
    """Every value of the topic, read by librdkafka through the cluster (assign, not
    subscribe: group joins are slow on this broker)."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "unused",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
        return values
    finally:
        consumer.close()
