"""`async with` for objects whose teardown is `aclose()`, and `with` for those whose is
`close()`."""

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


class Closing:
    """Mixin: `with obj:` returns `obj` and calls `obj.close()` on the way out (the
    synchronous twin of `AsyncClosing`)."""

    def close(self) -> None:
        """Releases what the object holds; subclasses override it."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
