"""`ChildChannel`: a child reached through a guard's messages, wherever that guard runs.

`ManagedProcess` drives a guarded child through these few facts and steps (the local guard's
control socket is one implementation); a placement that reaches its guard some other way
(a cluster actor) implements them and gets the same ladder (`open_channel_process`).
"""

from __future__ import annotations

import abc

import anyio
import anyio.abc
import anyio.lowlevel


class ChildChannel(anyio.abc.Process, abc.ABC):
    """A child reached through a guard that reports facts and obeys steps, wherever it runs.

    `returncode` and `wait()` are the leader's (as its guard reports them); `pid` is whatever
    the placement can name (a pid on another host is for logs only). Every method is
    non-blocking or a bounded wait on a message; none raises for a lost connection: a channel
    whose far end is gone reports `exit_known`/`tree_gone` as it last knew them and its waits
    return (see each method).
    """

    @property
    @abc.abstractmethod
    def exit_known(self) -> bool:
        """True once the leader's exit was reported, or the guard can report nothing more."""

    @abc.abstractmethod
    async def wait_exit(self) -> int | None:
        """Waits for the leader's exit: its returncode, or `None` when it can never be known."""

    @abc.abstractmethod
    def tree_gone(self) -> bool:
        """True once the guard reported that no process of the tree is left."""

    @abc.abstractmethod
    async def wait_tree_gone(self) -> bool:
        """Waits until the tree is gone (True) or the guard is unreachable (False)."""

    @abc.abstractmethod
    def signal_tree(self, step: str) -> None:
        """`term` or `kill`: the guard signals every live member of the tree."""

    @abc.abstractmethod
    def release(self) -> None:
        """Done with this child: closes our ends; the guard kills whatever is left. Never blocks."""

    async def wait(self) -> int:
        code = await self.wait_exit()
        return -9 if code is None else code

    async def aclose(self) -> None:
        self.release()
        await anyio.lowlevel.checkpoint()
