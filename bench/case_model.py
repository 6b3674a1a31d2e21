"""The model client against the official `openai` client, on the scripted model server.

The server runs in its own process (`python -m model_agent.testing`) so its work does not share
the clients' event loop. Both clients are built once and reused (pooled connections), as an
agent would.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
from _context import PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Subject, paired, ratios
from anyio.streams.text import TextReceiveStream
from model_agent import AgentEvent, ModelClient, ModelEndpoint, TextDelta
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

SHORT_TEXT = "The quick brown fox jumps over the lazy dog."
SHORT_CHUNKS = 8
LONG_TOKENS = 2_000
LONG_TEXT = "tok " * LONG_TOKENS
MODEL = "bench-model"


@asynccontextmanager
async def scripted_server(ctx: Context, name: str, rules: object) -> AsyncGenerator[str]:
    """Starts the scripted server process on `rules`; yields its base URL."""
    script = ctx.write_json(f"{name}.json", {"rules": rules})
    async with await anyio.open_process(
        [PYTHON, "-m", "model_agent.testing", "--script", script]
    ) as proc:
        try:
            assert proc.stdout is not None
            line = ""
            with anyio.fail_after(60):
                async for text in TextReceiveStream(proc.stdout):
                    line += text
                    if "\n" in line:
                        break
            yield line.strip()
        finally:
            proc.terminate()
            with anyio.move_on_after(5):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def _messages(kind: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{kind}: answer please"}]


def _openai_messages(kind: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "user", "content": f"{kind}: answer please"}]


def ours(client: ModelClient, kind: str, expected: str, ttft: bool) -> Subject:
    async def subject() -> float:
        first: list[float] = []

        def observe(event: AgentEvent) -> None:
            if isinstance(event, TextDelta) and not first:
                first.append(time.perf_counter())

        started = time.perf_counter()
        reply = await client.complete(_messages(kind), observer=observe)
        elapsed = time.perf_counter() - started
        if reply.content != expected:
            raise BenchError("the model client returned other text")
        return first[0] - started if ttft else elapsed

    return subject


def theirs(client: AsyncOpenAI, kind: str, expected: str, ttft: bool) -> Subject:
    async def subject() -> float:
        first: float | None = None
        parts: list[str] = []
        started = time.perf_counter()
        stream: AsyncStream[ChatCompletionChunk] = await client.chat.completions.create(
            model=MODEL,
            messages=_openai_messages(kind),
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                if first is None:
                    first = time.perf_counter()
                parts.append(chunk.choices[0].delta.content)
        elapsed = time.perf_counter() - started
        if "".join(parts) != expected or first is None:
            raise BenchError("the openai client returned other text")
        return first - started if ttft else elapsed

    return subject


async def model_client(ctx: Context) -> list[Section]:
    section = Section(
        "Model client vs the official openai client (scripted server)",
        notes=[
            f"TTFT: request start -> first text delta, a reply of {SHORT_CHUNKS} chunks; "
            f"throughput: one reply of {LONG_TOKENS:,} one-token chunks, tokens per second "
            "of the whole request.",
            "Both clients stream `chat/completions` with `stream_options.include_usage` from "
            "the same server process, reused across requests; openai with `max_retries=0`.",
        ],
    )
    rules = [
        {"match": "ttft", "replies": [{"text": SHORT_TEXT, "chunks": SHORT_CHUNKS}]},
        {"match": "throughput", "replies": [{"text": LONG_TEXT, "chunks": LONG_TOKENS}]},
    ]
    async with scripted_server(ctx, "model-client", rules) as base_url:
        endpoint = ModelEndpoint(base_url=base_url, api_key="unused", model=MODEL)
        official = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
        async with ModelClient(endpoint) as client:
            try:
                first = await paired(
                    {
                        "ours": ours(client, "ttft", SHORT_TEXT, ttft=True),
                        "openai": theirs(official, "ttft", SHORT_TEXT, ttft=True),
                    },
                    warmup=ctx.reps(5, 2),
                    repeat=ctx.reps(40, 30),
                )
                rate = await paired(
                    {
                        "ours": ours(client, "throughput", LONG_TEXT, ttft=False),
                        "openai": theirs(official, "throughput", LONG_TEXT, ttft=False),
                    },
                    warmup=ctx.reps(2, 1),
                    repeat=ctx.reps(12, 3),
                )
            finally:
                await official.close()
    section.add("ModelClient TTFT", first["ours"].scaled(1000), "ms")
    section.add("openai TTFT", first["openai"].scaled(1000), "ms")
    section.add(
        "ModelClient / openai median TTFT",
        ratios(first["ours"], first["openai"]),
        "×",
        Target("<=", 1.05),
    )
    section.add("ModelClient throughput", rate["ours"].inverted(LONG_TOKENS), "tokens/s")
    section.add("openai throughput", rate["openai"].inverted(LONG_TOKENS), "tokens/s")
    section.add(
        "ModelClient / openai throughput",
        ratios(rate["openai"], rate["ours"]),
        "×",
        Target(">=", 1.0),
    )
    return [section]
