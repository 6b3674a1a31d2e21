"""`RayPlacement`: run a provider's child on a Ray cluster node, contained like a local one."""

from __future__ import annotations

import contextlib
import math
import os
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import IO, Literal, cast

import anyio
from subagent_core import child_env
from subagent_core.kit import ManagedProcess, SpawnError, open_channel_process

from ._channel import RayChannel
from ._driver import Host, HostLostError, host_for

DEFAULT_GRACE_SECONDS = 0.5
"""The node's ladder: its EOF and TERM graces, the same as the local defaults."""
DEFAULT_LEASE_SECONDS = 10.0
"""A host whose driver has not renewed for this long ends its children (renewed every 2 s)."""
DEFAULT_START_TIMEOUT_SECONDS = 30.0
"""Bound on connecting and placing the node host, and again on starting one child (the wait
for a start slot on a busy host is not counted)."""
_ROUND_TRIP_SECONDS = 1.0


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"remote.{key} {requirement}")


def _no_resources() -> Mapping[str, float]:
    return MappingProxyType({})


def _seconds(value: object, key: str, *, positive: bool) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        raise _fail(key, "must be a finite number of seconds" + (", above 0" if positive else ""))
    return float(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class RayPlacement:
    """A Ray cluster to run children on; pass it as `remote=` of any provider config.

    This process becomes the Ray driver on the first start (`ray.init(address, namespace)`
    once; never at import). Children of placements that resolve to the same node share one
    host actor there. Every node needs this package installed (the host runs its code) and a
    Linux `python` with `PR_SET_CHILD_SUBREAPER`.

    Raises:
        ValueError: a field is of the wrong type; the message names the field, never the value.
    """

    address: str | None = None
    """The cluster (`ray://…` is not supported: the driver must be a cluster member; use
    `host:port` or `auto`); `None` is Ray's own default (`RAY_ADDRESS`, a running local
    cluster, else a new local one)."""
    resources: Mapping[str, float] = field(default_factory=_no_resources)
    """Custom resources the node host needs (`{"node_b": 0.001}` picks a node that offers
    them); the host holds them while it lives. Empty: any node."""
    node_id: str | None = None
    """Pin the host to this Ray node id (hex), hard affinity; `None` leaves it to Ray."""
    namespace: str | None = None
    """The Ray namespace the driver joins (first start only)."""
    eof_grace_seconds: float = DEFAULT_GRACE_SECONDS
    """Node ladder: after the child's stdin ends, before SIGTERM to the tree."""
    term_grace_seconds: float = DEFAULT_GRACE_SECONDS
    """Node ladder: after SIGTERM, before SIGKILL to the tree."""
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    """A host not renewed for this long (a lost driver) ends every child it holds."""
    start_timeout_seconds: float = DEFAULT_START_TIMEOUT_SECONDS
    """Bound on reaching the cluster and placing the host, and again on the host starting the
    child (a start waiting behind others on the same host is not counted): past it, a start
    error (`process-start`)."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for key in ("address", "node_id", "namespace"):
            value: object = getattr(self, key)
            if value is not None and (
                not isinstance(value, str) or value == "" or not value.isprintable()
            ):
                raise _fail(key, "must be a non-empty printable string, or None")
        resources = cast(object, self.resources)
        if not isinstance(resources, Mapping):
            raise _fail("resources", "must be a mapping of resource names to amounts")
        checked: dict[str, float] = {}
        for name, amount in cast("Mapping[object, object]", resources).items():
            if (
                not isinstance(name, str)
                or name == ""
                or isinstance(amount, bool)
                or not isinstance(amount, int | float)
                or not math.isfinite(amount)
                or amount <= 0
            ):
                raise _fail("resources", "must be a mapping of resource names to amounts")
            checked[name] = float(amount)
        set_(self, "resources", MappingProxyType(checked))
        for key in ("eof_grace_seconds", "term_grace_seconds"):
            set_(self, key, _seconds(getattr(self, key), key, positive=False))
        for key in ("lease_seconds", "start_timeout_seconds"):
            set_(self, key, _seconds(getattr(self, key), key, positive=True))

    @property
    def local_eof_grace_seconds(self) -> float:
        """The least EOF grace of the driver's ladder: the node's ladder ends first."""
        return self.eof_grace_seconds + self.term_grace_seconds + _ROUND_TRIP_SECONDS

    def check_env(self, env: Mapping[str, str | None]) -> None:
        """Any env `ChildCommand` accepts travels (it is sent as a JSON-able mapping)."""

    def open(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None],
        cwd: Path | None,
        stdin: Literal["pipe", "devnull"],
        stdout: Literal["pipe", "devnull"],
        stderr: Literal["inherit", "pipe", "devnull"] | int | IO[bytes],
        eof_grace_seconds: float,
        term_grace_seconds: float,
        kill_grace_seconds: float,
    ) -> AbstractAsyncContextManager[ManagedProcess]:
        """Starts `argv` on a node under its own guard and owns it for the block.

        The environment is scrubbed here (`child_env`) and travels in Ray's messages; `cwd`
        (default: this process's) must exist on the node. stdin is always a relay (a
        `devnull` child gets one that never delivers data); stderr is relayed for `pipe`, and
        goes to `/dev/null` on the node otherwise.

        Raises:
            SpawnError: `unreachable` (no cluster, no node for the host, or too slow),
                `bad-cwd`, `not-found`, `not-executable` or `os-error`; nothing runs.
        """
        return self._open(
            list(argv),
            child_env(env),
            str(cwd) if cwd is not None else os.getcwd(),
            stderr == "pipe",
            (eof_grace_seconds, term_grace_seconds, kill_grace_seconds),
        )

    @asynccontextmanager
    async def _open(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        relay_stderr: bool,
        graces: tuple[float, float, float],
    ) -> AsyncGenerator[ManagedProcess]:
        host: Host | None = None
        child_id = uuid.uuid4().hex
        # Reaching the cluster and placing the host start nothing on a node: a cancel here
        # leaves at most a host being created in its thread, which the next start reuses.
        with anyio.move_on_after(self.start_timeout_seconds):
            with contextlib.suppress(HostLostError):
                host = await host_for(
                    self.node_id,
                    self.resources,
                    address=self.address,
                    namespace=self.namespace,
                    lease_seconds=self.lease_seconds,
                    start_timeout_seconds=self.start_timeout_seconds,
                )
        if host is None:
            raise SpawnError("unreachable")
        async with host.spawn_slots():
            answer = await self._spawn(host, child_id, argv, env, cwd, relay_stderr, graces[2])
        if not isinstance(answer, int):
            if answer == "unreachable":
                host.fire("release", child_id)  # too slow: whatever did start is ended
            raise SpawnError(answer)
        channel = RayChannel(host, child_id, answer, stderr=relay_stderr)
        async with open_channel_process(
            channel,
            eof_floor_seconds=self.local_eof_grace_seconds,
            eof_grace_seconds=graces[0],
            term_grace_seconds=graces[1],
            kill_grace_seconds=graces[2],
        ) as managed:
            yield managed

    async def _spawn(
        self,
        host: Host,
        child_id: str,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        relay_stderr: bool,
        kill_grace_seconds: float,
    ) -> int | str:
        """The host's answer to one start: the leader's pid, or a closed refusal reason.

        The node's ladder gets this placement's EOF and TERM graces (it must end within
        `local_eof_grace_seconds`) and the caller's kill grace, as a local child would.

        Shielded and bounded: a cancel landing while the host starts the child would leave the
        child with no owner here (the host would end it only with its lease).
        """
        answer: int | str = "unreachable"
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.start_timeout_seconds):
            try:
                answer = cast(
                    "int | str",
                    await host.call(
                        "spawn",
                        child_id,
                        argv,
                        env,
                        cwd,
                        "pipe" if relay_stderr else "devnull",
                        self.eof_grace_seconds,
                        self.term_grace_seconds,
                        kill_grace_seconds,
                    ),
                )
            except HostLostError:
                answer = "unreachable"
        return answer
