"""The thread a child's turns run on: the handshake's parameters and what its answers say.

Every child gets to its thread the same way: `initialize` (this client, opting out of the
notifications it never reads), `account/read`, then `thread/start`, or `thread/resume` for a
session continued by a fresh child. A thread is ephemeral (nothing lands in the user's
rollouts) unless the child has a session's own `CODEX_HOME`: there codex keeps the rollout a
later `thread/resume` continues. The resume's answer leaves the earlier turns out
(`excludeTurns`): they reached their callers when they ran.

Answers are the child's: each reader here takes one fact out of an answer of unknown shape and
says `None` (or `False`) when it is not there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, cast

from ._config import CodexConfig

CLIENT_NAME: Final = "subagent-codex"
"""How this client names itself in `initialize`."""

_OPT_OUT: Final = (
    "item/commandExecution/outputDelta",
    "item/fileChange/outputDelta",
    "command/exec/outputDelta",
    "process/outputDelta",
    "remoteControl/status/changed",
    "account/rateLimits/updated",
    "turn/diff/updated",
)
"""Notifications this client never reads: opting out keeps a chatty child's stdout small."""


def initialize_params() -> dict[str, object]:
    """The `initialize` request's parameters."""
    return {
        "clientInfo": {"name": CLIENT_NAME, "title": None, "version": "0.1.0"},
        "capabilities": {"experimentalApi": False, "optOutNotificationMethods": _OPT_OUT},
    }


def needs_login(account: object) -> bool:
    """True when the `account/read` answer says the model provider needs an OpenAI login and
    there is no account: codex would start a turn that retries offline for ever."""
    if not isinstance(account, dict):
        return False
    answer = cast(Mapping[str, object], account)
    return answer.get("requiresOpenaiAuth") is True and answer.get("account") is None


def start_params(config: CodexConfig, cwd: Path, *, kept: bool) -> dict[str, object]:
    """`thread/start`'s parameters: the workspace, the permission policy, the sandbox and the
    model; `kept` for a thread a session may resume later (not ephemeral)."""
    # `reject` never asks (the sandbox alone decides); anything else asks on request.
    policy = "never" if config.permission == "reject" else "on-request"
    params: dict[str, object] = {
        "cwd": str(cwd),
        "approvalPolicy": policy,
        "sandbox": config.sandbox,
        "ephemeral": not kept,
    }
    if config.model is not None:
        params["model"] = config.model
    return params


def resume_params(config: CodexConfig, cwd: Path, thread: str) -> dict[str, object]:
    """`thread/resume`'s parameters for the kept `thread`: `thread/start`'s, and no turns in
    the answer."""
    params = start_params(config, cwd, kept=True)
    del params["ephemeral"]
    params["threadId"] = thread
    params["excludeTurns"] = True
    return params


def answer_id(answer: object, key: str) -> str | None:
    """The `id` of the object under `key` in an answer: `thread` (of `thread/start` or
    `thread/resume`) or `turn` (of `turn/start`)."""
    if isinstance(answer, dict):
        value = cast(Mapping[str, object], answer).get(key)
        if isinstance(value, dict):
            ident = cast(Mapping[str, object], value).get("id")
            if isinstance(ident, str) and ident:
                return ident
    return None
