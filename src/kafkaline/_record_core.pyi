# The compiled record core (_record_core.c); kafkaline.record.core chooses it or the
# pure-Python reference, kafkaline.record.builder.RecordBatchBuilder, whose interface it has.

from kafkaline.record.builder import RecordBatchBuilder as RecordBatchBuilder

BUILD: str

def murmur2(data: bytes | bytearray | memoryview, /) -> int: ...
def partition_for_key(key: bytes | bytearray | memoryview, partition_count: int, /) -> int: ...
def crc32c(data: bytes | bytearray | memoryview, crc: int = 0, /) -> int: ...
