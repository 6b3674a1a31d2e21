"""`Teardown`: the three graces of the ladder that ends a child, as one validated value.

Every provider ends its child the same way (stdin EOF, then SIGTERM to the tree, then SIGKILL)
and every config used to carry and check the three waits on its own. One value, checked once,
is what the lifecycle and the placements take, as httpx groups its timeouts in one `Timeout`.
Configs keep the field names users already set (`dispose_eof_grace_seconds`,
`dispose_grace_seconds`, `dispose_kill_grace_seconds`) and build their `Teardown` from them with
`Teardown.checked`, so an error still names the key the user wrote. `run_ladder` is the
lifecycle's ladder with those graces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import anyio
import anyio.abc

from ._process import (
    DEFAULT_EOF_GRACE_SECONDS,
    DEFAULT_KILL_GRACE_SECONDS,
    DEFAULT_TERM_GRACE_SECONDS,
    ManagedProcess,
)

CONFIG_KEYS = (
    "dispose_eof_grace_seconds",
    "dispose_grace_seconds",
    "dispose_kill_grace_seconds",
)
"""The config field names of the three graces, in ladder order (accepted by every provider)."""


def _seconds(owner: str, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{owner}.{key} must be a number of seconds")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{owner}.{key} must be positive and finite")
    return seconds


@dataclass(frozen=True, slots=True)
class Teardown:
    """How long each step of the ladder waits for the tree to go.

    Raises:
        ValueError: a grace is not a positive finite number of seconds; the message names it.
    """

    eof_grace_seconds: float = DEFAULT_EOF_GRACE_SECONDS
    """After stdin EOF, before SIGTERM to the tree (a polite child exits on EOF)."""
    term_grace_seconds: float = DEFAULT_TERM_GRACE_SECONDS
    """After SIGTERM, before SIGKILL to the tree."""
    kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS
    """After SIGKILL, before the tree is reported not gone."""

    def __post_init__(self) -> None:
        for key in ("eof_grace_seconds", "term_grace_seconds", "kill_grace_seconds"):
            object.__setattr__(self, key, _seconds("Teardown", key, getattr(self, key)))

    @classmethod
    def checked(cls, owner: str, eof: object, term: object, kill: object) -> Teardown:
        """Builds the value from a config's three fields, naming `owner`'s keys in errors.

        Raises:
            ValueError: `<owner>.<config key> must be …`.
        """
        values = [
            _seconds(owner, key, value)
            for key, value in zip(CONFIG_KEYS, (eof, term, kill), strict=True)
        ]
        return cls(*values)

    @property
    def total_seconds(self) -> float:
        """The longest one ladder can take."""
        return self.eof_grace_seconds + self.term_grace_seconds + self.kill_grace_seconds


async def run_ladder(
    proc: ManagedProcess, teardown: Teardown, *, eof_sent_at: float | None, drain: bool
) -> bool:
    """The managed ladder with `teardown`'s graces; True once the tree is confirmed gone.

    With `drain`, stdout is read and dropped meanwhile, so a child blocked on writing it can
    exit. An EOF sent earlier (`eof_sent_at`, on anyio's clock) has had part of its grace.
    """
    eof_grace = teardown.eof_grace_seconds
    if eof_sent_at is not None:
        eof_grace = max(0.0, eof_grace - (anyio.current_time() - eof_sent_at))
    gone = False
    async with anyio.create_task_group() as tg:
        if drain and proc.stdout is not None:
            tg.start_soon(_discard, proc.stdout)
        gone = await proc.terminate(
            eof_grace, teardown.term_grace_seconds, teardown.kill_grace_seconds
        )
        tg.cancel_scope.cancel()
    return gone


async def _discard(stream: anyio.abc.ByteReceiveStream) -> None:
    """Reads and drops whatever the child still writes."""
    try:
        while True:
            await stream.receive(65536)
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        return
