"""`harness run`: one direct-model agent turn, streamed to the terminal.

The answer text goes to stdout as it streams; tool calls, commands, children and the final
summary go to stderr, so `harness run ... > answer.txt` keeps only the answer. Ctrl-C or
SIGTERM fire the run's cancel signal: the agent stops its commands and children, and the
summary says it was cancelled.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
from model_agent import (
    Agent,
    AgentEvent,
    ChildStarted,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolEnded,
    ToolStarted,
)
from rich.console import Console
from rich.markup import escape
from subagent_core import CancelSignal

from ._agent_factory import agent_config
from ._endpoint import ResolvedEndpoint
from ._exit import EXIT_INCOMPLETE, EXIT_OK
from ._signals import cancel_on_signals


@dataclass(slots=True)
class _Tally:
    tools: int = 0
    children: int = 0
    text_open: bool = False


def run_prompt(
    prompt: str,
    *,
    endpoint: ResolvedEndpoint,
    workspace: Path,
    mode: Literal["ask", "execute"],
    max_steps: int = 50,
) -> int:
    """Runs the agent once; returns 0 when it completed, 1 otherwise."""
    return anyio.run(_run, prompt, endpoint, workspace, mode, max_steps, backend="asyncio")


async def _run(
    prompt: str,
    endpoint: ResolvedEndpoint,
    workspace: Path,
    mode: Literal["ask", "execute"],
    max_steps: int,
) -> int:
    err = Console(stderr=True, highlight=False)
    tally = _Tally()

    def end_text() -> None:
        if tally.text_open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            tally.text_open = False

    def observe(event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            sys.stdout.write(event.text)
            sys.stdout.flush()
            tally.text_open = True
        elif isinstance(event, ReasoningDelta):
            return
        elif isinstance(event, Retrying):
            end_text()
            err.print(
                f"[yellow]model request failed ({event.reason}); retry {event.attempt} "
                f"in {event.delay_seconds:g} s[/]"
            )
        elif isinstance(event, ToolStarted):
            end_text()
            tally.tools += 1
            err.print(f"[cyan]▶ {event.name}[/] [dim]{_clip(event.arguments)}[/]")
        elif isinstance(event, ToolEnded):
            colour = "red" if event.is_error else "green"
            err.print(f"[{colour}]◀ {event.name}[/] [dim]{_clip(event.content)}[/]")
        elif isinstance(event, ChildStarted):
            end_text()
            tally.children += 1
            err.print(
                f"[magenta]⇢ child {event.child_id[:8]} started[/]: {escape(event.description)}"
            )
        else:
            end_text()
            err.print(f"[magenta]⇠ child {event.child_id[:8]} {event.status}[/]")

    cancel = CancelSignal()
    agent = Agent(
        agent_config(endpoint, workspace=workspace, mode=mode, max_steps=max_steps),
        observer=observe,
    )
    async with cancel_on_signals(cancel) as received:
        result = await agent.run(prompt, cancel)
    end_text()
    status = str(result.status)
    usage = result.usage
    tokens = ""
    if usage is not None:
        tokens = (
            f"; tokens in {getattr(usage, 'input_tokens', None) or 0}, "
            f"out {getattr(usage, 'output_tokens', None) or 0}"
        )
    summary = f"{status}: {tally.tools} tool call(s), {tally.children} child(ren){tokens}"
    if received:
        err.print(
            f"[yellow]cancelled by signal; every command and child was stopped[/] ({summary})"
        )
    elif status == "completed":
        err.print(f"[green]{summary}[/]")
    else:
        err.print(f"[red]{summary}[/]")
    return EXIT_OK if status == "completed" else EXIT_INCOMPLETE


def _clip(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= limit else flat[: limit - 1] + "…")
