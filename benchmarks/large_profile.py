"""Per-function instruction profile of the large workload (issue #17): where kafkaline spends
the instructions of sending 10 KB records.

    python -m benchmarks.large_profile [--records N] [--pure] [--out DIR]

starts a LocalBroker with a 6-partition topic, then runs one producer process under
valgrind's callgrind (``--separate-threads=yes``) that sends the large workload's records
(10 KB values, batch 64 KiB, acks=1, no compression; linger 5 s, as the instruction-count mode
uses, so batches fill under valgrind's slowdown) with ``send()`` and flushes. It prints
``callgrind_annotate --inclusive=yes`` for the caller's thread and for the other threads
(the Sender). Run it at two lengths and compare to separate per-record work from start-up.
``--pure`` runs the pure-Python build (``KAFKALINE_PURE_PYTHON=1``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.workloads import ISSUE_WORKLOADS, make_records
from kafkaline.testing import LocalBroker

_TOPIC = "large-profile"
_LINGER_MS = 5_000
_ANNOTATE_LINES = 60


def _workload_config() -> tuple[int, int]:
    large = next(w for w in ISSUE_WORKLOADS if w.name == "large")
    return large.batch_size, large.buffer_memory


def produce(bootstrap: str, records: int) -> None:
    """The profiled child: send ``records`` large records with ``send()`` and flush."""
    from kafkaline import Producer

    large = next(w for w in ISSUE_WORKLOADS if w.name == "large")
    made = make_records(large, records)
    batch_size, buffer_memory = _workload_config()
    with Producer(
        bootstrap_servers=bootstrap,
        acks=1,
        linger_ms=_LINGER_MS,
        batch_size=batch_size,
        buffer_memory=buffer_memory,
        enable_idempotence=False,
    ) as producer:
        producer.partitions_for(_TOPIC)
        send = producer.send
        for key, value in zip(made.keys, made.values, strict=True):
            send(_TOPIC, value, key)
        producer.flush()


def _annotate(path: Path) -> str:
    shown = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return "\n".join(shown.splitlines()[:_ANNOTATE_LINES])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=6_000)
    parser.add_argument("--pure", action="store_true", help="the pure-Python build")
    parser.add_argument("--out", type=Path, default=None, help="keep callgrind files here")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    if args.pure:
        env["KAFKALINE_PURE_PYTHON"] = "1"
    with tempfile.TemporaryDirectory(prefix="kafkaline-large-") as scratch, LocalBroker() as broker:
        out = args.out or Path(scratch)
        out.mkdir(parents=True, exist_ok=True)
        broker.create_topic(_TOPIC, partitions=6)
        child = (
            "import sys; from benchmarks.large_profile import produce; "
            "produce(sys.argv[1], int(sys.argv[2]))"
        )
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                f"--callgrind-out-file={out / 'callgrind.out'}",
                "--quiet",
                sys.executable,
                "-c",
                child,
                broker.bootstrap_servers,
                str(args.records),
            ],
            env=env,
            check=True,
        )
        for path in sorted(out.glob("callgrind.out-*")):
            print(f"===== {path.name} =====")
            print(_annotate(path))


if __name__ == "__main__":
    main()
