"""Foreign exceptions become KafkaConnectionErrors naming the broker, without a network."""

from __future__ import annotations

import socket

import pytest

from kafkaline.errors import KafkaConnectionError
from kafkaline.net.transport import ResolvedAddress, resolve_broker_address


def test_resolution_failure_names_host_and_port(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> object:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(
        KafkaConnectionError, match="cannot resolve broker address nohost:9092"
    ) as caught:
        resolve_broker_address("nohost", 9092)
    assert isinstance(caught.value.__cause__, socket.gaierror)
    assert isinstance(caught.value, ConnectionError) and caught.value.retriable


def test_resolution_keeps_the_resolvers_order(monkeypatch: pytest.MonkeyPatch) -> None:
    infos = [
        (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", 9092, 0, 0)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 9092)),
    ]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: infos)
    addresses = resolve_broker_address("localhost", 9092)
    assert addresses == [
        ResolvedAddress(socket.AF_INET6, ("::1", 9092, 0, 0)),
        ResolvedAddress(socket.AF_INET, ("127.0.0.1", 9092)),
    ]
    assert [str(address) for address in addresses] == ["[::1]:9092", "127.0.0.1:9092"]
