"""CRC-32C: the standard check value, incremental use, zero-copy inputs, a C backend."""

from __future__ import annotations

import importlib.machinery

import crc32c as crc32c_package
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.record.crc import crc32c


def test_standard_check_value() -> None:
    # The CRC-32C (Castagnoli) check value of the ASCII digits 1-9.
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


@given(st.binary(), st.binary())
def test_incremental_equals_whole(first: bytes, second: bytes) -> None:
    assert crc32c(second, crc32c(first)) == crc32c(first + second)


def test_accepts_bytearray_and_memoryview_slices_without_copying() -> None:
    data = b"xx123456789yy"
    assert crc32c(memoryview(data)[2:-2]) == 0xE3069283
    assert crc32c(bytearray(b"123456789")) == 0xE3069283


def test_backend_is_a_c_extension() -> None:
    # A pure-Python fallback would be ~1000x slower; the chosen package has none, but make
    # sure the module really is compiled code.
    module_file = crc32c_package._crc32c.__file__
    assert module_file is not None
    assert module_file.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
