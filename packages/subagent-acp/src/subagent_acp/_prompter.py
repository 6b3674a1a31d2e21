"""A child's prompter: the one service task that sends each turn's `session/prompt`.

The request is sent here, not by the turn, so it hears its answer even after its turn was
interrupted (a cancel, the idle deadline, a dispose, a crossed budget), and prompts go out one
at a time: the next is sent only once the previous one is answered, so neither it nor the
updates before that answer can reach the next turn.

One task serves every turn of the child. A warm child's pool starts it while the child waits,
a cold child's handshake with the child, so handing a turn's prompt over starts no task: a task
start was the costliest step left between the answer to `session/new` and the prompt.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

import anyio


class PromptTurn(Protocol):
    """A turn as the prompter sees it."""

    async def ask(self) -> None:
        """Sends the turn's prompt (unless the turn has ended meanwhile) and waits for its
        answer; never raises for the child's failures."""
        ...


class Prompter:
    """Sends the prompts handed to it, in order, each once the previous one is answered."""

    def __init__(self) -> None:
        self._pending: deque[PromptTurn] = deque()
        self._wake = anyio.Event()

    def ask(self, turn: PromptTurn) -> None:
        """Queues `turn`'s prompt (sent once the prompts before it are answered)."""
        self._pending.append(turn)
        self._wake.set()

    async def serve(self) -> None:
        """The service task: runs until its task group ends it."""
        while True:
            if not self._pending:
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            await self._pending.popleft().ask()
