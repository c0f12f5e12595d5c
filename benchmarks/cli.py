"""``python -m benchmarks``: the producer benchmark of issue #5 (``make bench``).

Starts one local broker (Tansu), runs every client in its own process, in turn, for every
workload and round, reads every run's records back, and writes the results to
``benchmarks/results/runs/`` (not committed): ``latest.md`` (the table, also printed),
``latest.json`` (every run), ``latest.png`` (the chart, with matplotlib) and timestamped copies
of the Markdown and JSON. ``--publish`` also writes the table to ``benchmarks/results/``, the
one copy kept in the repository, which the docs link to.

Examples::

    python -m benchmarks                                   # everything, 3 rounds
    python -m benchmarks --workloads small,latency --clients kafkaline,confluent-kafka
    python -m benchmarks --quick --rounds 1                # tiny counts: a smoke run
    python -m benchmarks --partitions 6,600,3000           # small, per partition count
    python -m benchmarks --instructions                    # callgrind: instructions/record

The default run prints CPU per thread (the caller's, the I/O threads') beside whole-process
CPU. ``--partitions`` runs the throughput workloads (default: small) on topics of each count
and prints how CPU per record grows. ``--instructions`` counts instructions per record with
valgrind instead of timing (see :mod:`benchmarks.instructions`). Both default to the clients
kafkaline, kafkaline-pure (the pure-Python build, KAFKALINE_PURE_PYTHON=1) and confluent-kafka.

Exit status: 0 when every run that ran was good, 1 when a run failed (crashed, timed out, or
read back the wrong count), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.chart import chart_unavailable_reason, write_chart
from benchmarks.clients import CLIENT_NAMES
from benchmarks.clients.raw_client import DEFAULT_CONNECTIONS, DEFAULT_IN_FLIGHT
from benchmarks.harness import BenchRun, Plan, run_plan
from benchmarks.instructions import (
    DEFAULT_LENGTHS,
    render_instructions_markdown,
    run_instruction_counts,
    valgrind_unavailable_reason,
)
from benchmarks.report import render_markdown
from benchmarks.summary import summarise
from benchmarks.workloads import (
    ISSUE_WORKLOADS,
    MIB,
    Kind,
    Sizes,
    with_partitions,
    workload_by_name,
    workloads_for,
)

DEFAULT_ROUNDS = 3
#: The rounds, workloads and clients of --partitions and --instructions runs, unless given.
FOCUSED_ROUNDS = 1
FOCUSED_WORKLOADS = ("small",)
FOCUSED_CLIENTS = ("kafkaline", "kafkaline-pure", "confluent-kafka")
#: Where every run's files go; not committed (.gitignore).
RESULTS_DIR = Path(__file__).resolve().parent / "results" / "runs"
#: Where --publish puts the table: the one results file in the repository.
PUBLISHED_DIR = Path(__file__).resolve().parent / "results"


def _names(text: str, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
        )
    return names


def _counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"whole numbers separated by commas, not {text!r}"
        ) from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"numbers of at least 1, not {text!r}")
    return counts


def _partition_counts(text: str) -> tuple[int, ...]:
    return tuple(sorted(set(_counts(text))))


def _lengths(text: str) -> tuple[int, int]:
    counts = _counts(text)
    if len(counts) != 2 or counts[0] >= counts[1]:
        raise argparse.ArgumentTypeError(f"two growing record counts (N1,N2), not {text!r}")
    return counts[0], counts[1]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    workload_names = tuple(w.name for w in ISSUE_WORKLOADS)
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="kafkaline's producer benchmark against confluent-kafka, kafka-python and "
        "aiokafka, on one local broker.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help=f"runs per client and workload (default {DEFAULT_ROUNDS}; {FOCUSED_ROUNDS} with "
        "--partitions or --instructions)",
    )
    parser.add_argument(
        "--workloads",
        type=lambda text: _names(text, workload_names, "workload"),
        default=None,
        help=f"comma-separated, in this order by default: {','.join(workload_names)} "
        f"({','.join(FOCUSED_WORKLOADS)} with --partitions or --instructions)",
    )
    parser.add_argument(
        "--clients",
        type=lambda text: _names(text, CLIENT_NAMES, "client"),
        default=None,
        help=f"comma-separated, in this order by default: {','.join(CLIENT_NAMES)} "
        f"({','.join(FOCUSED_CLIENTS)} with --partitions or --instructions)",
    )
    parser.add_argument(
        "--partitions",
        type=_partition_counts,
        default=None,
        help="comma-separated partition counts (e.g. 6,600,3000): run each throughput "
        "workload on a topic of each count and print how CPU per record grows",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per record with valgrind's callgrind (caller and I/O "
        "threads; two run lengths differenced) instead of timing",
    )
    parser.add_argument(
        "--instruction-records",
        type=_lengths,
        default=DEFAULT_LENGTHS,
        help="the two run lengths of --instructions (default "
        f"{DEFAULT_LENGTHS[0]},{DEFAULT_LENGTHS[1]})",
    )
    parser.add_argument(
        "--sizes",
        type=Sizes,
        choices=list(Sizes),
        default=Sizes.DEFAULT,
        help="record counts: default (fits ~10 min here; see benchmarks/workloads.py), issue "
        "(issue #5's: 300,000 compressed records, 5,000 latency samples, 1 GB of memory run; "
        "~20 min), quick (tiny: checks the plumbing only)",
    )
    parser.add_argument("--quick", action="store_true", help="the same as --sizes quick")
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="where results go (default: benchmarks/results/runs, or "
        "benchmarks/results/runs/quick with --quick; not committed)",
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="also write the table to benchmarks/results/ (latest.md, or partitions-latest.md "
        "and instructions-latest.md for those modes): the copy the docs link to, committed",
    )
    parser.add_argument("--no-chart", action="store_true", help="write no PNG")
    parser.add_argument(
        "--raw-connections",
        type=int,
        default=DEFAULT_CONNECTIONS,
        help="connections of the broker-limit client",
    )
    parser.add_argument(
        "--raw-in-flight",
        type=int,
        default=DEFAULT_IN_FLIGHT,
        help="requests in flight per connection of the broker-limit client",
    )
    parser.add_argument(
        "--run-timeout", type=float, default=300.0, help="seconds before a run is killed"
    )
    parser.add_argument(
        "--buffer-memory",
        type=int,
        default=None,
        help="buffer memory in MiB for every client (default 32); a batch holds batch_size "
        "of it, so 600 partitions of 64 KiB batches need more than 32 MiB",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = Sizes.QUICK
    focused = args.partitions is not None or args.instructions
    if args.rounds is None:
        args.rounds = FOCUSED_ROUNDS if focused else DEFAULT_ROUNDS
    if args.workloads is None:
        args.workloads = FOCUSED_WORKLOADS if focused else workload_names
    if args.clients is None:
        args.clients = FOCUSED_CLIENTS if focused else CLIENT_NAMES
    if focused:
        kinds = {workload_by_name(name).kind for name in args.workloads}
        if kinds != {Kind.THROUGHPUT}:
            parser.error("--partitions and --instructions run throughput workloads only")
    if args.instructions:
        reason = valgrind_unavailable_reason()
        if reason is not None:
            parser.error(f"--instructions needs valgrind: {reason}")
    if args.rounds < 1 or args.raw_connections < 1 or args.raw_in_flight < 1:
        parser.error("--rounds, --raw-connections and --raw-in-flight must be at least 1")
    return args


def _plan(args: argparse.Namespace) -> Plan:
    sized = workloads_for(args.sizes)
    workloads = tuple(workload_by_name(name, sized) for name in args.workloads)
    if args.partitions is not None:
        workloads = tuple(with_partitions(w, n) for w in workloads for n in args.partitions)
    if args.buffer_memory is not None:
        workloads = tuple(replace(w, buffer_memory=args.buffer_memory * MIB) for w in workloads)
    return Plan(
        workloads=workloads,
        clients=tuple(args.clients),
        rounds=args.rounds,
        sizes=args.sizes,
        raw_connections=args.raw_connections,
        raw_in_flight=args.raw_in_flight,
        run_timeout_s=args.run_timeout,
    )


def write_results(
    bench: BenchRun,
    output_dir: Path,
    with_chart: bool,
    markdown: str | None = None,
    prefix: str = "",
) -> list[str]:
    """Write the Markdown (``markdown``, default the timing report), JSON and chart, named
    ``{prefix}latest.*`` and ``{prefix}{timestamp}.*``; return notes for the user (what was
    not written)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    markdown = render_markdown(bench) if markdown is None else markdown
    raw = json.dumps(
        {
            "machine": asdict(bench.machine),
            "plan": {
                "rounds": bench.plan.rounds,
                "sizes": bench.plan.sizes.value,
                "clients": list(bench.plan.clients),
                "workloads": [w.to_json() for w in bench.plan.workloads],
                "raw_connections": bench.plan.raw_connections,
                "raw_in_flight": bench.plan.raw_in_flight,
            },
            "duration_s": bench.duration_s,
            "runs": [r.to_json() for r in bench.results],
            "unavailable": bench.unavailable,
            "unsupported": [
                {"workload": w, "client": c, "why": why}
                for (w, c), why in bench.unsupported.items()
            ],
        },
        indent=1,
    )
    notes = []
    chart: Path | None = None
    if with_chart:
        reason = chart_unavailable_reason()
        if reason is None:
            chart = output_dir / f"{prefix}latest.png"
            write_chart(
                summarise(bench),
                chart,
                f"kafkaline producer benchmark, {bench.machine.started_at}, "
                f"{bench.machine.cpu_count} CPUs (load at start "
                f"{bench.machine.load_average_start[0]:.2f})",
            )
        else:
            notes.append(reason)
    for name in (f"{prefix}latest", f"{prefix}{stamp}"):
        text = markdown
        if chart is not None:
            if name != f"{prefix}latest":
                shutil.copyfile(chart, output_dir / f"{name}.png")
            text += f"\n![chart]({name}.png)\n"
        (output_dir / f"{name}.md").write_text(text)
        (output_dir / f"{name}.json").write_text(raw)
    return notes


