"""`harness mcp`'s tools, one method each: arguments checked, the call made, its result shaped.

Imported on the first `tools/list` or `tools/call` (not before `initialize` is answered): it
pulls in the registry, the providers' configs and the fan-out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import anyio.abc
from subagent_core import CancelSignal, SubagentRequest, list_records

from harness._config.paths import sessions_root
from harness._live.kept_sessions import find_session, remove_session
from harness._registry.child_stderr import ChildStderrLogs, child_stderr_logs

from .mcp_activity import Activity, Report, report_progress
from .mcp_calls import Prepared, build_call_registry, prepare_delegate, resolve_workspace
from .mcp_options import ServeOptions, ToolError
from .mcp_results import (
    agents_result,
    delegate_result,
    fanout_result,
    result_of,
    sessions_result,
    status_result,
    status_text,
)
from .mcp_runs import Runs, Slots, run_delegate, run_fanout_call
from .mcp_tools import (
    delegate_args,
    fanout_args,
    no_args,
    run_id_arg,
    session_arg,
    wait_seconds_arg,
)

Answer = tuple[dict[str, Any], str, bool]
"""`(structured content, text content, is_error)`."""
_T = TypeVar("_T")


class Tools:
    """Every tool of one server: its options, its slots and its background runs."""

    def __init__(self, options: ServeOptions, tg: anyio.abc.TaskGroup) -> None:
        self._options = options
        self._runs = Runs(Slots(options.max_runs, options.max_queued), tg)
        self._logs: ChildStderrLogs | None = None

    @property
    def _stderr_logs(self) -> ChildStderrLogs:
        """The children's stderr logs (one directory for this server, made on first use)."""
        if self._logs is None:
            self._logs = child_stderr_logs(live=False)
        return self._logs

    async def call(self, name: str, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        """Runs tool `name`.

        Raises:
            ToolError: the call was refused (malformed arguments included); nothing started.
        """
        method: Callable[[Mapping[str, Any] | None, Report], Awaitable[Answer]] = getattr(
            self, f"_{name}"
        )
        return await method(arguments, report)

    async def _with_progress(
        self, activity: Activity, report: Report, work: Callable[[], Awaitable[_T]]
    ) -> _T:
        """`work()` while `activity` is reported; a refusal comes out as itself."""
        refused: ToolError | None = None
        done: list[_T] = []
        async with anyio.create_task_group() as tg:
            interval = self._options.progress_interval_seconds
            tg.start_soon(lambda: report_progress(activity, report, interval_seconds=interval))
            try:
                done.append(await work())
            except ToolError as error:
                refused = error
            finally:
                tg.cancel_scope.cancel()
        if refused is not None:
            raise refused
        return done[0]

    async def _agents(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        no_args("agents", arguments)
        structured, text = agents_result(self._options)
        return structured, text, False

    async def _delegate(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        prepared = prepare_delegate(
            self._options, self._stderr_logs, delegate_args("delegate", arguments)
        )
        ticket = self._runs.slots.claim(1)
        activity = Activity()

        async def work() -> Answer:
            await ticket.wait()
            return delegate_result(await run_delegate(prepared, activity))

        try:
            return await self._with_progress(activity, report, work)
        finally:
            ticket.close()

    async def _delegate_start(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        args = delegate_args("delegate_start", arguments)
        record = self._runs.start(prepare_delegate(self._options, self._stderr_logs, args))
        return {"run_id": record.run_id}, record.run_id, False

    async def _delegate_status(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        record = self._runs.get(run_id_arg("delegate_status", arguments))
        status = status_result(record)
        return status, f"{status_text(status)}: {record.activity.message()}", False

    async def _delegate_result(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        record = self._runs.get(run_id_arg("delegate_result", arguments, "wait_seconds"))
        wait = wait_seconds_arg(arguments)

        async def settle() -> None:
            with anyio.move_on_after(wait):
                await record.done.wait()

        if wait > 0 and not record.done.is_set():
            await self._with_progress(record.activity, report, settle)
        return result_of(record)

    async def _delegate_cancel(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        record = self._runs.get(run_id_arg("delegate_cancel", arguments))
        await self._runs.cancel(record)
        status = status_result(record)
        return status, status_text(status), False

    async def _fanout(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        args = fanout_args(arguments)
        workspace = resolve_workspace(self._options.root, args.workspace)
        registry = build_call_registry(self._options, self._stderr_logs, args.agents, workspace)
        cancel = CancelSignal()
        request = SubagentRequest(prompt=args.prompt, cwd=workspace, cancel=cancel, label="fanout")
        prepared = Prepared(
            registry=registry,
            agents=args.agents,
            workspace=workspace,
            request=request,
            cancel=cancel,
        )
        ticket = self._runs.slots.claim(len(args.agents))
        activity = Activity()

        async def work() -> Answer:
            await ticket.wait()
            outcomes = await run_fanout_call(prepared, args, activity, ticket.count)
            return fanout_result(outcomes, args.isolation)

        try:
            return await self._with_progress(activity, report, work)
        finally:
            ticket.close()

    async def _sessions(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        no_args("sessions", arguments)
        structured, text = sessions_result(list_records(sessions_root()))
        return structured, text, False

    async def _session_close(self, arguments: Mapping[str, Any] | None, report: Report) -> Answer:
        name = session_arg(arguments)
        root = sessions_root()
        record = find_session(root, name)
        if record is None:
            raise ToolError(f"no session named {name}")
        if not remove_session(root, record):
            raise ToolError(f"session {name} is in use by a running call; try again after it")
        return {"session": name, "closed": True}, f"closed session {name}", False
