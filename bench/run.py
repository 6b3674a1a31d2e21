"""Run every benchmark case, print the table and write `bench/results.md`.

    uvx nox -s bench                  # the full suite (about 6 minutes on a quiet 2-core machine)
    uvx nox -s bench -- --quick       # smoke run: few repetitions, small sizes, results.md untouched
    uv run python bench/run.py --only fanout --quick       # one case by name
    uv run python bench/run.py --only siblings,events --output /tmp/partial.md

Each case measures a subject against its baseline in the same interleaved rounds, and every
ratio is computed pair by pair from those rounds (see `_timing.py`).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import case_acp
import case_cancel
import case_claude
import case_codex
import case_containment
import case_delegation
import case_dispose
import case_events
import case_fanout
import case_fanout_isolation
import case_harness
import case_mcp
import case_model
import case_prewarm
import case_process
import case_ray
import case_sdk
import case_sessions
import case_siblings
import case_tracing
from _context import BENCH, Context
from _machine import describe, load_average
from _report import Section, console_table, fmt, markdown_sections, spread, target_rows

Case = Callable[[Context], Awaitable[list[Section]]]

CASES: dict[str, Case] = {
    "acp-overhead": case_acp.run_overhead,
    "acp-streaming": case_acp.streaming,
    "sdk-overhead": case_sdk.run_overhead,
    "cancel": case_cancel.cancel_to_gone,
    "process-execute": case_process.process_execute,
    "containment": case_containment.containment,
    "model-client": case_model.model_client,
    "delegation": case_delegation.delegation,
    "harness": case_harness.startup,
    "siblings": case_siblings.quiet_sibling,
    "events": case_events.events,
    "prewarm": case_prewarm.prewarm,
    "dispose": case_dispose.dispose,
    "fanout": case_fanout.fanout,
    "fanout-isolation": case_fanout_isolation.fanout_isolation,
    "claude": case_claude.native_vs_acp,
    "codex": case_codex.codex,
    "sessions": case_sessions.sessions,
    "tracing": case_tracing.tracing,
    "mcp": case_mcp.mcp,
    # Last: it starts a Ray cluster and makes this process its driver (skipped without ray).
    "ray": case_ray.ray,
}


async def _run_cases(ctx: Context, names: list[str], limit: float) -> list[Section]:
    """Each case bounded by `limit` seconds: a case that hangs fails, the suite goes on."""
    sections: list[Section] = []
    for name in names:
        started = time.perf_counter()
        print(f"-- {name} ...", flush=True)
        found = [Section(name, error=f"did not finish within {limit:g} s")]
        try:
            with anyio.move_on_after(limit):
                found = await CASES[name](ctx)
        except Exception as error:
            traceback.print_exc()
            found = [Section(name, error=f"{type(error).__name__}: {error}")]
        print(f"   {name} took {time.perf_counter() - started:.1f} s", flush=True)
        print(console_table(found), flush=True)
        sections.extend(found)
    return sections


def _markdown(
    sections: list[Section],
    *,
    started: datetime.datetime,
    seconds: float,
    load_start: str,
    load_end: str,
    quick: bool,
) -> str:
    lines = [
        "# Benchmark results",
        "",
        "Written by `uvx nox -s bench` (`python bench/run.py`"
        + (" --quick" if quick else "")
        + "). Every figure is the median of repeated runs after warm-up, with min–max; "
        "every ratio is computed pair by pair from subject and baseline measured in the same "
        "round, then summarized the same way.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    lines += [f"| {key} | {value} |" for key, value in describe()]
    lines += [
        f"| date (UTC) | {started:%Y-%m-%d %H:%M} |",
        f"| load average at start | {load_start} |",
        f"| load average at end | {load_end} |",
        f"| suite wall time | {seconds:.0f} s |",
        "",
        "The machine is shared with other engineers' work; the load average above says how "
        "busy it was. Absolute figures move with load, the same-round ratios much less.",
        "",
        "## Targets",
        "",
        "| target | measured (median, min–max) | verdict |",
        "|---|---|---|",
    ]
    missed: list[str] = []
    for _, row in target_rows(sections):
        assert row.target is not None
        lines.append(
            f"| {row.label}: {row.target} | {fmt(row.sample.median)} {row.unit} "
            f"({spread(row.sample)}) | **{row.verdict}** |"
        )
        if row.verdict == "MISSED":
            missed.append(row.label)
    failed = [s.title for s in sections if s.error is not None]
    lines += ["", "## Missed targets", ""]
    if not missed and not failed:
        lines.append("Every target was met in this run.")
    for label in missed:
        lines.append(
            f"- **{label}: missed.** Profiled causes, where known, are in "
            "[`bench/README.md`, Findings](README.md#findings)."
        )
    for title in failed:
        lines.append(f"- **{title}: the case failed to run** (see the section below).")
    lines += ["", "## Cases", "", markdown_sections(sections)]
    return "\n".join(lines).rstrip() + "\n"


README = BENCH / "README.md"
START = "<!-- bench:start -->"
END = "<!-- bench:end -->"


def _readme_section(sections: list[Section], started: datetime.datetime) -> str:
    lines = [
        START,
        "## Benchmarks",
        "",
        "`uvx nox -s bench` runs `bench/` (never part of the test suite) and writes "
        "[`results.md`](results.md): the machine, medians with min–max, and every "
        "ratio computed pair by pair in the same run. Targets against the measured ratios "
        f"from the last full run ({started:%Y-%m-%d %H:%M} UTC, a shared 2-core machine; "
        "see the results file for the load average and the profiled cause of each miss):",
        "",
        "| target | measured median (min–max) | verdict |",
        "|---|---|---|",
    ]
    for _, row in target_rows(sections):
        assert row.target is not None
        lines.append(
            f"| {row.label} {row.target} | {fmt(row.sample.median)} {row.unit} "
            f"({spread(row.sample)}) | {row.verdict} |"
        )
    lines.append(END)
    return "\n".join(lines)


def _update_readme(sections: list[Section], started: datetime.datetime) -> None:
    """Rewrites the block between the bench markers (appended once if absent)."""
    text = README.read_text("utf-8")
    block = _readme_section(sections, started)
    if START in text and END in text:
        head, _, rest = text.partition(START)
        _, _, tail = rest.partition(END)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    README.write_text(text, "utf-8")
    print(f"updated the bench section of {README}")


async def _main(args: argparse.Namespace) -> int:
    if args.list:
        print("\n".join(CASES))
        return 0
    names = list(CASES) if args.only is None else args.only.split(",")
    unknown = [name for name in names if name not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(CASES)}")
        return 2
    started = datetime.datetime.now(datetime.UTC)
    load_start = load_average()
    print(f"load average at start: {load_start}", flush=True)
    clock = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="subagent-bench-") as work:
        ctx = Context(work=Path(work).resolve(), quick=args.quick)  # noqa: ASYNC240
        sections = await _run_cases(ctx, names, args.case_timeout)
    seconds = time.perf_counter() - clock
    load_end = load_average()
    print(f"\nsuite took {seconds:.0f} s; load average at end: {load_end}")
    output: Path | None = args.output
    if output is None and not args.quick and args.only is None:
        output = BENCH / "results.md"
    if output is not None:
        output.write_text(
            _markdown(
                sections,
                started=started,
                seconds=seconds,
                load_start=load_start,
                load_end=load_end,
                quick=args.quick,
            ),
            "utf-8",
        )
        print(f"wrote {output}")
        for name, text in ctx.figures.items():
            figure = output.with_name(name)
            figure.write_text(text, "utf-8")
            print(f"wrote {figure}")
        if output == BENCH / "results.md":
            _update_readme(sections, started)
    return 1 if any(s.error is not None for s in sections) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions (smoke run)")
    parser.add_argument("--only", help="comma-separated case names: " + ", ".join(CASES))
    parser.add_argument("--list", action="store_true", help="print the case names and exit")
    parser.add_argument(
        "--case-timeout",
        type=float,
        default=300.0,
        help="seconds one case may take before it is recorded as failed (default 300)",
    )
    parser.add_argument("--output", type=Path, help="Markdown file to write")
    args = parser.parse_args()
    return anyio.run(_main, args, backend="asyncio")


if __name__ == "__main__":
    sys.exit(main())
