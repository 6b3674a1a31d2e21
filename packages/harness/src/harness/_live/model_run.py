"""`harness run`: one direct-model agent turn, streamed to the terminal.

The answer text goes to stdout as it streams; tool calls, commands, children and the final
summary go to stderr, so `harness run ... > answer.txt` keeps only the answer. Ctrl-C or
SIGTERM fire the run's cancel signal: the agent stops its commands and children, and the
summary says it was cancelled. In execute mode on a terminal every Execute action is shown
and asked about first (`--yes` skips the question); a failed run prints the library's safe
reason (never the server's own words).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from model_agent import (
    Agent,
    AgentConfig,
    AgentEvent,
    ChildEnded,
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

from harness._config.endpoint import ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config, parse_mcp_flag
from harness._config.paths import workspace_path
from harness._config.settings import MCPServerSettings, WorkMode
from harness._console.exit_codes import EXIT_INCOMPLETE, EXIT_OK, signal_exit_code
from harness._console.inputs import read_prompt
from harness._console.screen import screen_text
from harness._console.signals import cancel_on_signals
from harness._console.terminal_prompt import ask_on_terminal
from harness._console.usage import usage_summary
from harness._registry.model_agent_config import agent_config


@dataclass(slots=True)
class _Tally:
    tools: int = 0
    children: int = 0
    text_open: bool = False


def run_command(
    *,
    prompt: str,
    mode: WorkMode,
    workspace: Path | None,
    model: str | None,
    base_url: str | None,
    config: Path | None,
    max_steps: int,
    ask: bool,
    show_thinking: bool,
    mcp: Sequence[str],
) -> int:
    """`harness run`: the workspace's config and endpoint, the `--mcp` servers over its
    `[mcp.*]` tables (by name), the prompt (`-`: stdin), then `run_prompt`.

    Raises:
        UsageError: a bad workspace, config, endpoint, `--mcp` value or an empty prompt.
    """
    root = workspace_path(workspace)
    settings = load_config(config, workspace=root)
    endpoint = resolve_endpoint(settings.model, base_url=base_url, model=model)
    servers = {item.name: item for item in settings.mcp}
    for value in mcp:
        flagged = parse_mcp_flag(value)
        servers[flagged.name] = flagged
    return run_prompt(
        read_prompt(prompt),
        endpoint=endpoint,
        workspace=root,
        mode=mode,
        max_steps=max_steps,
        ask=ask,
        show_thinking=show_thinking,
        mcp=tuple(servers.values()),
    )


def run_prompt(
    prompt: str,
    *,
    endpoint: ResolvedEndpoint,
    workspace: Path,
    mode: WorkMode,
    max_steps: int = 50,
    ask: bool = True,
    show_thinking: bool = False,
    mcp: Sequence[MCPServerSettings] = (),
) -> int:
    """Runs the agent once; returns 0 completed, 1 otherwise, 128+N when stopped by signal N.

    `ask`: on a terminal, ask before each Execute action (ignored when stdin is not a TTY).
    """
    interactive = ask and sys.stdin.isatty()
    config = agent_config(
        endpoint,
        workspace=workspace,
        mode=mode,
        max_steps=max_steps,
        approve=ask_on_terminal if interactive and mode == "execute" else None,
        # Every Execute action is asked, a delegated child's own commands included.
        approve_child_actions=interactive and mode == "execute",
        mcp=mcp,
    )
    return anyio.run(_run, prompt, config, show_thinking, backend="asyncio")


async def _run(prompt: str, config: AgentConfig, show_thinking: bool) -> int:
    err = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
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
            if show_thinking:
                err.print(escape(screen_text(event.text)), style="dim italic", end="")
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
        elif isinstance(event, ChildEnded):
            end_text()
            err.print(f"[magenta]⇠ child {event.child_id[:8]} {event.status}[/]")
        # Anything else (a child's own streaming, events added later) is not shown here.

    cancel = CancelSignal()
    agent = Agent(config, observer=observe)
    async with cancel_on_signals(cancel) as received:
        result = await agent.run(prompt, cancel)
    end_text()
    status = str(result.status)
    # The run's totals: every model request, the delegated children's included.
    usage = usage_summary(result.usage)
    tokens = "" if usage is None else f"; {usage}"
    summary = f"{status}: {tally.tools} tool call(s), {tally.children} child(ren){tokens}"
    if received:
        err.print(
            f"[yellow]cancelled by signal; every command and child was stopped[/] ({summary})"
        )
        return signal_exit_code(received) or EXIT_INCOMPLETE
    if status == "completed":
        err.print(f"[green]{summary}[/]")
        return EXIT_OK
    err.print(f"[red]{summary}[/]")
    # The library's safe reason: fixed vocabulary, never the server's or the model's words.
    reason = result.error or _STATUS_REASONS.get(status, status)
    err.print(f"harness: the run did not complete: {escape(reason)}")
    return EXIT_INCOMPLETE


_STATUS_REASONS = {
    "cancelled": "the run was cancelled",
    "max-tokens": "the model hit its token limit",
    "step-limit": "the step limit was reached (raise --max-steps)",
    "refusal": "the model refused (content filter)",
}


def _clip(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= limit else flat[: limit - 1] + "…")
