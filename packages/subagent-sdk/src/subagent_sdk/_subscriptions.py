"""Notification subscriptions: one queue each, isolated failures, death that keeps the queue.

A subscription may be scoped to a session tree: the root session plus every child session the
runtime announced with `subagent.started` under it (recursively). Everything else is dropped
before it reaches the queue, so a busy runtime's other sessions never block or confuse a run.

Each queue is bounded (`SUBSCRIPTION_MAX_ITEMS` notifications, `SUBSCRIPTION_MAX_BYTES` of
frames): a subscription whose reader falls that far behind fails itself with
`TransportClosedError`, so a runtime flooding notifications cannot grow the parent.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Final, Self

import anyio
from subagent_core.kit import Closing

from ._errors import TransportClosedError
from ._framing import Notification
from ._wire import SESSION_EVENT, SESSION_STATUS, SUBAGENT_FINISHED, SUBAGENT_STARTED

_log = logging.getLogger("subagent_sdk")

NotificationFilter = Callable[[Notification], bool]
"""A predicate choosing which notifications a subscription keeps."""

_MAX_TREE_DEPTH: Final = 64

MAX_TREE_SESSIONS: Final = 4096
"""Most child→parent session links a client remembers."""

SUBSCRIPTION_MAX_ITEMS: Final = 4096
"""Most notifications one subscription holds unread."""
SUBSCRIPTION_MAX_BYTES: Final = 32 * 1024 * 1024
"""Most frame bytes one subscription holds unread (a single frame always fits an empty queue)."""


def notification_session(notification: Notification) -> str | None:
    """The session a notification belongs to (the parent for `subagent.*`), if any."""
    params = notification.params
    if notification.method in (SUBAGENT_STARTED, SUBAGENT_FINISHED):
        session = params.get("parentSessionId")
    elif notification.method in (SESSION_EVENT, SESSION_STATUS):
        session = params.get("sessionId")
    else:
        session = params.get("sessionId")
    return session if isinstance(session, str) else None


class SessionTree:
    """Parent links between sessions, learned from `subagent.started`."""

    def __init__(self) -> None:
        self._parents: dict[str, str] = {}

    def observe(self, notification: Notification) -> None:
        """Records a child → parent link (first announcement wins)."""
        if notification.method != SUBAGENT_STARTED:
            return
        parent = notification.params.get("parentSessionId")
        child = notification.params.get("childSessionId")
        if isinstance(parent, str) and isinstance(child, str) and child != parent:
            if child not in self._parents and len(self._parents) >= MAX_TREE_SESSIONS:
                # A runtime announcing endless children cannot grow the parent: later ones are
                # simply out of every scoped subscription.
                return
            self._parents.setdefault(child, parent)

    def contains(self, root: str, session: str | None) -> bool:
        """True when `session` is `root` or descends from it."""
        for _ in range(_MAX_TREE_DEPTH):
            if session is None:
                return False
            if session == root:
                return True
            session = self._parents.get(session)
        return False


class Subscription(Closing):
    """A queue of notifications chosen by a session scope and/or a filter.

    `receive()` returns queued items first, then raises: the filter's own exception if it ever
    raised (that fails only this subscription), or `TransportClosedError` once the runtime's
    output ended. Closing it (or leaving `with`) stops delivery.
    """

    def __init__(
        self,
        tree: SessionTree,
        *,
        session_id: str | None,
        filter: NotificationFilter | None,
        on_close: Callable[[Subscription], None],
        closed_message: str | None,
    ) -> None:
        self._tree = tree
        self.session_id = session_id
        """The root session of the scope, or `None` for every session."""
        self._filter = filter
        self._on_close = on_close
        self._queue: deque[tuple[Notification, int]] = deque()
        self._queued_bytes = 0
        self._wake = anyio.Event()
        self._failure: Exception | None = None
        self._closed_message = closed_message
        self._unsubscribed = False

    def _offer(self, notification: Notification, size: int = 0) -> None:
        if self._unsubscribed or self._failure is not None or self._closed_message is not None:
            return
        if self.session_id is not None and not self._tree.contains(
            self.session_id, notification_session(notification)
        ):
            return
        if self._filter is not None:
            try:
                keep = self._filter(notification)
            except Exception as error:
                _log.debug("a subscription filter raised; failing that subscription only")
                self._fail(error)
                return
            if not keep:
                return
        if self._queue and (
            len(self._queue) >= SUBSCRIPTION_MAX_ITEMS
            or self._queued_bytes + size > SUBSCRIPTION_MAX_BYTES
        ):
            _log.debug("a subscription overflowed its bound; failing that subscription only")
            self._fail(
                TransportClosedError(
                    "a subscription fell behind by more than its bound of "
                    f"{SUBSCRIPTION_MAX_ITEMS} notifications / {SUBSCRIPTION_MAX_BYTES} bytes"
                )
            )
            return
        self._queue.append((notification, size))
        self._queued_bytes += size
        self._wake.set()

    def _fail(self, error: Exception) -> None:
        self._failure = error
        self._wake.set()

    def _pop(self) -> Notification:
        notification, size = self._queue.popleft()
        self._queued_bytes -= size
        return notification

    def _die(self, message: str) -> None:
        if self._closed_message is None:
            self._closed_message = message
            self._wake.set()

    def receive_nowait(self) -> Notification | None:
        """The next queued notification, or `None` when the queue is empty (never waits)."""
        return self._pop() if self._queue else None

    async def receive(self) -> Notification:
        """The next notification, waiting for one.

        Raises:
            TransportClosedError: the runtime's output ended, or this subscription overflowed
                its bound, and the queue is empty.
            Exception: whatever the filter raised, once the queue is empty.
            anyio.ClosedResourceError: this subscription was closed.
        """
        while True:
            if self._queue:
                return self._pop()
            if self._failure is not None:
                raise self._failure
            if self._closed_message is not None:
                raise TransportClosedError(self._closed_message)
            if self._unsubscribed:
                raise anyio.ClosedResourceError
            if self._wake.is_set():
                self._wake = anyio.Event()
            await self._wake.wait()

    def close(self) -> None:
        """Stops delivery; idempotent. Queued items stay readable."""
        if not self._unsubscribed:
            self._unsubscribed = True
            self._on_close(self)
            self._wake.set()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Notification:
        try:
            return await self.receive()
        except anyio.ClosedResourceError:
            raise StopAsyncIteration from None
