"""A child's service task: its client terminals while it serves, then the connection's close.

The kit runs the task beside the child (`ChildLink.start_soon`) and cancels it only once the
ladder has ended the child. The terminals are a task group of their own that ends before the
ladder — when the lifecycle closes the child (`close`, from `ACPChild.close_child`) or as soon
as the child exits — so no terminal outlives the child it served. The SDK connection is closed
last, when the kit ends the services after the ladder. A warm child without terminals has no
such task: its pool's block closes its connection after the ladder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Final

import anyio
from subagent_core.kit import CLOSE_SECONDS, ChildLink

from ._bridge import Session
from ._terminals import LADDER_SECONDS, Terminals

AFTER_LADDER_SECONDS: Final = LADDER_SECONDS + CLOSE_SECONDS
"""The longest the services take once the child's ladder has run: terminals still ending, then
the connection's close (the lifecycle adds it to the dispose bound)."""


class ChildServices:
    """One child's service task, and the lifecycle's word that the child is closing."""

    def __init__(self, cwd: Path, *, terminals: bool) -> None:
        self._cwd = cwd
        self._terminals = terminals
        self._closing = anyio.Event()
        self._terminals_ended = anyio.Event()

    async def serve(self, link: ChildLink, session: Session) -> None:
        """The service task: the child's terminals while it serves, then, once the kit ends
        the services after the ladder, the connection's close."""
        try:
            if self._terminals:
                await self._hold_terminals(link, session)
            self._terminals_ended.set()
            await anyio.sleep_forever()
        finally:
            self._terminals_ended.set()
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_SECONDS):
                await session.close()

    def close(self) -> None:
        """Tells the terminals to end: the child is being closed."""
        self._closing.set()

    async def wait_terminals_ended(self) -> None:
        """Waits until every terminal's tree has ended (at once when none were offered)."""
        if self._terminals:
            await self._terminals_ended.wait()

    async def _hold_terminals(self, link: ChildLink, session: Session) -> None:
        """Runs the child's terminals until it is closing or gone; their trees end first."""
        try:
            async with anyio.create_task_group() as group:
                terminals = Terminals(group, self._cwd)
                session.client.terminals = terminals
                group.start_soon(self._close_on_exit, link)
                try:
                    await self._closing.wait()
                finally:
                    terminals.close()
                    group.cancel_scope.cancel()
        finally:
            session.client.terminals = None

    async def _close_on_exit(self, link: ChildLink) -> None:
        await link.wait_exit(math.inf)
        self._closing.set()
