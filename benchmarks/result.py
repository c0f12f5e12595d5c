"""The result of one run, as the client process reports it and the harness completes it.

The child writes a :class:`RunResult` as JSON; the harness adds what only it knows (the round,
the read-back count, the load average) and keeps every run in ``results/runs/latest.json``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from enum import Enum
from typing import Any


class Status(str, Enum):
    OK = "ok"  # ran, and the read-back found every record
    FAILED = "failed"  # crashed, timed out, or the read-back count was wrong: not timed
    UNAVAILABLE = "unavailable"  # the library or API is not installed / has not landed
    UNSUPPORTED = "unsupported"  # the adapter does not do this workload (said why)


@dataclass
class RunResult:
    client: str
    workload: str
    status: Status
    detail: str = ""
    round: int = 0
    records_sent: int = 0
    payload_bytes: int = 0
    wall_s: float = 0.0
    cpu_user_s: float = 0.0
    cpu_sys_s: float = 0.0
    idle_rss: int = 0
    peak_rss: int = 0
    #: Whether the peak covers only the produce phase (False: the process's lifetime peak).
    peak_rss_reset: bool = False
    #: CPU seconds of the thread that called the client (send/produce), and of every other
    #: thread of the process (the client's I/O threads), over the timed span (None: no /proc).
    cpu_caller_s: float | None = None
    cpu_io_s: float | None = None
    #: Instructions (valgrind callgrind) of the caller's thread and of the other threads, over
    #: the child's whole life: only in instruction-count runs (``--instructions``).
    instructions_caller: int | None = None
    instructions_io: int | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_p999_ms: float | None = None
    latency_max_ms: float | None = None
    #: Records the topic must hold (measured plus warm-up records) and the records the harness
    #: read back from it (None: not read back).
    records_expected: int = 0
    records_read: int | None = None
    load_average_1m: float | None = None
    #: Seconds the client process lived, and the read-back took (the harness's own costs).
    process_s: float = 0.0
    read_back_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def records_per_s(self) -> float:
        return self.records_sent / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def megabytes_per_s(self) -> float:
        return self.payload_bytes / self.wall_s / 1e6 if self.wall_s > 0 else 0.0

    @property
    def cpu_s_per_million(self) -> float:
        cpu = self.cpu_user_s + self.cpu_sys_s
        return cpu / self.records_sent * 1e6 if self.records_sent else 0.0

    @property
    def cpu_caller_s_per_million(self) -> float | None:
        if self.cpu_caller_s is None or not self.records_sent:
            return None
        return self.cpu_caller_s / self.records_sent * 1e6

    @property
    def cpu_io_s_per_million(self) -> float | None:
        if self.cpu_io_s is None or not self.records_sent:
            return None
        return self.cpu_io_s / self.records_sent * 1e6

    @property
    def rss_above_idle(self) -> int:
        return max(0, self.peak_rss - self.idle_rss)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["status"] = Status(values["status"])
        return cls(**values)

    def dumps(self) -> str:
        return json.dumps(self.to_json())

    @classmethod
    def from_json_text(cls, text: str) -> RunResult:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a run result must be a JSON object")
        return cls.from_json(data)
