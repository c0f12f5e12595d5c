"""``python -m benchmarks``: the producer benchmark of issue #5 (``make bench``).

Starts one local broker (Tansu), runs every client in its own process, in turn, for every
workload and round, reads every run's records back, and writes the results to
``benchmarks/results/``: ``latest.md`` (the table, also printed), ``latest.json`` (every run),
``latest.png`` (the chart, with matplotlib) and timestamped copies of the Markdown and JSON.

Examples::

    python -m benchmarks                                   # everything, 3 rounds
    python -m benchmarks --workloads small,latency --clients kafkaline,confluent-kafka
    python -m benchmarks --quick --rounds 1                # tiny counts: a smoke run

Exit status: 0 when every run that ran was good, 1 when a run failed (crashed, timed out, or
read back the wrong count), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.chart import chart_unavailable_reason, write_chart
from benchmarks.clients import CLIENT_NAMES
from benchmarks.clients.raw_client import DEFAULT_CONNECTIONS, DEFAULT_IN_FLIGHT
from benchmarks.harness import BenchRun, Plan, run_plan
from benchmarks.report import render_markdown
from benchmarks.summary import summarise
from benchmarks.workloads import ISSUE_WORKLOADS, Sizes, workload_by_name, workloads_for

DEFAULT_ROUNDS = 3
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _names(text: str, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}"
        )
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    workload_names = tuple(w.name for w in ISSUE_WORKLOADS)
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="kafkaline's producer benchmark against confluent-kafka, kafka-python and "
        "aiokafka, on one local broker.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rounds", type=int, default=DEFAULT_ROUNDS, help="runs per client and workload"
    )
    parser.add_argument(
        "--workloads",
        type=lambda text: _names(text, workload_names, "workload"),
        default=workload_names,
        help=f"comma-separated, in this order by default: {','.join(workload_names)}",
    )
    parser.add_argument(
        "--clients",
        type=lambda text: _names(text, CLIENT_NAMES, "client"),
        default=CLIENT_NAMES,
        help=f"comma-separated, in this order by default: {','.join(CLIENT_NAMES)}",
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
        help="where results go (default: benchmarks/results, or benchmarks/results/quick "
        "with --quick)",
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
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = Sizes.QUICK
    if args.rounds < 1 or args.raw_connections < 1 or args.raw_in_flight < 1:
        parser.error("--rounds, --raw-connections and --raw-in-flight must be at least 1")
    return args


def _plan(args: argparse.Namespace) -> Plan:
    sized = workloads_for(args.sizes)
    return Plan(
        workloads=tuple(workload_by_name(name, sized) for name in args.workloads),
        clients=tuple(args.clients),
        rounds=args.rounds,
        sizes=args.sizes,
        raw_connections=args.raw_connections,
        raw_in_flight=args.raw_in_flight,
        run_timeout_s=args.run_timeout,
    )


def write_results(bench: BenchRun, output_dir: Path, with_chart: bool) -> list[str]:
    """Write the Markdown, JSON and chart; return notes for the user (what was not written)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    markdown = render_markdown(bench)
    raw = json.dumps(
        {
            "machine": asdict(bench.machine),
            "plan": {
                "rounds": bench.plan.rounds,
                "sizes": bench.plan.sizes.value,
                "clients": list(bench.plan.clients),
                "workloads": [asdict(w) for w in bench.plan.workloads],
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
            chart = output_dir / "latest.png"
            write_chart(
                summarise(bench),
                chart,
                f"kafkaline producer benchmark, {bench.machine.started_at}, "
                f"{bench.machine.cpu_count} CPUs (load at start "
                f"{bench.machine.load_average_start[0]:.2f})",
            )
        else:
            notes.append(reason)
    for name in ("latest", stamp):
        text = markdown
        if chart is not None:
            if name != "latest":
                shutil.copyfile(chart, output_dir / f"{name}.png")
            text += f"\n![chart]({name}.png)\n"
        (output_dir / f"{name}.md").write_text(text)
        (output_dir / f"{name}.json").write_text(raw)
    return notes


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = _plan(args)
    quick = args.sizes is Sizes.QUICK
    output_dir = args.output_dir or (RESULTS_DIR / "quick" if quick else RESULTS_DIR)
    bench = run_plan(plan)
    notes = write_results(bench, output_dir, with_chart=not args.no_chart)
    print(render_markdown(bench))
    for note in notes:
        print(note, file=sys.stderr)
    print(f"results written to {output_dir}", file=sys.stderr)
    return 1 if bench.failed else 0
