"""The workloads of issue #5, as values: what to send and how every client is configured.

One :class:`Workload` says everything a client needs to be configured the same way as the
others (acks, linger, batch size, compression, buffer memory) and what records to send. The
records themselves are made by :func:`make_records` in the client's own process, before the
clock starts, so no client pays for making its input.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields, replace
from enum import Enum
from typing import Any

KIB = 1024
MIB = 1024 * KIB

#: Every topic the harness makes has this many partitions (the issue asks for 6), unless
#: ``--partitions`` asks for other counts (see :func:`with_partitions`).
PARTITIONS = 6
#: Kafka's, kafka-python's and kafkaline's default buffer.memory; set on every client and
#: workload so librdkafka (whose default queue is 1 GiB) is held to the same bound.
BUFFER_MEMORY = 32 * MIB
#: Records sent before the latency clock starts (connections warm, metadata known). They are
#: produced to the same topic, so the read-back counts them too.
LATENCY_WARMUP = 100


class Kind(str, Enum):
    """What a workload measures."""

    THROUGHPUT = "throughput"  # send everything, wait for every acknowledgement
    LATENCY = "latency"  # one record at a time, each waited for
    MEMORY = "memory"  # throughput, plus the client's peak RSS above its idle RSS


@dataclass(frozen=True)
class Workload:
    """One workload: the records and the producer settings every client gets."""

    name: str
    kind: Kind
    records: int
    value_size: int
    #: Keys are drawn in turn from this many distinct keys (record i gets key i % key_count).
    key_count: int
    linger_ms: int
    batch_size: int
    acks: int = 1
    compression: str = "none"  # none, lz4, zstd (the names every client accepts)
    buffer_memory: int = BUFFER_MEMORY
    #: Distinct values made and sent in turn. 0: every record has its own value. Large and
    #: memory workloads cycle a small pool so the child's idle RSS stays small (a 1 GB input
    #: held in memory would swamp the memory measurement); clients copy values into their
    #: batches either way, so the work per record is the same.
    value_pool: int = 0
    #: Partitions of the topic each run gets.
    partitions: int = PARTITIONS

    @property
    def warmup_records(self) -> int:
        return LATENCY_WARMUP if self.kind is Kind.LATENCY else 0

    @property
    def expected_records(self) -> int:
        """What the read-back must count: the measured records plus any warm-up records."""
        return self.records + self.warmup_records

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["kind"] = self.kind.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Workload:
        """The workload :meth:`to_json` gave (how the harness hands a child its workload)."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown workload fields: {', '.join(sorted(unknown))}")
        return cls(**{**data, "kind": Kind(data["kind"])})


_SMALL = Workload(
    name="small",
    kind=Kind.THROUGHPUT,
    records=300_000,
    value_size=100,
    key_count=10_000,
    linger_ms=5,
    batch_size=64 * KIB,
)

#: The workloads at the sizes issue #5 gives, in the order they run and are reported.
ISSUE_WORKLOADS: tuple[Workload, ...] = (
    _SMALL,
    replace(_SMALL, name="small-lz4", compression="lz4"),
    replace(_SMALL, name="small-zstd", compression="zstd"),
    replace(_SMALL, name="large", records=20_000, value_size=10_000, value_pool=1_000),
    replace(_SMALL, name="latency", kind=Kind.LATENCY, records=5_000, linger_ms=0),
    replace(
        _SMALL,
        name="memory",
        kind=Kind.MEMORY,
        records=100_000,  # 1 GB
        value_size=10_000,
        value_pool=100,
    ),
)

# The default run's sizes. They were set to stay within ~10 minutes (3 rounds, 7 clients, ~34 runs
# a round; kafkaline-pure, added since, adds 6 runs a round) on the project's 2-core machine,
# where each run also costs ~1.5 s of process start and a read-back of ~1 s per 100,000 records or
# 100 MB, and kafka-python alone needs ~20 s per 300,000 small records. So, against the issue's
# sizes: the compressed variants send 100,000 records (a rate per record compares all the same),
# latency 3,000 samples (p99.9 is then the 3rd slowest), and the memory run 250 MB, 8 x
# buffer_memory: a bounded producer reaches its plateau within the first 32 MiB, and an unbounded
# one still shows (kafka-python, whose accumulator has no bound, grew by ~86 MiB on 0.5 GB).
# ``--sizes issue`` runs the issue's.
_DEFAULT_RECORDS = {"small-lz4": 100_000, "small-zstd": 100_000, "latency": 3_000, "memory": 25_000}
DEFAULT_WORKLOADS: tuple[Workload, ...] = tuple(
    replace(w, records=_DEFAULT_RECORDS.get(w.name, w.records)) for w in ISSUE_WORKLOADS
)


def quick(workload: Workload) -> Workload:
    """The same workload with tiny counts, for a smoke run that only proves the plumbing."""
    records = {Kind.THROUGHPUT: 2_000, Kind.LATENCY: 200, Kind.MEMORY: 500}[workload.kind]
    if workload.value_size >= 10_000:
        records = 300
    return replace(workload, records=records, key_count=min(workload.key_count, records))


