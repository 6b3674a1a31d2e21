"""`async with` for objects whose teardown is `aclose()`."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class AsyncClosing:
    """Mixin: `async with obj:` returns `obj` and awaits `obj.aclose()` on the way out.

    One home for the enter/exit pair every closable owner (registry, providers) repeats;
    subclasses define `aclose()` and keep their own shielding and bounds inside it.
    """

    async def aclose(self) -> None:
        """Releases what the object holds; subclasses override it."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
