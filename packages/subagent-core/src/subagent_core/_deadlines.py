"""Deadlines for out-of-process children: a bound on the start and on silence.

A child that stops talking must not hang a run until the parent cancels. Every out-of-process
provider bounds two spans:

- startup (`startup_timeout_seconds`, default 60 s): spawn to publication. On expiry the
  provider rolls back and raises a start error `stage: <handshake stage>; category: timeout`.
- idle (`idle_timeout_seconds`, default 1800 s): after publication, the longest time with no
  frame at all from the child. On expiry the provider sends its cancel message and the run ends
  `error` + `stage: <turn stage>; category: timeout`, partial output kept.

`None` disables a deadline. Silence the parent causes is not the child's: while the parent owes
the child an answer it is still working out (a host permission callback waiting on a human, a
terminal command the parent runs for the child), the idle clock is paused (`paused()`), and it
restarts from the answer. `IdleDeadline` costs nothing per frame beyond storing a clock
reading: the waiter sleeps until the earliest possible expiry and re-checks, so a chatty child
does not arm and disarm a timer per frame. The reading is `time.monotonic()` (a fraction of a
microsecond), not `anyio.current_time()` (several, through the backend lookup): only relative
delays reach the event loop, so the two clocks never have to agree.
"""

from __future__ import annotations

import math
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Final, cast

import anyio

DEFAULT_STARTUP_TIMEOUT_SECONDS: Final = 60.0
"""Spawn to publication: a handshake slower than this is treated as a hung child."""
DEFAULT_IDLE_TIMEOUT_SECONDS: Final = 1800.0
"""The longest silence after publication; long tool runs and slow models fit inside it."""


def check_timeout(value: object, *, owner: str, name: str) -> float | None:
    """Validates a deadline setting: `None`, or a positive finite number of seconds.

    Raises:
        ValueError: `<owner>.<name> must be None or a positive finite number of seconds`.
    """
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{owner}.{name} must be None or a positive finite number of seconds")
    return float(cast(float, value))


class IdleDeadline:
    """Expires after `seconds` without a `touch()`; `None` never expires.

    One producer touches it (the task reading the child), one waiter awaits `expired()`; any
    task that makes the child wait on the parent holds it `paused()` meanwhile.
    """

    __slots__ = ("_holds", "_last", "_seconds")

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._last = time.monotonic()
        self._holds = 0

    @property
    def seconds(self) -> float | None:
        """The bound on silence, or `None`."""
        return self._seconds

    def touch(self) -> None:
        """Records that the child said something (any frame counts)."""
        self._last = time.monotonic()

    @contextmanager
    def paused(self) -> Generator[None]:
        """Stops the clock while the parent owes the child an answer; the bound restarts when
        the last pause ends. Pauses nest (concurrent permission requests each hold one)."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            self._last = time.monotonic()

    def remaining(self) -> float:
        """Seconds of silence left before the bound is reached (0 once it has been); while
        paused, the whole bound (look again then: a pause ending restarts it); infinite
        without a bound."""
        seconds = self._seconds
        if seconds is None:
            return math.inf
        if self._holds:
            return seconds
        return max(0.0, self._last + seconds - time.monotonic())

    async def expired(self) -> None:
        """Returns once the child has been silent for the whole bound, not counting pauses."""
        while True:
            left = self.remaining()
            if left <= 0:
                return
            await anyio.sleep(left)
