# The compiled record core (_record_core.c); kafkaline.record.core chooses it or the
# pure-Python reference, kafkaline.record.builder.RecordBatchBuilder, whose interface it has.

from collections.abc import Callable, Sequence

from kafkaline.record.builder import RecordBatchBuilder as RecordBatchBuilder

BUILD: str

class OpenBatchSender:
    open: bool
    partition_counts: dict[str, int]
    fallback: Callable[..., object] | None
    new_batch: Callable[[str, int, int, bytes | None, bytes | None], object] | None
    def __init__(
        self,
        accumulator: object,
        future_type: type[object],  # a subclass of RecordFuture
        payload_limit: int,
        record_overhead: int,
        fallback: Callable[..., object] | None = None,
    ) -> None: ...
    def __call__(
        self,
        topic: str,
        value: object = None,
        key: object = None,
        headers: object = None,
        partition: object = None,
        timestamp_ms: object = None,
    ) -> object: ...

def murmur2(data: bytes | bytearray | memoryview, /) -> int: ...
def partition_for_key(key: bytes | bytearray | memoryview, partition_count: int, /) -> int: ...
def lists_accepted(
    values: object, keys: object, headers: object, payload_limit: int, /
) -> bool: ...
def group_positions(
    count: int,
    keys: Sequence[bytes | None] | None,
    partitions: Sequence[int | None] | None,
    partition_count: int,
    /,
) -> list[tuple[int | None, memoryview]]: ...
def crc32c(data: bytes | bytearray | memoryview, crc: int = 0, /) -> int: ...
def buffer_capacity(builder: RecordBatchBuilder, /) -> int: ...

class QueueLock:
    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool: ...
    def release(self) -> None: ...
    def locked(self) -> bool: ...
    def __enter__(self) -> bool: ...
    def __exit__(self, *args: object) -> None: ...

class RecordFuture:
    @property
    def batch_result(self) -> object: ...
    @property
    def offset_delta(self) -> int: ...
    @property
    def serialized_key_size(self) -> int: ...
    @property
    def serialized_value_size(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    def __new__(
        cls,
        batch_result: object,
        offset_delta: int,
        serialized_key_size: int,
        serialized_value_size: int,
        timestamp: int,
    ) -> RecordFuture: ...

def register_future_type(cls: type[RecordFuture], /) -> None: ...
