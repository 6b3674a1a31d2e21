"""Profile one benchmark subject under cProfile, to find where a missed target's time goes.

    python bench/profile_case.py SCENARIO [--runs N]

Writes `bench/profiles/SCENARIO.txt` (top functions by own time and by cumulative time, wall
clock) and prints its head. cProfile sees this process only: time spent waiting for a child
shows up as the event loop's `select`/`epoll` wait, which is itself the finding in that case.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import case_acp
import case_cancel
import case_delegation
import case_model
import case_process
from _context import BENCH, Context
from _timing import Subject
from model_agent import ModelEndpoint


def _acp_stream(ctx: Context, raw: bool, huge: bool) -> Subject:
    if huge:
        script = ctx.write_json("s.json", {"huge_chunk_bytes": case_acp.HUGE_CHUNK_BYTES})
        size = case_acp.HUGE_CHUNK_BYTES
    else:
        text = case_acp.SMALL_CHUNK_TEXT * case_acp.SMALL_CHUNKS
        script = ctx.write_json("s.json", {"text": text, "chunks": case_acp.SMALL_CHUNKS})
        size = len(text)
    build = case_acp.raw_prompt if raw else case_acp.provider_prompt
    return build(script, ctx.work, size)


def _acp_run(ctx: Context, raw: bool) -> Subject:
    text = "Hello from the fake ACP child."
    script = ctx.write_json("hello.json", {"text": text})
    build = case_acp.raw_whole if raw else case_acp.provider_whole
    return build(script, ctx.work, text)


SCENARIOS: dict[str, Callable[[Context], Subject]] = {
    "acp-run": lambda ctx: _acp_run(ctx, raw=False),
    "acp-run-raw": lambda ctx: _acp_run(ctx, raw=True),
    "acp-stream-small": lambda ctx: _acp_stream(ctx, raw=False, huge=False),
    "acp-stream-small-raw": lambda ctx: _acp_stream(ctx, raw=True, huge=False),
    "acp-stream-huge": lambda ctx: _acp_stream(ctx, raw=False, huge=True),
    "acp-stream-huge-raw": lambda ctx: _acp_stream(ctx, raw=True, huge=True),
    "cancel-acp": lambda ctx: case_cancel.run_subject(
        ctx, "acp", case_cancel.acp_provider(case_cancel.COOPERATIVE)
    ),
    "cancel-sdk": lambda ctx: case_cancel.run_subject(
        ctx, "sdk", case_cancel.sdk_provider(case_cancel.COOPERATIVE)
    ),
    "cancel-process": lambda ctx: case_cancel.process_subject(ctx, case_cancel.COOPERATIVE),
    "process-true": case_process.tool_true,
    "flood-tool": lambda ctx: case_process.tool_flood(ctx, 200_000_000),
}


async def _delegation(ctx: Context, runs: int, profiler: cProfile.Profile) -> None:
    rules = case_delegation.delegation_rules(runs + 1, 100)
    async with case_model.scripted_server(ctx, "delegation", rules) as url:
        endpoint = ModelEndpoint(base_url=url, api_key="unused", model=case_model.MODEL)
        subject = case_delegation.parents(ctx, endpoint, [])
        await subject()
        profiler.enable()
        for _ in range(runs):
            print(f"run: {await subject():.3f} s")
        profiler.disable()


async def _main(name: str, runs: int) -> str:
    profiler = cProfile.Profile(time.perf_counter)
    with tempfile.TemporaryDirectory(prefix="subagent-profile-") as work:
        ctx = Context(work=Path(work).resolve(), quick=True)  # noqa: ASYNC240
        if name == "delegation":
            await _delegation(ctx, runs, profiler)
        else:
            subject = SCENARIOS[name](ctx)
            await subject()  # warm-up, not profiled
            profiler.enable()
            for _ in range(runs):
                print(f"run: {await subject() * 1000:.1f} ms")
            profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs()
    out.write(f"# cProfile of `{name}`, {runs} run(s), wall clock\n\n## by own time\n")
    stats.sort_stats("tottime").print_stats(25)
    out.write("\n## by cumulative time\n")
    stats.sort_stats("cumulative").print_stats(35)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenario", choices=[*SCENARIOS, "delegation"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    text = anyio.run(_main, args.scenario, args.runs, backend="asyncio")
    target = BENCH / "profiles" / f"{args.scenario}.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_text(text, "utf-8")
    print("\n".join(text.splitlines()[:60]))
    print(f"... written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
