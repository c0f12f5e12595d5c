"""Produce (API key 0): write record batches to partition leaders.

kafkaline implements v3+ only: v3 is the first version that carries record batch v2.

    ProduceRequest v3-8                     v9+ (flexible): compact strings/arrays/bytes,
      transactional_id   nullable string     tagged fields after every struct
      acks               int16
      timeout_ms         int32
      topic_data         [TopicProduceData]
        name             string
        partition_data   [PartitionProduceData]
          index          int32
          records        nullable bytes (one or more record batches, see kafkaline.record)

    ProduceResponse v3+
      responses          [TopicProduceResponse]
        name             string
        partition_responses [PartitionProduceResponse]
          index, error_code, base_offset, log_append_time_ms, log_start_offset (v5+),
          record_errors (v8+), error_message (v8+), current_leader (tag 0, v10+)
      throttle_time_ms   int32
      node_endpoints     [NodeEndpoint] (tag 0, v10+)

A request with ``acks=0`` gets no response at all.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence

from kafkaline.errors import EncodeError
from kafkaline.protocol.primitives import (
    SCATTER_MIN_BYTES,
    Buffer,
    Reader,
    ScatterFrame,
    write_unsigned_varint,
)
from kafkaline.protocol.schema import (
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    CompiledStruct,
    Records,
    Request,
    Response,
    Struct,
    Versions,
    WriteFn,
    array_of,
    compile_struct,
    decode_message,
    kafka_field,
    struct_of,
)

# --------------------------------------------------------------------------- response


class BatchIndexAndErrorMessage(Struct):
    """A record that made the broker drop the whole batch (v8+)."""

    batch_index: int = kafka_field(INT32, "8+")
    batch_index_error_message: str | None = kafka_field(STRING, "8+", nullable="8+", default=None)


class LeaderIdAndEpoch(Struct):
    """The partition's current leader, sent with NOT_LEADER_OR_FOLLOWER (KIP-951)."""

    leader_id: int = kafka_field(INT32, "10+", default=-1)
    leader_epoch: int = kafka_field(INT32, "10+", default=-1)


class PartitionProduceResponse(Struct):
    """The outcome of producing to one partition."""

    index: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "0+")
    base_offset: int = kafka_field(INT64, "0+")
    log_append_time_ms: int = kafka_field(INT64, "2+", default=-1)
    log_start_offset: int = kafka_field(INT64, "5+", default=-1)
    record_errors: list[BatchIndexAndErrorMessage] = kafka_field(
        array_of(BatchIndexAndErrorMessage), "8+"
    )
    error_message: str | None = kafka_field(STRING, "8+", nullable="8+", default=None)
    current_leader: LeaderIdAndEpoch = kafka_field(
        struct_of(LeaderIdAndEpoch), "10+", tagged="10+", tag=0
    )


class TopicProduceResponse(Struct):
    """The outcomes for one topic."""

    name: str = kafka_field(STRING, "0+")
    partition_responses: list[PartitionProduceResponse] = kafka_field(
        array_of(PartitionProduceResponse), "0+"
    )


class NodeEndpoint(Struct):
    """Where to reach a new leader named in ``current_leader`` (KIP-951)."""

    node_id: int = kafka_field(INT32, "10+")
    host: str = kafka_field(STRING, "10+")
    port: int = kafka_field(INT32, "10+")
    rack: str | None = kafka_field(STRING, "10+", nullable="10+", default=None)


