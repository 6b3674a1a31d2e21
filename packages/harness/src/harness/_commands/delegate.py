"""`harness delegate PROMPT -a NAME`: one subagent run through the registry (an agent by name
or a configured provider)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._options import (
    ApproveChoice,
    BaseURLOption,
    ChildStderrOption,
    ConfigOption,
    FileSystemChoice,
    JSONOption,
    ModelOption,
    PermissionChoice,
    ShowThinkingOption,
    WorkspaceOption,
)
from ._support import cli_errors


@cli_errors
def delegate(
    prompt: Annotated[
        str, typer.Argument(help="The task to hand to the child; - reads it from stdin.")
    ],
    provider: Annotated[
        str,
        typer.Option(
            "--agent",
            "-a",
            "--provider",
            "-p",
            help=(
                "An agent by name from `harness agents` (claude, codex, gemini, qwen, "
                "opencode, …) or a provider from `harness providers` (built in: acp, dsh-sdk, "
                "model)."
            ),
        ),
    ],
    workspace: WorkspaceOption = None,
    config: ConfigOption = None,
    model: ModelOption = None,
    base_url: BaseURLOption = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.001,
            help="Stop the child after this many seconds (it ends aborted, exit 1).",
        ),
    ] = None,
    json: JSONOption = False,
    show_thinking: ShowThinkingOption = False,
    permission: Annotated[
        PermissionChoice | None,
        typer.Option(
            help=(
                "ACP: answer the child's permission requests (and gate its file writes and "
                "terminals): allow, reject, or ask at this terminal (default: the config's)."
            ),
        ),
    ] = None,
    fs: Annotated[
        FileSystemChoice | None,
        typer.Option(
            help="ACP: offer the child this workspace's files: none, read or read-write.",
        ),
    ] = None,
    terminal: Annotated[
        bool | None,
        typer.Option(
            "--terminal/--no-terminal",
            help="ACP: offer the child terminals (commands run as processes of this run).",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Exit 1 when a completed child was refused something (its permission line).",
        ),
    ] = False,
    approve: Annotated[
        ApproveChoice | None,
        typer.Option(
            help=(
                "What the child may do without asking: reads (read and search, the rest "
                "refused), all, or none (default: the config's permission)."
            ),
        ),
    ] = None,
    startup_timeout: Annotated[
        float | None,
        typer.Option(
            "--startup-timeout",
            min=0.001,
            help="Seconds the child may take to start (spawn to ready; the provider's default).",
        ),
    ] = None,
    idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--idle-timeout",
            min=0.001,
            help="Seconds the child may stay silent while it works (the provider's default).",
        ),
    ] = None,
    output_schema: Annotated[
        Path | None,
        typer.Option(
            "--output-schema",
            dir_okay=False,
            help="A JSON Schema file: the answer must be JSON valid against it (printed as JSON).",
        ),
    ] = None,
    child_stderr: ChildStderrOption = False,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help=(
                "Continue the kept session of this name with this prompt, or start it (each "
                "call resumes the conversation in a fresh child; see `harness sessions`)."
            ),
        ),
    ] = None,
    budget_tokens: Annotated[
        int | None,
        typer.Option(
            "--budget-tokens",
            min=1,
            help="Stop the child once it reports more input + output tokens than this "
            "(over the whole session with --session).",
        ),
    ] = None,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            min=0.0,
            help="Stop the child once its reported cost passes this many US dollars "
            "(over the whole session with --session).",
        ),
    ] = None,
) -> None:
    """Run one child through a configured provider and print its result.

    While the child works: a live view on a terminal (streaming answer, a line per tool call),
    plain progress lines otherwise. Then the child's output on stdout, and its stop reason and
    (when it failed) its safe diagnostic on stderr, kept apart. With --json: one JSON object
    per event and a final result object on stdout. Exit 0 when the child completed, 1
    otherwise, 2 for a usage error, 130 when interrupted.
    """
    from harness._live.delegation import ACPOverrides, delegate_command

    raise typer.Exit(
        delegate_command(
            prompt=prompt,
            provider=provider,
            workspace=workspace,
            config=config,
            model=model,
            base_url=base_url,
            timeout_seconds=timeout,
            json=json,
            show_thinking=show_thinking,
            strict=strict,
            output_schema=output_schema,
            child_stderr=child_stderr,
            session=session,
            budget_tokens=budget_tokens,
            budget_usd=budget_usd,
            acp=ACPOverrides(
                permission=None if permission is None else permission.value,
                fs=None if fs is None else fs.value,
                terminal=terminal,
            ),
            approve=None if approve is None else approve.value,
            startup_timeout_seconds=startup_timeout,
            idle_timeout_seconds=idle_timeout,
        )
    )