def publish_table(markdown: str, published_dir: Path, prefix: str = "") -> Path:
    """Write the table as ``{prefix}latest.md`` in ``published_dir`` (the committed copy; no
    chart: the PNG stays with the run's other files) and return its path."""
    published_dir.mkdir(parents=True, exist_ok=True)
    path = published_dir / f"{prefix}latest.md"
    path.write_text(markdown.rstrip("\n") + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = _plan(args)
    quick = args.sizes is Sizes.QUICK
    output_dir = args.output_dir or (RESULTS_DIR / "quick" if quick else RESULTS_DIR)
    if args.instructions:
        bench = run_instruction_counts(plan, args.instruction_records)
        markdown = render_instructions_markdown(bench, args.instruction_records)
        prefix = "instructions-"
        notes = write_results(bench, output_dir, False, markdown, prefix)
    else:
        bench = run_plan(plan)
        markdown = render_markdown(bench)
        prefix = "partitions-" if args.partitions is not None else ""
        with_chart = not args.no_chart and args.partitions is None
        notes = write_results(bench, output_dir, with_chart, markdown, prefix)
    print(markdown)
    for note in notes:
        print(note, file=sys.stderr)
    print(f"results written to {output_dir}", file=sys.stderr)
    if args.publish:
        published = publish_table(markdown, PUBLISHED_DIR, prefix)
        print(f"table published to {published}", file=sys.stderr)
    return 1 if bench.failed else 0