class ProduceResponse(Response):
    """The broker's answer to a ProduceRequest with acks != 0."""

    API_KEY = 0
    VALID_VERSIONS = Versions.parse("3-11")
    FLEXIBLE_VERSIONS = Versions.parse("9+")

    responses: list[TopicProduceResponse] = kafka_field(array_of(TopicProduceResponse), "0+")
    throttle_time_ms: int = kafka_field(INT32, "1+", default=0)
    node_endpoints: list[NodeEndpoint] = kafka_field(
        array_of(NodeEndpoint), "10+", tagged="10+", tag=0
    )

    @classmethod
    def decode(cls, data: Buffer, version: int) -> ProduceResponse:
        """Decode a body at ``version`` (see :meth:`Message.decode
        <kafkaline.protocol.schema.Message.decode>`).

        Flexible versions (v9+) in their usual shape (no errors listed per record, no error
        message, no tagged fields, every count and the topic name's length in at most three
        varint bytes) are read by hand; anything else by the generic decoder, which also names what
        is wrong with a malformed body. Both give equal objects (a test checks).
        """
        # Records sent one at a time and each waited for (linger 0): the generic walk makes several
        # times more Python calls per response (see docs/performance.md, Notes moved from the code).
        if version >= 9:
            compiled = _COMPILED_DECODE
            fast = (
                _decode_usual_flexible(data)
                if compiled is None
                else compiled(
                    data,
                    ProduceResponse,
                    TopicProduceResponse,
                    PartitionProduceResponse,
                    LeaderIdAndEpoch,
                )
            )
            if fast is not None:
                return fast
        return decode_message(cls, Reader(data), version)


# The fast path makes its objects with object.__new__ and sets every field itself: calling a class
# with keywords gathers them into a dict first (Python 3.11), and the dataclass's own __init__ is a
# call more per object, and for a partition two more making the tagged field's default
# (LeaderIdAndEpoch) (see docs/performance.md, Notes moved from the code). The tests compare the
# objects with the generic decoder's, so a field added to these classes and not set here fails them.
_new_object = object.__new__
_PARTITION_FIXED = struct.Struct(">ihqqq")  # index .. log_start_offset (v5+)
# After a partition's fixed fields: record_errors empty (1), error_message null (0), no
# tagged fields (0).
_PARTITION_USUAL_TAIL = b"\x01\x00\x00"
_INT32 = struct.Struct(">i")


def compiled_function(name: str) -> Callable[..., object] | None:
    """The compiled core's function ``name`` (``decode_produce_response``: the same objects
    as :func:`_decode_usual_flexible`; ``write_produce_request``: the same bytes as
    :func:`_write_usual`; the Python ones stay the reference), or None when the pure-Python
    build is forced (``KAFKALINE_PURE_PYTHON``) or the core is not built (as
    :mod:`kafkaline.core_choice` says, the one place that decides)."""
    # Imported here: at module level it would tie this module into a cycle through the
    # package root, in which mypy cannot infer the API classes' attributes.
    from kafkaline.core_choice import load_compiled_core

    core = load_compiled_core()
    function: Callable[..., object] | None = getattr(core, name, None)
    return function


def compiled_decoder() -> Callable[..., ProduceResponse | None] | None:
    """The compiled ``decode_produce_response`` (see :func:`compiled_function`), or None."""
    return compiled_function("decode_produce_response")  # type: ignore[return-value]


