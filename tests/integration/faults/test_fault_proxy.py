"""FaultProxy itself: forwards, injects each fault where asked, counts it, and leaves no
thread or socket behind."""

from __future__ import annotations

import os
import threading
import time

import pytest

from kafkaline.errors import ConfigError, CorrelationIdMismatchError, DecodeError
from kafkaline.protocol.api import ApiVersionsRequest, ApiVersionsResponse
from kafkaline.testing import LocalBroker
from kafkaline.testing.fault_proxy import (
    Corruption,
    CorruptResponse,
    Cut,
    CutPoint,
    DelayResponse,
    FaultProxy,
    Stall,
)
from kafkaline.testing.wire import BlockingConnection

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

API_VERSIONS = ApiVersionsRequest.API_KEY


def api_versions(conn: BlockingConnection) -> ApiVersionsResponse:
    return conn.request(ApiVersionsRequest(), 0, ApiVersionsResponse)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def proxy_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "fault-proxy" in t.name]


def test_forwards_and_cleans_up(broker: LocalBroker) -> None:
    fds_before = open_fds()
    with FaultProxy(upstream_port=broker.port) as proxy:
        connections = [BlockingConnection("127.0.0.1", proxy.port) for _ in range(3)]
        for conn in connections:
            assert api_versions(conn).error_code == 0
        assert proxy.connections_made == 3
        assert len(proxy_threads()) == 1 + 2 * 3  # the acceptor, two per connection
        # Connections still open at close() are closed by it (the clients see EOF).
        proxy.close()
        for conn in connections:
            with pytest.raises(OSError):
                api_versions(conn)
            conn.close()
    assert proxy_threads() == []
    assert open_fds() == fds_before
    assert proxy.injected == {}


def test_cuts_mid_request_and_before_response(broker: LocalBroker) -> None:
    with FaultProxy(upstream_port=broker.port) as proxy:
        for point in CutPoint:
            with BlockingConnection("127.0.0.1", proxy.port, timeout=5) as conn:
                api_versions(conn)
                proxy.inject(Cut(point, api_key=API_VERSIONS))
                with pytest.raises(ConnectionError):
                    api_versions(conn)
        assert proxy.injected == {"cut mid-request": 1, "cut before-response": 1}
        # Faults aimed at Produce leave other requests alone, and stay armed.
        proxy.inject(Cut(CutPoint.MID_REQUEST))
        with BlockingConnection("127.0.0.1", proxy.port, timeout=5) as conn:
            assert api_versions(conn).error_code == 0
        assert proxy.pending == 1


def test_delays_a_response_and_stalls_reads(broker: LocalBroker) -> None:
    with FaultProxy(upstream_port=broker.port) as proxy:
        with BlockingConnection("127.0.0.1", proxy.port, timeout=0.3) as conn:
            proxy.inject(DelayResponse(0.6, api_key=API_VERSIONS))
            with pytest.raises(TimeoutError):
                api_versions(conn)
        with BlockingConnection("127.0.0.1", proxy.port, timeout=5) as conn:
            proxy.inject(DelayResponse(0.4, api_key=API_VERSIONS))
            started = time.monotonic()
            api_versions(conn)  # late, but it arrives
            assert time.monotonic() - started >= 0.4
            proxy.inject(Stall(0.4))
            started = time.monotonic()
            api_versions(conn)
            assert time.monotonic() - started >= 0.3
        assert proxy.injected == {"delayed response": 2, "stalled reads": 1}


def test_a_response_fault_whose_connection_closes_first_is_armed_again(
    broker: LocalBroker,
) -> None:
    with FaultProxy(upstream_port=broker.port) as proxy:
        with BlockingConnection("127.0.0.1", proxy.port, timeout=5) as conn:
            # Two requests in flight: the first's response cuts the connection, so the
            # second's delayed response never comes back on it.
            proxy.inject(Cut(CutPoint.BEFORE_RESPONSE, api_key=API_VERSIONS))
            proxy.inject(DelayResponse(0.3, api_key=API_VERSIONS))
            conn.send_only(ApiVersionsRequest(), 0)
            conn.send_only(ApiVersionsRequest(), 0)
            with pytest.raises(ConnectionError):
                api_versions(conn)
        deadline = time.monotonic() + 5
        while proxy.pending != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proxy.pending == 1
        assert proxy.injected == {"cut before-response": 1}
        with BlockingConnection("127.0.0.1", proxy.port, timeout=5) as conn:
            started = time.monotonic()
            api_versions(conn)
            assert time.monotonic() - started >= 0.3
        assert proxy.injected == {"cut before-response": 1, "delayed response": 1}


@pytest.mark.parametrize(
    ("how", "error"),
    [
        (Corruption.TRUNCATED, DecodeError),
        (Corruption.TRAILING, DecodeError),
        (Corruption.WRONG_CORRELATION_ID, CorrelationIdMismatchError),
    ],
    ids=lambda value: value.value if isinstance(value, Corruption) else "",
)
def test_corrupts_a_response_the_client_then_cannot_decode(
    broker: LocalBroker, how: Corruption, error: type[Exception]
) -> None:
    with FaultProxy(upstream_port=broker.port) as proxy:
        with BlockingConnection("127.0.0.1", proxy.port, timeout=5) as conn:
            assert api_versions(conn).error_code == 0
            proxy.inject(CorruptResponse(how, api_key=API_VERSIONS))
            with pytest.raises(error):
                api_versions(conn)
        # Only that response: the next connection is served normally.
        with BlockingConnection("127.0.0.1", proxy.port, timeout=5) as conn:
            assert api_versions(conn).error_code == 0
        assert proxy.injected == {f"corrupt response {how.value}": 1}


def test_schedule_runs_in_order_and_close_stops_it(broker: LocalBroker) -> None:
    with FaultProxy(upstream_port=broker.port) as proxy:
        thread = proxy.start_schedule([(0.05, Stall(0.1)), (0.05, Stall(0.1))])
        thread.join(5)
        assert proxy.injected == {"stalled reads": 2}
        late = proxy.start_schedule([(30.0, Stall(0.1))])
    assert not late.is_alive()  # close() did not wait 30 s
    assert proxy.injected == {"stalled reads": 2}


def test_bad_fault_durations_are_refused() -> None:
    with pytest.raises(ConfigError):
        DelayResponse(0)
    with pytest.raises(ConfigError):
        Stall(-1)
