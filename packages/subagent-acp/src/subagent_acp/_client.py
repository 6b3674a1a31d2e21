"""The ACP client's request handlers: what the parent does when the child asks.

Every refusal is a JSON-RPC error with fixed text, and every handler raises nothing but
`RequestError`, so the SDK never logs (child text included) on the host's root logger. File and
terminal services answer only when `ACPConfig` enabled them; otherwise "method not found", as
for any method the client does not offer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Final

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from subagent_core import ToolKind
from subagent_core.kit import ProcessOutcome, Turn

from ._fs import FSRefusal, WorkspaceFiles
from ._permission import allows, choose
from ._terminals import TerminalRefusal, Terminals

_log = logging.getLogger("subagent_acp")

REFUSED_CODE: Final = -32602
"""JSON-RPC code of a refused file or terminal request (fixed text in the message)."""
NOT_FOUND_CODE: Final = -32002
"""ACP's `resource_not_found`."""

WRITES_NOT_PERMITTED: Final = "writes are not permitted"
NOT_PERMITTED: Final = "the parent's permission policy refused this request"
FAILED: Final = "the client could not handle this request"


def _no_turn() -> Turn | None:
    """Before a child is bound nothing is decided: permissions are answered `cancelled`."""
    return None


class ACPClient:
    """One child's client side.

    `session/update` never reaches here: the transport delivers it in arrival order.
    """

    def __init__(self) -> None:
        self._turn: Callable[[], Turn | None] = _no_turn
        self._files: WorkspaceFiles | None = None
        self._writes = False
        self._allow_writes = False
        self.terminals: Terminals | None = None
        """The child's terminals, once its service task holds them ("method not found"
        without)."""

    def bind(
        self,
        turn: Callable[[], Turn | None],
        *,
        files: WorkspaceFiles | None,
        writes: bool,
        allow_writes: bool,
    ) -> None:
        """Attaches the child's services; until then permissions are answered `cancelled` and
        file requests "method not found".

        `turn` names the turn running now: its gate decides permissions, and its idle clock
        is paused while the child waits on a terminal command the parent runs for it (its
        silence then is the command's). Without a turn nothing is allowed.
        """
        self._turn = turn
        self._files = files
        self._writes = writes
        self._allow_writes = allow_writes

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        choices = [(option.option_id, str(option.kind)) for option in options]
        turn = self._turn()
        if turn is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        try:
            choice = await choose(
                turn.gate,
                tool_call.kind,
                choices,
                title=tool_call.title,
                raw_input=tool_call.raw_input,
            )
        except Exception:
            _log.exception("deciding a permission request failed")
            choice = None
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=choice[0], outcome="selected")
        )

    # -- fs ----------------------------------------------------------------------------------

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        files = self._files
        if files is None:
            raise RequestError.method_not_found("fs/read_text_file")
        try:
            content = await files.read(
                path, line, limit, missing_as_empty=self._writes and self._allow_writes
            )
        except FSRefusal as refusal:
            raise _fs_error(refusal) from None
        except Exception:
            raise _failed("fs/read_text_file") from None
        return ReadTextFileResponse(content=content)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        files = self._files
        if files is None or not self._writes:
            raise RequestError.method_not_found("fs/write_text_file")
        if not self._allow_writes:
            _log.info("refused a client file write: the request does not allow writes")
            raise RequestError(REFUSED_CODE, WRITES_NOT_PERMITTED)
        raw_input = {"path": path, "bytes": len(content)}
        if not await self._allows("edit", title=f"Write {path}", raw_input=raw_input):
            raise RequestError(REFUSED_CODE, NOT_PERMITTED)
        try:
            await files.write(path, content)
        except FSRefusal as refusal:
            raise _fs_error(refusal) from None
        except Exception:
            raise _failed("fs/write_text_file") from None
        return WriteTextFileResponse()

    # -- terminals ---------------------------------------------------------------------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        terminals = self._need_terminals("terminal/create")
        argv = [command, *(args or [])]
        raw_input = {"command": command, "args": list(args or []), "cwd": cwd}
        title = " ".join(argv)
        if not await self._allows("execute", title=title, raw_input=raw_input):
            raise RequestError(REFUSED_CODE, NOT_PERMITTED)
        variables = {variable.name: variable.value for variable in env or []}
        try:
            terminal_id = await terminals.create(
                command, args or [], variables, cwd, output_byte_limit
            )
        except TerminalRefusal as refusal:
            raise RequestError(REFUSED_CODE, str(refusal)) from None
        except Exception:
            raise _failed("terminal/create") from None
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminals = self._need_terminals("terminal/output")
        try:
            output, truncated, outcome = terminals.output(terminal_id)
        except TerminalRefusal as refusal:
            raise RequestError(REFUSED_CODE, str(refusal)) from None
        return TerminalOutputResponse(
            output=output, truncated=truncated, exit_status=_exit_status(outcome)
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminals = self._need_terminals("terminal/wait_for_exit")
        turn = self._turn()
        try:
            with nullcontext() if turn is None else turn.idle.paused():
                outcome = await terminals.wait_for_exit(terminal_id)
        except TerminalRefusal as refusal:
            raise RequestError(REFUSED_CODE, str(refusal)) from None
        status = _exit_status(outcome)
        if status is None:
            return WaitForTerminalExitResponse()
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        terminals = self._need_terminals("terminal/kill")
        try:
            await terminals.kill(terminal_id)
        except TerminalRefusal as refusal:
            raise RequestError(REFUSED_CODE, str(refusal)) from None
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        terminals = self._need_terminals("terminal/release")
        try:
            await terminals.release(terminal_id)
        except TerminalRefusal as refusal:
            raise RequestError(REFUSED_CODE, str(refusal)) from None
        return ReleaseTerminalResponse()

    async def _allows(self, kind: ToolKind, *, title: str, raw_input: object) -> bool:
        turn = self._turn()
        return turn is not None and await allows(turn.gate, kind, title=title, raw_input=raw_input)

    def _need_terminals(self, method: str) -> Terminals:
        # Without the capability the SDK would answer these optional methods with `null`,
        # which agents reject: refuse them explicitly.
        if self.terminals is None:
            raise RequestError.method_not_found(method)
        return self.terminals


def _fs_error(refusal: FSRefusal) -> RequestError:
    code = NOT_FOUND_CODE if refusal.not_found else REFUSED_CODE
    return RequestError(code, str(refusal))


def _failed(method: str) -> RequestError:
    _log.exception("the client failed to handle %s", method)
    return RequestError(-32603, FAILED)


def _exit_status(outcome: ProcessOutcome | None) -> TerminalExitStatus | None:
    if outcome is None:
        return None
    code = outcome.exit_code
    return TerminalExitStatus(
        exit_code=code if code is not None and code >= 0 else None, signal=outcome.signal
    )
