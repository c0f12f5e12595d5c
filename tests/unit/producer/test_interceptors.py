"""The interceptor chain: order, and errors logged and skipped as in Java."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest

from kafkaline.producer.interceptors import InterceptorChain, ProducerInterceptor
from kafkaline.producer.record import ProducerRecord
from kafkaline.producer.record_metadata import RecordMetadata

Record = ProducerRecord[Any, Any]


class Tagging:
    """Appends a header naming itself; records acknowledgements and close()."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.acknowledged: list[tuple[RecordMetadata, BaseException | None]] = []
        self.closed = False

    def on_send(self, record: Record) -> Record:
        return dataclasses.replace(record, headers=(*record.headers, (self.name, None)))

    def on_acknowledgement(self, metadata: RecordMetadata, exception: BaseException | None) -> None:
        self.acknowledged.append((metadata, exception))

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"Tagging({self.name!r})"


class Failing:
    def on_send(self, record: Record) -> Record:
        raise RuntimeError("on_send broke")

    def on_acknowledgement(self, metadata: RecordMetadata, exception: BaseException | None) -> None:
        raise RuntimeError("on_acknowledgement broke")

    def close(self) -> None:
        raise RuntimeError("close broke")

    def __repr__(self) -> str:
        return "Failing()"


class ReturnsNone:
    def on_send(self, record: Record) -> Record:
        return None  # type: ignore[return-value]

    def on_acknowledgement(self, metadata: RecordMetadata, exception: BaseException | None) -> None:
        pass

    def close(self) -> None:
        pass


RECORD: Record = ProducerRecord("events", b"v", partition=1)
METADATA = RecordMetadata("events", 1, 7, 1000, -1, 1)


def header_names(record: Record) -> list[str]:
    return [name for name, _ in record.headers]


def test_interceptors_run_in_order() -> None:
    first, second = Tagging("first"), Tagging("second")
    chain = InterceptorChain([first, second])
    assert header_names(chain.on_send(RECORD)) == ["first", "second"]
    assert isinstance(first, ProducerInterceptor)
    assert bool(chain) and len(chain) == 2
    assert not InterceptorChain()


def test_a_raising_on_send_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    chain = InterceptorChain([Tagging("first"), Failing(), Tagging("last")])
    with caplog.at_level(logging.WARNING, logger="kafkaline.producer.interceptors"):
        result = chain.on_send(RECORD)
    assert header_names(result) == ["first", "last"]
    (entry,) = caplog.records
    assert entry.levelno == logging.WARNING
    assert "Failing() raised in on_send (topic 'events', partition 1)" in entry.getMessage()
    assert entry.exc_info is not None and "on_send broke" in str(entry.exc_info[1])


def test_an_on_send_that_returns_no_record_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    chain = InterceptorChain([ReturnsNone(), Tagging("last")])
    with caplog.at_level(logging.WARNING, logger="kafkaline.producer.interceptors"):
        result = chain.on_send(RECORD)
    assert header_names(result) == ["last"]
    assert "returned NoneType from on_send, not a ProducerRecord" in caplog.text


def test_a_raising_on_acknowledgement_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    before, after = Tagging("before"), Tagging("after")
    chain = InterceptorChain([before, Failing(), after])
    error = TimeoutError("late")
    with caplog.at_level(logging.WARNING, logger="kafkaline.producer.interceptors"):
        chain.on_acknowledgement(METADATA, None)
        chain.on_acknowledgement(METADATA, error)
    assert before.acknowledged == after.acknowledged == [(METADATA, None), (METADATA, error)]
    assert caplog.text.count("Failing() raised in on_acknowledgement") == 2


def test_on_send_error_acknowledges_with_what_is_known() -> None:
    seen = Tagging("seen")
    chain = InterceptorChain([seen])
    error = ValueError("bad")
    chain.on_send_error(ProducerRecord("events", b"v"), None, error)
    chain.on_send_error(ProducerRecord("events", b"v"), 4, error)
    chain.on_send_error(RECORD, None, error)
    assert seen.acknowledged == [
        (RecordMetadata("events", -1, -1, -1, -1, -1), error),
        (RecordMetadata("events", 4, -1, -1, -1, -1), error),
        (RecordMetadata("events", 1, -1, -1, -1, -1), error),
    ]


def test_close_closes_every_interceptor_despite_failures(caplog: pytest.LogCaptureFixture) -> None:
    first, last = Tagging("first"), Tagging("last")

    class WithoutClose:
        def on_send(self, record: Record) -> Record:
            return record

        def on_acknowledgement(
            self, metadata: RecordMetadata, exception: BaseException | None
        ) -> None:
            pass

    chain = InterceptorChain([first, Failing(), WithoutClose(), last])  # type: ignore[list-item]
    with caplog.at_level(logging.ERROR, logger="kafkaline.producer.interceptors"):
        chain.close()
    assert first.closed and last.closed
    assert "Failing() raised in close()" in caplog.text


def test_keyboard_interrupt_is_not_swallowed() -> None:
    class Interrupting(Tagging):
        def on_send(self, record: Record) -> Record:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        InterceptorChain([Interrupting("x")]).on_send(RECORD)
