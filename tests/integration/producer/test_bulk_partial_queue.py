"""send_batch() and send_arrow() that run out of buffer memory part way (issue 16, item 6):
the BufferExhaustedError says which of the call's records were queued, as ``queued`` (input
index -> future). The broker is frozen (SIGSTOP) so that nothing frees memory during the call;
after it thaws, every queued future completes, and the log holds exactly the queued records."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest

from kafkaline import BatchSendResult, BufferExhaustedError, Producer
from kafkaline.testing import LocalBroker
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

COUNT = 20_000
PARTITIONS = 3


@pytest.fixture(scope="module")
def frozen_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A broker of this module's own: it is paused on purpose."""
    with LocalBroker(log_dir=tmp_path_factory.mktemp("bulk-partial-broker")) as broker:
        yield broker


def values() -> list[bytes]:
    return [b"%06d" % i + bytes(94) for i in range(COUNT)]


def keys() -> list[bytes]:
    return [b"key-%d" % (i % 97) for i in range(COUNT)]


CALLS: dict[str, Callable[[Producer, str], BatchSendResult]] = {
    "send_batch-keyed": lambda p, t: p.send_batch(t, values(), keys=keys()),
    "send_batch-keyless": lambda p, t: p.send_batch(t, values()),
    "send_batch-headers": lambda p, t: p.send_batch(
        t, values(), keys=keys(), headers=[[("h", b"1")]] * COUNT
    ),
    "send_arrow": lambda p, t: p.send_arrow(t, pa.record_batch({"key": keys(), "value": values()})),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_bulk_call_out_of_memory_part_way_says_which_records_it_queued(
    frozen_broker: LocalBroker, call: str
) -> None:
    topic = f"bulk-partial-{call.replace('_', '-')}"
    frozen_broker.create_topic(topic, partitions=PARTITIONS)
    with Producer(
        bootstrap_servers=frozen_broker.bootstrap_servers,
        buffer_memory=300_000,
        batch_size=16_384,
        max_block_ms=300,
        request_timeout_ms=5_000,
    ) as producer:
        producer.send(topic, b"warm-up").get(10)  # metadata known, producer id taken
        frozen_broker.pause()
        try:
            with pytest.raises(BufferExhaustedError) as raised:
                CALLS[call](producer, topic)
        finally:
            frozen_broker.resume()
        queued = raised.value.queued
        assert 0 < len(queued) < COUNT
        assert f"{len(queued)} of {COUNT} records of this call were queued" in str(raised.value)
        producer.flush(30)
        for index, future in queued.items():
            metadata = future.get(0)
            assert metadata.topic == topic and metadata.offset >= 0, index
    with BlockingConnection(frozen_broker.host, frozen_broker.port) as conn:
        version = negotiate_versions(conn)[1]
        logged = [
            record.value
            for partition in range(PARTITIONS)
            for batch in fetch_partition(conn, topic, partition, version, max_wait_ms=50)
            for record in batch.records
            if record.value != b"warm-up"
        ]
    assert len(logged) == len(set(logged))
    # Exactly the records the error named as queued are in the log, no others.
    assert {int(value[:6]) for value in logged if value is not None} == set(queued)
