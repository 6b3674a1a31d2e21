"""`harness mcp`'s tools as `tools/list` describes them: names, words, JSON Schemas in and out.

Every tool declares both schemas, so a host can validate what it sends and what it gets (the
official client checks every structured result against the output schema).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, get_args

from subagent_core import StopReason, ToolKind

from harness.fanout import ISOLATION_MODES

MAX_PROMPT_BYTES: Final = 1 << 20
"""The longest prompt a call may carry (1 MiB of UTF-8)."""
MAX_FANOUT_AGENTS: Final = 8
"""The most children one `fanout` call may ask for."""
MAX_PROTECT_GLOBS: Final = 32
"""The most `protect` globs one `fanout` call may give."""
MAX_WAIT_SECONDS: Final = 300.0
"""The longest `delegate_result` waits in one call (clients cut long calls)."""
SESSION_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RUN_ID: Final = re.compile(r"run-[0-9a-f]{16}")
STOP_REASONS: Final[tuple[str, ...]] = get_args(StopReason)
"""Core's closed stop reasons, in its order (the schema's enum follows core's vocabulary)."""
TOOL_KINDS: Final[tuple[str, ...]] = get_args(ToolKind)
"""Core's closed tool kinds (the ACP set), in its order."""


_NULLABLE_INT: Final = {"type": ["integer", "null"], "minimum": 0}
_USAGE: Final = {
    "type": ["object", "null"],
    "properties": {
        "input_tokens": _NULLABLE_INT,
        "output_tokens": _NULLABLE_INT,
        "cached_input_tokens": _NULLABLE_INT,
    },
    "required": ["input_tokens", "output_tokens", "cached_input_tokens"],
    "additionalProperties": False,
}
_COST: Final = {
    "type": ["object", "null"],
    "properties": {
        "amount": {"type": "number"},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    },
    "required": ["amount", "currency"],
    "additionalProperties": False,
}
AGENT_INPUTS: Final[dict[str, Any]] = {
    "agent": {
        "type": "string",
        "minLength": 1,
        "description": "An agent by name (see `agents`) or a provider of the server's config.",
    },
    "prompt": {"type": "string", "minLength": 1, "description": "The task, in full."},
    "workspace": {
        "type": "string",
        "minLength": 1,
        "description": (
            "The directory the child works in: inside the server's root (relative to it, or "
            "absolute). Default: the root (for a session: where it last ran)."
        ),
    },
    "timeout_seconds": {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "Stop the child after this long (it then ends `aborted`).",
    },
}
DELEGATE_INPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        **AGENT_INPUTS,
        "session": {
            "type": "string",
            "pattern": f"^{SESSION_NAME.pattern}$",
            "description": (
                "Continue the kept session of this name (or start it): the child sees the "
                "earlier turns. `sessions` lists them."
            ),
        },
        "output_schema": {
            "type": "object",
            "description": "A JSON Schema the answer must validate against (if the agent can).",
        },
        "budget_tokens": {
            "type": "integer",
            "minimum": 1,
            "description": "The most input plus output tokens the run (or session) may use.",
        },
        "budget_usd": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "The most the run (or session) may cost, in USD.",
        },
    },
    "required": ["agent", "prompt"],
    "additionalProperties": False,
}
_RESULT_PROPERTIES: Final[dict[str, Any]] = {
    "output": {"type": "string", "description": "The child's answer (its own text)."},
    "structured_output": {"description": "The answer as JSON, when `output_schema` held."},
    "stop_reason": {"type": ["string", "null"], "enum": [*STOP_REASONS, None]},
    "diagnostic": {
        "type": ["string", "null"],
        "description": "Why it did not complete: fixed-vocabulary text, never the child's.",
    },
    "usage": _USAGE,
    "cost": _COST,
    "session": {
        "type": ["object", "null"],
        "properties": {"name": {"type": "string"}, "turn": {"type": "integer", "minimum": 0}},
        "required": ["name", "turn"],
        "additionalProperties": False,
    },
    "files_changed": {
        "type": ["integer", "null"],
        "minimum": 0,
        "description": "Files of the workspace's git tree that changed during the run (null "
        "outside a git repository).",
    },
    "timed_out": {"type": "boolean"},
}
_RESULT_REQUIRED: Final = [
    "output",
    "structured_output",
    "stop_reason",
    "diagnostic",
    "usage",
    "cost",
    "session",
    "files_changed",
    "timed_out",
]
_ACTIVITY_PROPERTIES: Final[dict[str, Any]] = {
    "run_id": {"type": "string", "pattern": f"^{RUN_ID.pattern}$"},
    "state": {"type": "string", "enum": ["queued", "running", "settled"]},
    "elapsed_seconds": {"type": "number", "minimum": 0},
    "tool_calls": {
        "type": "object",
        "properties": {
            "total": {"type": "integer", "minimum": 0},
            "by_kind": {
                "type": "object",
                "propertyNames": {"enum": list(TOOL_KINDS)},
                "additionalProperties": {"type": "integer", "minimum": 1},
            },
        },
        "required": ["total", "by_kind"],
        "additionalProperties": False,
    },
    "tokens": {"type": ["integer", "null"], "minimum": 0},
}
_STATUS_OUTPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {**_ACTIVITY_PROPERTIES, "stop_reason": _RESULT_PROPERTIES["stop_reason"]},
    "required": ["run_id", "state", "elapsed_seconds", "tool_calls", "tokens", "stop_reason"],
    "additionalProperties": False,
}
_RUN_ID_INPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"run_id": {"type": "string", "description": "From `delegate_start`."}},
    "required": ["run_id"],
    "additionalProperties": False,
}
_NO_INPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}
_AGENTS_OUTPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "agents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"type": "string"},
                    "preset": {"type": ["string", "null"]},
                    "configured": {"type": "boolean"},
                    "builtin": {"type": "boolean"},
                    "found": {"type": "boolean"},
                    "credentials": {"type": "array", "items": {"type": "string"}},
                    "credentials_set": {"type": "array", "items": {"type": "string"}},
                    "needs_credential": {"type": "boolean"},
                    "install": {"type": ["string", "null"]},
                },
                "required": [
                    "name",
                    "kind",
                    "preset",
                    "configured",
                    "builtin",
                    "found",
                    "credentials",
                    "credentials_set",
                    "needs_credential",
                    "install",
                ],
                "additionalProperties": False,
            },
        }
    },
    "required": ["agents"],
    "additionalProperties": False,
}
_FANOUT_CHILD: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "number": {"type": "integer", "minimum": 1},
        "agent": {"type": "string"},
        "stop_reason": _RESULT_PROPERTIES["stop_reason"],
        "output": {"type": "string"},
        "diagnostic": {"type": ["string", "null"]},
        "timed_out": {"type": "boolean"},
        "wall_seconds": {"type": "number", "minimum": 0},
        "usage": _USAGE,
        "cost": _COST,
        "files_changed": {"type": "integer", "minimum": 0},
        "lines_added": {"type": "integer", "minimum": 0},
        "lines_deleted": {"type": "integer", "minimum": 0},
        "patch": {"type": ["string", "null"], "description": "The child's diff, for git apply."},
        "verify": {"type": ["string", "null"], "description": "The verify outcome, if asked."},
        "rank": {"type": "integer", "minimum": 1, "description": "1 for the best child."},
    },
    "required": [
        "number",
        "agent",
        "stop_reason",
        "output",
        "diagnostic",
        "timed_out",
        "wall_seconds",
        "usage",
        "cost",
        "files_changed",
        "lines_added",
        "lines_deleted",
        "patch",
        "verify",
        "rank",
    ],
    "additionalProperties": False,
}
_SESSIONS_OUTPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "sessions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "agent": {"type": "string"},
                    "workspace": {"type": ["string", "null"]},
                    "turns": {"type": "integer", "minimum": 0},
                    "usage": _USAGE,
                    "cost": _COST,
                    "last_used": {"type": "number"},
                },
                "required": ["name", "agent", "workspace", "turns", "usage", "cost", "last_used"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["sessions"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as `tools/list` describes it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    read_only: bool = False


TOOLS: Final = (
    ToolSpec(
        "agents",
        "The agents this server can delegate to: presets and configured providers, whether "
        "each is installed, which credential variables are set (names only), how to install.",
        _NO_INPUT,
        _AGENTS_OUTPUT,
        read_only=True,
    ),
    ToolSpec(
        "delegate",
        "Run one child agent on a task (or one turn of a kept session) and return when it "
        "settles: its answer, stop reason, a safe diagnostic, tokens and cost. The child's "
        "whole process tree is stopped when the call ends or is cancelled. For long tasks "
        "use delegate_start and delegate_result.",
        DELEGATE_INPUT,
        {
            "type": "object",
            "properties": _RESULT_PROPERTIES,
            "required": _RESULT_REQUIRED,
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        "delegate_start",
        "Start one child as delegate does and return at once with its run_id; follow it with "
        "delegate_status, delegate_result and delegate_cancel.",
        DELEGATE_INPUT,
        {
            "type": "object",
            "properties": {"run_id": _ACTIVITY_PROPERTIES["run_id"]},
            "required": ["run_id"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        "delegate_status",
        "How a started run is doing: queued, running or settled; elapsed time, tool calls "
        "by kind, tokens so far.",
        _RUN_ID_INPUT,
        _STATUS_OUTPUT,
        read_only=True,
    ),
    ToolSpec(
        "delegate_result",
        "The result of a started run, waiting up to wait_seconds for it to settle (default "
        "0: answer at once). Until it settles, state says so and stop_reason is null.",
        {
            "type": "object",
            "properties": {
                **_RUN_ID_INPUT["properties"],
                "wait_seconds": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS},
            },
            "required": ["run_id"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {**_ACTIVITY_PROPERTIES, **_RESULT_PROPERTIES},
            "required": [
                "run_id",
                "state",
                "elapsed_seconds",
                "tool_calls",
                "tokens",
                *_RESULT_REQUIRED,
            ],
            "additionalProperties": False,
        },
        read_only=True,
    ),
    ToolSpec(
        "delegate_cancel",
        "Cancel a started run: its child is stopped with its whole process tree. Returns its "
        "status once it has settled.",
        _RUN_ID_INPUT,
        _STATUS_OUTPUT,
    ),
    ToolSpec(
        "fanout",
        "Run the same task on several agents at once, each in its own git worktree (or a "
        "copy), then compare: stop reason, time, tokens, cost, lines changed, and each "
        "child's patch file (apply the one you pick with git apply).",
        {
            "type": "object",
            "properties": {
                "agents": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": MAX_FANOUT_AGENTS,
                },
                "prompt": AGENT_INPUTS["prompt"],
                "isolation": {"type": "string", "enum": list(ISOLATION_MODES)},
                "verify": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "A shell command run in each child's worktree after it settles: its "
                        "result (pass, fail (exit N), timeout, tampered) ranks the children."
                    ),
                },
                "protect": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "maxItems": MAX_PROTECT_GLOBS,
                    "description": (
                        "Globs of files a child must not change for its verify to count (the "
                        "test configuration and the files the command names are protected "
                        "already)."
                    ),
                },
                "verify_timeout_seconds": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Each verify's bound (default 600 s).",
                },
                "workspace": AGENT_INPUTS["workspace"],
                "timeout_seconds": AGENT_INPUTS["timeout_seconds"],
            },
            "required": ["agents", "prompt"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "isolation": {"type": "string", "enum": list(ISOLATION_MODES)},
                "completed": {"type": "integer", "minimum": 0},
                "total": {"type": "integer", "minimum": 0},
                "children": {"type": "array", "items": _FANOUT_CHILD},
            },
            "required": ["isolation", "completed", "total", "children"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        "sessions",
        "The kept sessions (continue one with delegate's session argument), most recently "
        "used first.",
        _NO_INPUT,
        _SESSIONS_OUTPUT,
        read_only=True,
    ),
    ToolSpec(
        "session_close",
        "Delete a kept session (its record and the child's own state).",
        {
            "type": "object",
            "properties": {"session": DELEGATE_INPUT["properties"]["session"]},
            "required": ["session"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"session": {"type": "string"}, "closed": {"type": "boolean"}},
            "required": ["session", "closed"],
            "additionalProperties": False,
        },
    ),
)
TOOL_NAMES: Final = frozenset(spec.name for spec in TOOLS)
