"""`subagent_delegate` with `children`: several tasks in one call, run concurrently.

    {"children": [{task, description, tools?}, …]}   (1 to MAX_CHILDREN entries)
      validate every entry first (one bad entry fails the whole call, nothing starts)
      → one task per child: queue slot (the same process-wide limit of 3) → run → outcome
      → {"status", "children": [today's result of each child, in the order given]}

Each child is exactly what a single call would run (same inheritance, timeout, cancel and
events); only the admission is shared, so a fan-out of five runs three at once and queues two.
The children work in the parent's workspace: no worktrees, the parent's workspace rules apply.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import anyio

from ._tool import ToolOutcome

_Child = TypeVar("_Child")

MAX_CHILDREN = 8
"""Most children one call may ask for (the queue holds 32 waiting in the whole process)."""

CHILDREN_SCHEMA: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_CHILDREN,
    "description": (
        "Instead of task/description: several independent children run at once (at most "
        f"{MAX_CHILDREN}; 3 run concurrently, the rest wait). Each gets its own task."
    ),
    "items": {
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "The complete instructions for it."},
            "description": {"type": "string", "description": "A short label (3-7 words)."},
            "tools": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Optional subset of your tool names it may use.",
            },
        },
        "required": ["task", "description"],
        "additionalProperties": False,
    },
}


class InvalidChildrenError(ValueError):
    """The `children` argument is refused; the message is fixed text."""


def child_arguments(arguments: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The entries of `children`, or None for a single-child call.

    Raises:
        InvalidChildrenError: `children` mixed with single-child arguments, not a list of
            objects, empty, or longer than `MAX_CHILDREN`.
    """
    if "children" not in arguments:
        return None
    if set(arguments) != {"children"}:
        raise InvalidChildrenError(
            "invalid arguments: give either `children` or task/description/tools, not both"
        )
    raw = arguments["children"]
    if not isinstance(raw, list) or not all(
        isinstance(item, dict) for item in cast(list[Any], raw)
    ):
        raise InvalidChildrenError("invalid arguments: `children` must be a list of objects")
    entries = cast(list[Mapping[str, Any]], raw)
    if not entries:
        raise InvalidChildrenError("invalid arguments: `children` must not be empty")
    if len(entries) > MAX_CHILDREN:
        raise InvalidChildrenError(
            f"invalid arguments: at most {MAX_CHILDREN} children in one call"
        )
    return entries


async def run_children(
    children: Sequence[_Child], run_one: Callable[[_Child], Awaitable[ToolOutcome]]
) -> ToolOutcome:
    """Runs every child at once (each through `run_one`, which queues it) and combines them.

    `status` is `completed` when every child completed, `cancelled` when every one was
    cancelled, `failed` otherwise; the call is a tool error unless every child completed.
    """
    outcomes: list[ToolOutcome | None] = [None] * len(children)

    async def one(index: int, child: _Child) -> None:
        outcomes[index] = await run_one(child)

    async with anyio.create_task_group() as tg:
        for index, child in enumerate(children):
            tg.start_soon(one, index, child)
    results = [_parsed(outcome) for outcome in outcomes]
    statuses = {result.get("status") for result in results}
    status = "completed" if statuses == {"completed"} else "failed"
    if statuses == {"cancelled"}:
        status = "cancelled"
    content = json.dumps({"status": status, "children": results}, ensure_ascii=False)
    return ToolOutcome(content, is_error=status != "completed")


def _parsed(outcome: ToolOutcome | None) -> dict[str, Any]:
    """One child's model-facing JSON object (every outcome of `run_one` is one)."""
    assert outcome is not None  # the task group ran every child to its outcome
    value: object = json.loads(outcome.content)
    assert isinstance(value, dict)
    return cast(dict[str, Any], value)
