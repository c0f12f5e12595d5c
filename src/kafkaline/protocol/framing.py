"""The client side of a Kafka connection as a sans-I/O state machine, in the style of h11.

Feed it requests and bytes; it hands back bytes to write and decoded responses. It never
touches a socket, a thread or a clock::

    protocol = ClientProtocol("my-client")
    sock.sendall(protocol.send(MetadataRequest(topics=None), version=12))
    while (item := protocol.next_response()) is None:
        protocol.receive_data(sock.recv(65536))
    correlation_id, metadata = item

Frame layout, both directions: ``int32 size`` then ``size`` bytes of header + body (see
:mod:`kafkaline.protocol.headers`). Kafka answers the requests of one connection in the order
it received them, so each response must carry the correlation id of the oldest request still
waiting; anything else means the stream is out of step and the connection must be closed.
Requests that get no response (Produce with acks=0) are never waited for; if a broker answers
one anyway (Tansu 0.6 does), the answer is dropped.

After :meth:`ClientProtocol.next_response` raises, the object is unusable: every later call
raises a :class:`~kafkaline.errors.ProtocolError` too, and the connection must be closed.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import NamedTuple, TypeVar

from kafkaline.errors import (
    CorrelationIdMismatchError,
    InvalidFrameSizeError,
    ProtocolError,
)
from kafkaline.protocol.headers import ResponseHeader, response_header_version
from kafkaline.protocol.primitives import (
    Buffer,
    Reader,
    ScatterFrame,
    write_nullable_string,
)
from kafkaline.protocol.schema import (
    BodyWriter,
    CompiledStruct,
    Request,
    Response,
    compile_struct,
    read_message,
)

#: Largest response frame accepted by default (librdkafka's receive.message.max.bytes default
#: is 100 MB; a Fetch response is bounded by the request's max_bytes anyway).
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_SIZE = _INT32 = struct.Struct(">i")
# size, request_api_key, request_api_version, correlation_id
_SIZE_AND_HEADER = struct.Struct(">ihhi")
_MAX_CORRELATION_ID = 0x7FFF_FFFF
_MAX_UNANSWERED_REMEMBERED = 10_000
_Frame = TypeVar("_Frame", bound=bytearray)


class InFlightRequest(NamedTuple):
    """A request sent and waiting for its response."""

    correlation_id: int
    api_key: int
    version: int
    response_type: type[Response]
    #: False for Produce with acks=0: Kafka sends nothing back.
    expects_response: bool


_NOTHING_SENT = InFlightRequest(-1, -1, -1, Response, False)


class ClientProtocol:
    """Frames requests and parses responses for one connection.

    ``client_id`` goes into every request header. ``max_frame_size`` bounds the size a response
    frame may announce; a larger (or negative) size raises
    :class:`~kafkaline.errors.InvalidFrameSizeError` before anything is allocated.
    """

    __slots__ = (
        "_buffer",
        "_encoded_client_id",
        "_error",
        "_in_flight",
        "_last_correlation_id",
        "_max_frame_size",
        "_next_correlation_id",
        "last_sent",
    )

    def __init__(
        self,
        client_id: str | None,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        first_correlation_id: int = 0,
    ) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        if not 0 <= first_correlation_id <= _MAX_CORRELATION_ID:
            raise ValueError(f"first_correlation_id out of range: {first_correlation_id}")
        client_id_bytes = bytearray()
        write_nullable_string(client_id_bytes, client_id)  # never compact, even in header v2
        self._encoded_client_id = bytes(client_id_bytes)
        self._max_frame_size = max_frame_size
        self._next_correlation_id = first_correlation_id
        self._last_correlation_id = -1
        #: The request :meth:`send` or :meth:`send_buffers` framed last (a placeholder with
        #: correlation id -1 before the first): its caller reads it rather than ask the
        #: request again whether it expects a response.
        self.last_sent = _NOTHING_SENT
        self._in_flight: deque[InFlightRequest] = deque()
        self._buffer = bytearray()
        self._error: ProtocolError | None = None

    # ----------------------------------------------------------------------- state

    @property
    def last_correlation_id(self) -> int:
        """The correlation id given to the most recent :meth:`send` (-1 before the first)."""
        return self._last_correlation_id

    @property
    def in_flight(self) -> tuple[InFlightRequest, ...]:
        """Requests sent whose responses have not been returned yet, oldest first (including
        recent ones that expect no response)."""
        return tuple(self._in_flight)

    @property
    def awaiting_responses(self) -> int:
        """How many sent requests still expect a response."""
        return sum(1 for request in self._in_flight if request.expects_response)

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as a response (a partial frame, or more)."""
        return len(self._buffer)

    # Callers test self._error first and call this only to raise: it runs up to four times
    # per request, and a Python call each was a measurable part of a one-record round trip.
    def _check_usable(self) -> None:
        if self._error is not None:
            raise ProtocolError(f"connection is unusable after an earlier error: {self._error}")

    def _fail(self, error: ProtocolError) -> ProtocolError:
        self._error = error
        return error

    # ----------------------------------------------------------------------- sending

    def send(self, request: Request, version: int) -> bytearray:
        """Frame ``request`` at ``version``: size, header (with a fresh correlation id), body.

        Returns the bytes to write, as one buffer (record bytes are copied into it once).
        If the request expects a response, it is remembered so the response can be decoded.
        Raises :class:`~kafkaline.errors.EncodeError` if the request cannot be encoded at
        ``version``; nothing is remembered then.
        """
        frame = self._frame(request, version, bytearray())
        _SIZE.pack_into(frame, 0, len(frame) - 4)
        self._remember(request, version)
        return frame

    def send_buffers(self, request: Request, version: int) -> list[memoryview]:
        """:meth:`send`, as buffers to write one after the other (``socket.sendmsg``): record
        sets of at least :data:`~kafkaline.protocol.primitives.SCATTER_MIN_BYTES` are
        referenced, not copied into the frame (the caller must not change them until they
        are written). A request without such records is one buffer: copying large batches
        into a fresh frame cost visible CPU in memcpy and page faults
        (see docs/performance.md, Notes moved from the code)."""
        # _frame(), written out: once per request (see it for the header).
        if self._error is not None:
            self._check_usable()  # raises
        frame = ScatterFrame(
            _SIZE_AND_HEADER.pack(0, request.API_KEY, version, self._next_correlation_id)
        )
        frame += self._encoded_client_id
        encoder = _ENCODERS.get((type(request), version))
        if encoder is None:
            encoder = _encoder_for(request, version)  # raises EncodeError for a bad version
        if encoder.flexible:
            frame.append(0)  # request header v2: no tagged fields
        encoder.body.write(frame, request)
        deferred = frame.deferred
        # A list, not a generator: one Python call per request rather than one per batch.
        _SIZE.pack_into(frame, 0, len(frame) - 4 + sum([len(data) for _, data in deferred]))
        self._remember(request, version)
        whole = memoryview(frame)
        if not deferred:
            return [whole]
        buffers: list[memoryview] = []
        start = 0
        for position, data in deferred:
            if position > start:
                buffers.append(whole[start:position])
            # A view of our own (never the caller's, which the writer releases when done),
            # counted in bytes.
            view = memoryview(data)
            buffers.append(view if view.format == "B" and view.ndim == 1 else view.cast("B"))
            start = position
        if start < len(frame):  # no empty buffer: a writer would wait for it forever
            buffers.append(whole[start:])
        return buffers

    def _frame(self, request: Request, version: int, frame: _Frame) -> _Frame:
        """Encode the size (0: patched by the caller), header and body into ``frame``."""
        if self._error is not None:
            self._check_usable()  # raises
        # The header is written by hand from the pre-encoded client id (RequestHeader
        # declares the same layout; a test checks they agree), which halves the per-request
        # framing cost.
        frame.extend(_SIZE_AND_HEADER.pack(0, request.API_KEY, version, self._next_correlation_id))
        frame.extend(self._encoded_client_id)
        encoder = _ENCODERS.get((type(request), version))
        if encoder is None:
            encoder = _encoder_for(request, version)  # raises EncodeError for a bad version
        if encoder.flexible:
            frame.append(0)  # request header v2: no tagged fields
        encoder.body.write(frame, request)
        return frame

    def _remember(self, request: Request, version: int) -> None:
        correlation_id = self._next_correlation_id
        self._last_correlation_id = correlation_id
        self._next_correlation_id = (
            0 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        )
        sent = InFlightRequest(
            correlation_id, request.API_KEY, version, request.RESPONSE_TYPE, request.has_response()
        )
        self.last_sent = sent
        in_flight = self._in_flight
        in_flight.append(sent)
        # Requests that expect no response are remembered only so that a broker that answers
        # them anyway (Tansu) does not break the stream; bound how many are kept.
        while len(in_flight) > _MAX_UNANSWERED_REMEMBERED and not in_flight[0].expects_response:
            in_flight.popleft()

    # ----------------------------------------------------------------------- receiving

    def receive_data(self, data: Buffer) -> None:
        """Add bytes read from the connection (any amount: partial or several frames)."""
        if self._error is not None:
            self._check_usable()  # raises
        self._buffer += data

    def next_response(self) -> tuple[int, Response] | None:
        """The next complete response as ``(correlation_id, response)``, or None if more bytes
        are needed.

        Raises :class:`~kafkaline.errors.InvalidFrameSizeError` for a negative or too large
        frame size, :class:`~kafkaline.errors.CorrelationIdMismatchError` for a response to no
        request or to another request than the oldest in flight, and
        :class:`~kafkaline.errors.DecodeError` for a body that does not decode.
        """
        if self._error is not None:
            self._check_usable()  # raises
        buffer = self._buffer
        while True:
            # The next frame, cut from the buffer here rather than in a method of its own:
            # the connection asks until there is none, once more per read than there are
            # responses.
            if len(buffer) < 4:
                return None
            size: int = _SIZE.unpack_from(buffer, 0)[0]
            if size < 0 or size > self._max_frame_size:
                raise self._fail(
                    InvalidFrameSizeError(
                        f"response frame size {size} is outside 0..{self._max_frame_size}"
                    )
                )
            if len(buffer) < 4 + size:
                return None
            with memoryview(buffer) as view:
                frame = view[4 : 4 + size].tobytes()  # one copy; released before the del
            # Deleting from the front of a bytearray is cheap in CPython (it moves a start
            # index).
            del buffer[: 4 + size]
            try:
                result = self._decode_frame(frame)
            except ProtocolError as error:
                raise self._fail(error) from None
            if result is not None:
                return result
            # That frame answered a request that expected no answer; it was dropped.

    def _decode_frame(self, frame: bytes) -> tuple[int, Response] | None:
        # Every response header version starts with the correlation id.
        if len(frame) < 4:
            Reader(frame).int32()  # raises the DecodeError naming the truncation
        correlation_id: int = _INT32.unpack_from(frame, 0)[0]
        in_flight = self._in_flight
        # Requests that expect no response (acks=0) and are older than this one were, as Kafka
        # specifies, not answered: forget them.
        while (
            in_flight
            and not in_flight[0].expects_response
            and in_flight[0].correlation_id != correlation_id
        ):
            in_flight.popleft()
        if not in_flight:
            raise CorrelationIdMismatchError(
                f"received a response with correlation id {correlation_id} "
                "but no request is waiting for one"
            )
        expected = in_flight[0]
        if correlation_id != expected.correlation_id:
            raise CorrelationIdMismatchError(
                f"response has correlation id {correlation_id}, expected "
                f"{expected.correlation_id} ({expected.response_type.__name__} "
                f"v{expected.version})"
            )
        in_flight.popleft()
        if not expected.expects_response:
            # Kafka never answers acks=0 Produce, but Tansu 0.6 does: drop the answer.
            return None
        response_type = expected.response_type
        version = expected.version
        decoder = _DECODERS.get((response_type, version))
        if decoder is None:
            decoder = _decoder_for(expected.api_key, response_type, version)
        if decoder.header_version == 0:
            body_start = 4  # header v0: the correlation id only
        elif len(frame) > 4 and frame[4] == 0:
            body_start = 5  # header v1 without tagged fields, as brokers send it
        else:
            header_reader = Reader(frame)
            read_message(ResponseHeader, header_reader, 1)
            body_start = header_reader.position
        if decoder.body is None:
            # The class's own decode() (see _Decoder), given bytes: the classes that have one
            # (Produce, ApiVersions) have short answers, and their fast paths read bytes
            # without the buffer protocol's view objects.
            return correlation_id, response_type.decode(frame[body_start:], version)
        reader = Reader(memoryview(frame)[body_start:])
        response: Response = decoder.body.read(reader)
        reader.expect_end(f"{response_type.__name__} v{version}")
        return correlation_id, response


