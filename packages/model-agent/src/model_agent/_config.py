"""Configuration of the model endpoint and of the agent."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subagent_core.kit import DEFAULT_MAX_OUTPUT_BYTES

from ._mcp_config import MCPServer, check_mcp_servers
from ._sse import DEFAULT_MAX_EVENT_BYTES
from ._tool import ApprovalCallback, Mode, Runtime, Space, Tool

DEFAULT_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-chat"


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseTimeouts:
    """Per-attempt timeouts of a streaming model request, in seconds."""

    connect_seconds: float = 10.0
    first_byte_seconds: float = 60.0
    idle_seconds: float = 60.0
    """Longest gap between two stream events (keep-alive comments count as liveness)."""
    total_seconds: float = 600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelEndpoint:
    """An OpenAI-compatible chat-completions endpoint."""

    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = None
    model: str = DEFAULT_MODEL
    timeouts: PhaseTimeouts = field(default_factory=PhaseTimeouts)
    retry_statuses: frozenset[int] = frozenset()
    """HTTP statuses the operator opts in to retrying (empty: 429 and 5xx fail at once)."""
    max_tokens: int | None = None
    """Sent as the request's `max_tokens` when set."""
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    """Largest stream event (all its `data:` lines) or line read; past it the request fails
    with `event-too-large` and the event is not kept."""
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    """Most UTF-8 bytes kept of one round's answer text, and of its reasoning: past it the
    text is cut at a character boundary and ends with subagent-core's `OUTPUT_TRUNCATION_MARKER`; the round (tool
    calls, finish reason, usage) is otherwise unchanged."""

    def __post_init__(self) -> None:
        for name in ("max_event_bytes", "max_output_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer")

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        model: str | None = None,
        base_url: str | None = None,
    ) -> ModelEndpoint:
        """DeepSeek defaults: key from `DEEPSEEK_API_KEY`, model from `--model`, then
        `DEEPSEEK_MODEL`, then `deepseek-chat`; base URL from the argument or the default."""
        env = os.environ if environ is None else environ
        return cls(
            base_url=base_url or DEFAULT_BASE_URL,
            api_key=env.get("DEEPSEEK_API_KEY") or None,
            model=model or env.get("DEEPSEEK_MODEL") or DEFAULT_MODEL,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """One agent: where it works, how it may act, which model it talks to."""

    endpoint: ModelEndpoint
    workspace: Path
    mode: Mode = "ask"
    runtime: Runtime = "model"
    space: Space = "local"
    depth: int = 0
    """0 for a top-level agent; 1 for a delegated child (which cannot delegate)."""
    max_steps: int = 50
    """Model rounds before the run ends with `step-limit`."""
    tools: tuple[str, ...] | None = None
    """Restrict the offered tools to these names (None: every tool the dimensions allow)."""
    system_prompt: str | None = None
    context_budget_chars: int = 400_000
    """Past this many characters of conversation, older turns are summarized."""
    delegate_timeout_seconds: float = 600.0
    approve: ApprovalCallback | None = None
    """Asked before Execute actions (process, write) when set; a refusal is a tool error."""
    approve_child_actions: bool = False
    """False: approving a `subagent_delegate` call covers everything that child does (it never
    asks). True: a delegated child's own Execute actions are asked through `approve` too, so a
    host can show its user each command a child runs."""
    shell_candidates: tuple[str, ...] | None = None
    """Shells `process_execute` looks for, in order (None: `/bin/bash`, `/bin/sh`; on Windows
    `pwsh`, `powershell.exe`). Found once when the agent is built, then frozen."""
    mcp_servers: tuple[MCPServer, ...] = ()
    """MCP servers whose tools are offered as `<server>__<tool>`: connected when a run starts,
    listed once and frozen for that run, stopped when it ends."""
    mcp_tools: tuple[Tool, ...] = ()
    """MCP tools a delegated child shares from its parent's run (set by `subagent_delegate`;
    the sessions stay the parent's). Hosts leave it empty."""
    output_schema: Mapping[str, Any] | None = None
    """A JSON Schema the final answer must validate against: asked from the endpoint as
    `response_format` (`json_schema`), checked with `jsonschema`, a non-validating answer
    retried once; then the run fails (`AgentResult.error` = `OUTPUT_SCHEMA_ERROR`). Never
    passed on to a delegated child."""

    def __post_init__(self) -> None:
        check_mcp_servers(self.mcp_servers)