def with_partitions(workload: Workload, partitions: int) -> Workload:
    """The same workload on a topic of ``partitions`` partitions, named for the count
    (``small-p600``) so its runs are reported apart."""
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, not {partitions}")
    return replace(workload, name=f"{workload.name}-p{partitions}", partitions=partitions)


class Sizes(str, Enum):
    """Which record counts a run uses."""

    DEFAULT = "default"  # fits ~10 minutes on the project's machine (see DEFAULT_WORKLOADS)
    ISSUE = "issue"  # the sizes issue #5 gives (~20 minutes here)
    QUICK = "quick"  # tiny: a smoke run of the plumbing, numbers mean nothing


def workloads_for(sizes: Sizes) -> tuple[Workload, ...]:
    if sizes is Sizes.ISSUE:
        return ISSUE_WORKLOADS
    if sizes is Sizes.QUICK:
        return tuple(quick(w) for w in DEFAULT_WORKLOADS)
    return DEFAULT_WORKLOADS


def describe(workload: Workload) -> str:
    """One line saying what the workload sends and how."""
    total = workload.records * workload.value_size
    amount = f"{total / 1e9:g} GB" if total >= 1e8 else f"{total / 1e6:g} MB"
    text = (
        f"{workload.records:,} records of {workload.value_size:,} bytes ({amount} of values), "
        f"keys from {workload.key_count:,} distinct keys in turn, linger {workload.linger_ms} "
        f"ms, batch {workload.batch_size // KIB} KiB, acks={workload.acks}, compression "
        f"{workload.compression}, buffer memory {workload.buffer_memory // MIB} MiB, "
        f"{workload.partitions:,} partitions"
    )
    if workload.kind is Kind.LATENCY:
        text += (
            f"; one record at a time, each waited for (after {workload.warmup_records} warm-up "
            "records, also read back)"
        )
    if workload.kind is Kind.MEMORY:
        text += "; peak RSS of the client process above its idle RSS"
    return text


def workload_by_name(name: str, workloads: tuple[Workload, ...] = ISSUE_WORKLOADS) -> Workload:
    for workload in workloads:
        if workload.name == name:
            return workload
    known = ", ".join(w.name for w in workloads)
    raise KeyError(f"unknown workload {name!r}; known: {known}")


@dataclass(frozen=True)
class Records:
    """The records of a run: key and value of record i are ``keys[i]`` and ``values[i]``."""

    keys: list[bytes]
    values: list[bytes]

    @property
    def payload_bytes(self) -> int:
        """Key and value bytes of all records: what MB/s counts."""
        return sum(map(len, self.keys)) + sum(map(len, self.values))


@dataclass(frozen=True)
class Payload:
    """A run's key and value bytes: all it sends (what the read-back must find) and the part
    after the warm-up (what MB/s counts)."""

    total: int
    measured: int


def payload_of(workload: Workload) -> Payload:
    """The harness computes this, not the client's process: under callgrind, summing the
    sizes there would count among the client's instructions per record."""
    records = make_records(workload, count=workload.expected_records)
    warm = workload.warmup_records
    measured = Records(keys=records.keys[warm:], values=records.values[warm:])
    return Payload(total=records.payload_bytes, measured=measured.payload_bytes)


def key_for(index: int) -> bytes:
    return b"key-%06d" % index


def make_text_source(rng: random.Random, size: int) -> bytes:
    """``size`` bytes of JSON-like event text with random fields, that values are windows of.
    Values then compress the way event payloads do (structure and entropy), where random
    bytes would make lz4 and zstd pure overhead and a constant would flatter them; and 300,000
    windows are sliced in a fraction of the time it takes to format 300,000 values."""
    bits = rng.getrandbits
    events = (b"page_view", b"click", b"add_to_cart", b"search", b"checkout")
    pieces: list[bytes] = []
    total = 0
    while total < size:
        piece = b'{"user":%d,"event":"%s","session":"%016x","ms":%d,"score":%d}\n' % (
            bits(20),
            events[bits(8) % len(events)],
            bits(64),
            1_700_000_000_000 + bits(32),
            bits(16),
        )
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)[:size]


def make_records(workload: Workload, count: int | None = None, seed: int = 5) -> Records:
    """``count`` records (default: the workload's) with the workload's keys and values."""
    count = workload.records if count is None else count
    rng = random.Random(seed)
    distinct = min(workload.value_pool or count, count)
    size = workload.value_size
    source = make_text_source(rng, max(2 << 20, 4 * size))
    offsets = [rng.getrandbits(32) % (len(source) - size) for _ in range(distinct)]
    pool = [source[offset : offset + size] for offset in offsets]
    key_pool = [key_for(i) for i in range(min(workload.key_count, count))]
    values = [pool[i % len(pool)] for i in range(count)] if pool else []
    keys = [key_pool[i % len(key_pool)] for i in range(count)] if key_pool else []
    return Records(keys=keys, values=values)
