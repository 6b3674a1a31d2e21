"""The tools one agent offers, their JSON schemas, and the guarded way every call runs."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from ._config import AgentConfig
from ._delegate_tool import SubagentDelegateTool
from ._gating import (
    EXECUTE_ACTIONS,
    PROCESS_EXECUTE,
    SUBAGENT_DELEGATE,
    call_rejection,
    visible_tools,
)
from ._model_run import ChildAgentFactory
from ._process_tool import ProcessExecuteTool
from ._round import ToolCall
from ._shell import find_shell
from ._tool import RequestContext, Tool, ToolOutcome
from ._workspace_tools import (
    EditFileTool,
    ListDirectoryTool,
    ReadFileTool,
    SearchTextTool,
    WriteFileTool,
)

DECLINED_TEXT = "the user declined this action"


class Toolset:
    """Built once per agent: the shell it found, the tools it offers, the diagnostics."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        agent_factory: ChildAgentFactory,
        extra_tools: Sequence[Tool] = (),
    ) -> None:
        self._config = config
        wants_shell = config.runtime == "model" and config.space == "local"
        self.shell: str | None = find_shell(config.shell_candidates) if wants_shell else None
        """The shell frozen for this agent's requests (None: no process tool)."""
        visibility = visible_tools(
            runtime=config.runtime,
            mode=config.mode,
            space=config.space,
            depth=config.depth,
            shell=self.shell,
            shell_candidates=config.shell_candidates,
        )
        self.diagnostics: tuple[str, ...] = visibility.diagnostics
        builders: dict[str, Tool] = {}
        for name in visibility.tools:
            builders[name] = _builtin(name, config, agent_factory)
        for tool in extra_tools:
            if tool.name in builders:
                raise ValueError(f"a tool named {tool.name!r} is already offered")
            builders[tool.name] = tool
        allowed = None if config.tools is None else set(config.tools)
        self._tools: dict[str, Tool] = {
            name: tool for name, tool in builders.items() if allowed is None or name in allowed
        }

    def with_tools(self, tools: Sequence[Tool]) -> Toolset:
        """A copy also offering `tools` (a run's MCP snapshot), under the same name filter."""
        allowed = self._config.tools
        extended = copy.copy(self)
        extended._tools = dict(self._tools)
        for tool in tools:
            if tool.name not in extended._tools and (allowed is None or tool.name in allowed):
                extended._tools[tool.name] = tool
        return extended

    @property
    def names(self) -> tuple[str, ...]:
        """The offered tool names, in offering order."""
        return tuple(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """The `tools` array of a chat-completions request."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in self._tools.values()
        ]

    async def call(self, call: ToolCall, context: RequestContext) -> ToolOutcome:
        """Validates, approves (Execute actions) and runs one call; failures are tool errors."""
        rejection = call_rejection(call.name, context)
        if rejection is not None:
            return ToolOutcome(rejection, is_error=True)
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolOutcome("tool call rejected: no such tool", is_error=True)
        arguments = _parse_arguments(call.arguments)
        if arguments is None:
            return ToolOutcome("invalid arguments: expected a JSON object", is_error=True)
        approve = self._config.approve
        # An Execute child never asks for approval itself, so the delegate call is the action
        # the host approves for it: one approval covers everything that child does.
        # A tool may say it acts too (`needs_approval`: an MCP tool without `readOnlyHint`).
        acts = (
            call.name in EXECUTE_ACTIONS
            or (call.name == SUBAGENT_DELEGATE and context.mode == "execute")
            or getattr(tool, "needs_approval", False) is True
        )
        if approve is not None and acts:
            if not await approve(call.name, arguments):
                return ToolOutcome(DECLINED_TEXT, is_error=True)
            rejection = call_rejection(call.name, context)
            if rejection is not None:
                return ToolOutcome(rejection, is_error=True)
        return await tool.call(arguments, context)


def _builtin(name: str, config: AgentConfig, agent_factory: ChildAgentFactory) -> Tool:
    if name == PROCESS_EXECUTE:
        return ProcessExecuteTool()
    if name == SUBAGENT_DELEGATE:
        return SubagentDelegateTool(config, agent_factory=agent_factory)
    tools: dict[str, type[Tool]] = {
        "read_file": ReadFileTool,
        "list_directory": ListDirectoryTool,
        "search_text": SearchTextTool,
        "write_file": WriteFileTool,
        "edit_file": EditFileTool,
    }
    return tools[name]()


def _parse_arguments(text: str) -> Mapping[str, Any] | None:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    return cast(dict[str, Any], value)