def _read_count(view: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A compact count or length (uvarint of n + 1) of at most three bytes at ``pos``: ``(n,
    the position after it)``; n is -1 for a null or anything longer (not the usual shape)."""
    first = view[pos]
    if first < 0x80:
        return first - 1, pos + 1
    second = view[pos + 1]
    if second < 0x80:
        return ((first & 0x7F) | (second << 7)) - 1, pos + 2
    third = view[pos + 2]
    if third < 0x80:
        return ((first & 0x7F) | ((second & 0x7F) << 7) | (third << 14)) - 1, pos + 3
    return -1, pos


def _decode_usual_partitions(
    view: bytes | memoryview, pos: int, partition_count: int
) -> tuple[list[PartitionProduceResponse], int] | None:
    """A topic's ``partition_count`` partition answers in their usual shape from ``pos``, and
    the position after them; None for any other shape (IndexError/struct.error propagate
    to the caller, which treats them alike)."""
    unpack_partition = _PARTITION_FIXED.unpack_from
    fixed_size = _PARTITION_FIXED.size
    partitions: list[PartitionProduceResponse] = []
    # One default current_leader per answer, shared by its partitions: equal to one
    # each, and a topic of thousands of partitions makes thousands fewer objects.
    leader = _new_object(LeaderIdAndEpoch)  # the tagged field's default
    leader.leader_id = -1
    leader.leader_epoch = -1
    for _ in range(partition_count):
        index, error_code, base_offset, log_append_time, log_start_offset = unpack_partition(
            view, pos
        )
        pos += fixed_size
        if view[pos : pos + 3] != _PARTITION_USUAL_TAIL:
            return None
        pos += 3
        partition = _new_object(PartitionProduceResponse)
        partition.index = index
        partition.error_code = error_code
        partition.base_offset = base_offset
        partition.log_append_time_ms = log_append_time
        partition.log_start_offset = log_start_offset
        partition.record_errors = []
        partition.error_message = None
        partition.current_leader = leader
        partitions.append(partition)
    return partitions, pos


def _decode_usual_flexible(data: Buffer) -> ProduceResponse | None:
    """A v9+ ProduceResponse in its usual shape (see ProduceResponse.decode), or None when
    the body has any other shape or is malformed (the generic decoder then decides)."""
    view = data if isinstance(data, bytes) else memoryview(data).cast("B")
    try:
        end = len(view)
        # Counts and lengths under 127 are one byte: read here, not by _read_count (a call
        # less each, three per response).
        first = view[0]
        topic_count, pos = (first - 1, 1) if first < 0x80 else _read_count(view, 0)
        if topic_count < 0:
            return None
        topics: list[TopicProduceResponse] = []
        for _ in range(topic_count):
            first = view[pos]
            name_size, pos = (first - 1, pos + 1) if first < 0x80 else _read_count(view, pos)
            if name_size < 0 or pos + name_size > end:
                return None
            name = str(view[pos : pos + name_size], "utf-8")
            pos += name_size
            first = view[pos]
            partition_count, pos = (first - 1, pos + 1) if first < 0x80 else _read_count(view, pos)
            if partition_count < 0:
                return None
            decoded = _decode_usual_partitions(view, pos, partition_count)
            if decoded is None:
                return None
            partitions, pos = decoded
            if view[pos] != 0:  # the topic's tagged fields
                return None
            pos += 1
            topic = _new_object(TopicProduceResponse)
            topic.name = name
            topic.partition_responses = partitions
            topics.append(topic)
        (throttle_time_ms,) = _INT32.unpack_from(view, pos)
        if pos + 5 != end or view[pos + 4] != 0:  # no tagged fields, nothing after them
            return None
    except (IndexError, struct.error, UnicodeDecodeError, ValueError):
        return None
    response = _new_object(ProduceResponse)
    response.responses = topics
    response.throttle_time_ms = throttle_time_ms
    response.node_endpoints = []
    return response


#: The response's usual shape read by the compiled core (one call instead of a Python loop
#: per topic and partition, on the I/O thread once per request), or None: the Python above.
_COMPILED_DECODE = compiled_decoder()


# --------------------------------------------------------------------------- request


class PartitionProduceData(Struct):
    """Record batches for one partition."""

    index: int = kafka_field(INT32, "0+")
    records: Records | None = kafka_field(RECORDS, "0+", nullable="0+", default=None)


class TopicProduceData(Struct):
    """Record batches for the partitions of one topic."""

    name: str = kafka_field(STRING, "0+")
    partition_data: list[PartitionProduceData] = kafka_field(array_of(PartitionProduceData), "0+")


class ProduceRequest(Request):
    """Write record batches to partition leaders.

    >>> request = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[
    ...     TopicProduceData(name="t", partition_data=[
    ...         PartitionProduceData(index=0, records=b"...batch bytes...")])])
    >>> body = request.encode(9)
    """

    API_KEY = 0
    VALID_VERSIONS = Versions.parse("3-11")
    FLEXIBLE_VERSIONS = Versions.parse("9+")
    RESPONSE_TYPE = ProduceResponse

    transactional_id: str | None = kafka_field(STRING, "3+", nullable="3+", default=None)
    acks: int = kafka_field(INT16, "0+")
    timeout_ms: int = kafka_field(INT32, "0+")
    topic_data: list[TopicProduceData] = kafka_field(array_of(TopicProduceData), "0+")

    def has_response(self) -> bool:
        """With ``acks=0`` the broker sends no response."""
        return self.acks != 0

    @classmethod
    def body_writer(cls, version: int) -> CompiledStruct | _UsualFlexibleRequestWriter:
        """What writes this request's body at ``version`` (framing asks once per version):
        flexible versions in their usual shape by hand (see _UsualFlexibleRequestWriter),
        everything else by the generic encoder."""
        flexible = version in cls.FLEXIBLE_VERSIONS
        generic = compile_struct(cls, version, flexible)
        if not flexible:
            return generic
        return _UsualFlexibleRequestWriter(generic, RECORDS.codec(version, True, True).write)


def new_produce_request(
    transactional_id: str | None,
    acks: int,
    timeout_ms: int,
    topic_data: Mapping[str, Sequence[tuple[int, Records | None]]],
) -> ProduceRequest:
    """The ProduceRequest for ``topic_data`` (topic -> ``(partition, records)`` pairs), as
    ``ProduceRequest(...)`` with its TopicProduceData and PartitionProduceData would make it.

    The producer's I/O thread makes one per request: its objects are made as the response
    fast path makes them (object.__new__, then every field set; see _decode_usual_flexible)."""
    topics: list[TopicProduceData] = []
    compiled = _COMPILED_PARTITIONS
    for name, partitions in topic_data.items():
        # The compiled core makes the same objects in one call (a topic of thousands of
        # partitions has one per batch); it answers None for pairs that are not 2-tuples.
        made = None if compiled is None else compiled(PartitionProduceData, partitions)
        partition_data: list[PartitionProduceData] = (
            _new_partition_data(partitions) if made is None else made
        )
        topic = _new_object(TopicProduceData)
        topic.name = name
        topic.partition_data = partition_data
        topics.append(topic)
    request = _new_object(ProduceRequest)
    request.transactional_id = transactional_id
    request.acks = acks
    request.timeout_ms = timeout_ms
    request.topic_data = topics
    return request


def _new_partition_data(
    partitions: Sequence[tuple[int, Records | None]],
) -> list[PartitionProduceData]:
    """A PartitionProduceData per ``(index, records)`` pair, as new_produce_request makes
    them (the reference of the compiled ``new_partition_data``)."""
    partition_data: list[PartitionProduceData] = []
    for index, records in partitions:
        partition = _new_object(PartitionProduceData)
        partition.index = index
        partition.records = records
        partition_data.append(partition)
    return partition_data


#: new_produce_request's partitions made by the compiled core (see _new_partition_data), or
#: None: the Python above.
_COMPILED_PARTITIONS: Callable[..., list[PartitionProduceData] | None] | None = compiled_function(
    "new_partition_data"
)  # type: ignore[assignment]

# transactional_id null (0), acks, timeout_ms.
_HEAD = struct.Struct(">Bhi")
#: Record sets this large or larger have no compact length (uvarint32 of size + 1).
_MAX_COMPACT_RECORDS = (1 << 32) - 1


class _UsualFlexibleRequestWriter:
    """Writes a v9+ ProduceRequest body without a transactional id (every request of a
    non-transactional producer), by hand; anything else, or a value it cannot
    write, goes to the generic encoder, which names the problem. Both write the same bytes
    (a test checks). The generic walk costs many Python calls per request, once per round
    trip for records sent one at a time (see docs/performance.md)."""

    __slots__ = ("_generic", "_write_records")

    def __init__(self, generic: CompiledStruct, write_records: WriteFn) -> None:
        self._generic = generic
        # The generic encoder's own writer for the records field (length and bytes).
        self._write_records = write_records

    def write(self, out: bytearray, request: ProduceRequest) -> None:
        """Append the body of ``request`` to ``out``."""
        # Written straight into the frame in one pass; if the request turns out not to be of
        # the usual shape (or has a value only the generic encoder can name), what was
        # written is taken back and the generic encoder writes it all (no intermediate
        # encoding, no generic records writer: see docs/performance.md).
        start = len(out)
        deferred = out.deferred if type(out) is ScatterFrame else None
        deferred_count = 0 if deferred is None else len(deferred)
        compiled = _COMPILED_WRITE
        usual = (
            _write_usual(out, request, deferred, self._write_records)
            if compiled is None
            else compiled(out, request, deferred, self._write_records, SCATTER_MIN_BYTES)
        )
        if not usual:
            del out[start:]
            if deferred is not None:
                del deferred[deferred_count:]
            self._generic.write(out, request)  # raises the EncodeError naming the field


def _write_usual_partitions(
    out: bytearray,
    partitions: Sequence[PartitionProduceData],
    deferred: list[tuple[int, Buffer]] | None,
    write_records: WriteFn,
) -> bool:
    """A topic's partitions of a usual v9+ request body (see _write_usual); False if one
    is not of the usual shape. Its callers catch what it raises for a bad value."""
    for partition in partitions:
        records = partition.records
        if not isinstance(records, (bytes, bytearray)):
            if not isinstance(records, memoryview):
                return False  # null records (or not bytes): the generic way
            out += _INT32.pack(partition.index)
            # A view (its size in bytes may not be its len()): the generic
            # encoder's own writer for the records field.
            write_records(out, records)
            out.append(0)  # the partition's tagged fields
            continue
        out += _INT32.pack(partition.index)
        size = len(records)
        # A batch the frame references rather than copies (see ScatterFrame): its
        # compact length, then its place.
        if size < 0x7F:
            out.append(size + 1)
        elif size < 0x3FFF:  # two varint bytes (batches up to 16 KiB)
            out.append(((size + 1) & 0x7F) | 0x80)
            out.append((size + 1) >> 7)
        elif size < 0x1FFFFF:  # three (batches of 16 KiB up to 2 MiB)
            out.append(((size + 1) & 0x7F) | 0x80)
            out.append((((size + 1) >> 7) & 0x7F) | 0x80)
            out.append((size + 1) >> 14)
        else:
            if size >= _MAX_COMPACT_RECORDS:
                return False
            write_unsigned_varint(out, size + 1)
        if deferred is not None and size >= SCATTER_MIN_BYTES:
            deferred.append((len(out), records))
        else:
            out += records
        out.append(0)  # the partition's tagged fields
    return True


def _write_usual(
    out: bytearray,
    request: ProduceRequest,
    deferred: list[tuple[int, Buffer]] | None,
    write_records: WriteFn,
) -> bool:
    """Write a usual v9+ request body to ``out``; False (having written some of it) if the
    request is not of the usual shape or has a value only the generic encoder can name."""
    try:
        topics = request.topic_data
        if request.transactional_id is not None or not isinstance(topics, (list, tuple)):
            return False
        # transactional_id null (0), acks, timeout_ms, the topic count + 1.
        out += _HEAD.pack(0, request.acks, request.timeout_ms)
        count = len(topics) + 1
        # One-byte counts appended here, the rest by write_unsigned_varint (a call less).
        if count < 0x80:
            out.append(count)
        else:
            write_unsigned_varint(out, count)
        for topic in topics:
            name = topic.name.encode("utf-8")
            partitions = topic.partition_data
            if not isinstance(partitions, (list, tuple)):
                return False
            count = len(name) + 1
            if count < 0x80:
                out.append(count)
            else:
                write_unsigned_varint(out, count)
            out += name
            count = len(partitions) + 1
            if count < 0x80:
                out.append(count)
            else:
                write_unsigned_varint(out, count)
            if not _write_usual_partitions(out, partitions, deferred, write_records):
                return False
            out.append(0)  # the topic's tagged fields
        out.append(0)  # the request's tagged fields
    except (AttributeError, TypeError, struct.error, UnicodeError, EncodeError):
        return False
    return True


#: The usual request body written by the compiled core (one call instead of a Python loop per
#: topic and partition, once per request), or None: _write_usual.
_COMPILED_WRITE: Callable[..., bool] | None = compiled_function(  # type: ignore[assignment]
    "write_produce_request"
)
