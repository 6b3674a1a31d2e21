"""Asking the person at the terminal before an action runs (`run`'s Execute actions, a child's
permission requests with `delegate --permission ask`).

The question shows what the model or child wrote, stripped of control codes; the default
answer is no, and anything but `y`/`yes` refuses.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import anyio

from .screen import screen_text


def _action_text(name: str, arguments: Mapping[str, Any]) -> str:
    """What an Execute action will do, in one line for the question (model text: sanitised)."""
    command = arguments.get("command")
    if isinstance(command, str):
        shown = command
    else:
        shown = json.dumps(dict(arguments), ensure_ascii=False, default=str)
    flat = " ".join(screen_text(shown).split())
    return flat if len(flat) <= 300 else flat[:299] + "…"


_asking = anyio.Lock()
"""One question on the terminal at a time (parallel children may ask together)."""


async def ask_on_terminal(name: str, arguments: Mapping[str, Any]) -> bool:
    """Asks the person at the terminal whether the agent may run this action (default: no)."""
    question = f"Allow {name}: {_action_text(name, arguments)} ? [y/N] "

    def ask() -> bool:
        sys.stderr.write(question)
        sys.stderr.flush()
        answer = sys.stdin.readline()
        return answer.strip().lower() in ("y", "yes")

    async with _asking:
        return await anyio.to_thread.run_sync(ask, abandon_on_cancel=True)


class PermissionQuestion(Protocol):
    """The closed facts and the child's own words of a child's permission request."""

    @property
    def tool_kind(self) -> str: ...

    @property
    def option_kinds(self) -> tuple[str, ...]: ...

    @property
    def title(self) -> str | None: ...


def terminal_permission() -> Callable[[PermissionQuestion], Awaitable[str | None]]:
    """A child permission callback that asks at the terminal; answers with an offered kind.

    Yes selects `allow_once` (else `allow_always`), no selects `reject_once` (else
    `reject_always`); when no such option is offered the request is answered `cancelled`.
    """

    async def decide(question: PermissionQuestion) -> str | None:
        allowed = await ask_on_terminal(
            f"the child to {question.tool_kind}",
            {"command": question.title or "(the child gave no description)"},
        )
        wanted = ("allow_once", "allow_always") if allowed else ("reject_once", "reject_always")
        return next((kind for kind in wanted if kind in question.option_kinds), None)

    return decide