# Per (message class, version): what framing needs to know, worked out once. Message.encode_into and
# Message.decode check the version against the class's ranges on every call (four range tests per
# round trip) and look up the compiled schema. With these caches and the response header read by
# hand, framing a ProduceRequest and decoding its response takes fewer Python calls (see
# docs/performance.md, Notes moved from the code). Schemas are constants, so these only cache pure
# results; a race between threads at worst computes an entry twice.


class _Encoder(NamedTuple):
    flexible: bool
    body: BodyWriter


class _Decoder(NamedTuple):
    header_version: int
    #: None where the class's own decode() must run: a version it does not implement (it
    #: raises the DecodeError) or a class that overrides decode().
    body: CompiledStruct | None


_GENERIC_DECODE = getattr(Response.decode, "__func__", None)


_ENCODERS: dict[tuple[type[Request], int], _Encoder] = {}
_DECODERS: dict[tuple[type[Response], int], _Decoder] = {}


def _encoder_for(request: Request, version: int) -> _Encoder:
    request_type = type(request)
    if version not in request_type.VALID_VERSIONS:
        request.encode_into(bytearray(), version)  # raises the EncodeError naming the range
    flexible = request_type.is_flexible(version)
    # A request class may bring a hand-written body writer for its hot versions
    # (ProduceRequest.body_writer); the compiled schema otherwise.
    body_writer = getattr(request_type, "body_writer", None)
    body: BodyWriter = (
        compile_struct(request_type, version, flexible)
        if body_writer is None
        else body_writer(version)
    )
    encoder = _Encoder(flexible, body)
    return _ENCODERS.setdefault((request_type, version), encoder)


def _decoder_for(api_key: int, response_type: type[Response], version: int) -> _Decoder:
    flexible = response_type.is_flexible(version)
    body = (
        compile_struct(response_type, version, flexible)
        if version in response_type.VALID_VERSIONS
        # A class with its own decode() (ApiVersionsResponse falls back to v0) keeps it.
        and getattr(response_type.decode, "__func__", None) is _GENERIC_DECODE
        else None
    )
    decoder = _Decoder(response_header_version(api_key, flexible), body)
    return _DECODERS.setdefault((response_type, version), decoder)
