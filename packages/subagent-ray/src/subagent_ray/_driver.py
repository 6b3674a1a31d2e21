"""The one Ray driver in this process, and its node hosts.

The parent process is the Ray driver: `ray.init` runs once, on the first start (never at
import), with `log_to_driver=False` so no child's output reaches our stderr through Ray. Each
node gets one host actor (`_host.NodeHost`), owned by the driver — not detached, never
restarted, `num_cpus=0` — so Ray ends it when this process dies; many children share it, so
hundreds of runs cost one Ray worker per node, not one per run. A daemon thread renews every
host's lease; a host whose lease expires (the driver is gone or cut off) ends its children.

Every call into Ray is here, and every Ray exception maps to one closed fact at this boundary
(`HostLostError`): the host or its node is gone, or the cluster cannot be reached.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

_INSTALL_HINT = (
    "subagent-ray needs the `ray` package (2.60): install subagent-ray with its "
    "dependencies (pip install 'subagent-ray'), which pulls in ray==2.60.*"
)
RENEW_SECONDS = 2.0
"""How often the driver renews each host's lease."""
_MAX_CONCURRENCY = 10_000
"""Concurrent calls one host serves. A quiet run keeps about four waiting (a pull per stream,
its wait, a write); a flooding one up to 33 (eight pulls per stream, 16 writes sent ahead)."""
SPAWN_SLOTS = 8
"""Children one event loop starts on one host at a time. The host's guard server forks one
guard per start: a hundred at once would share the node's CPUs a hundred ways, and each
start's bound would measure the line in front of it rather than the start."""
_spawn_slots: RunVar[weakref.WeakKeyDictionary[Host, anyio.Semaphore]] = RunVar(
    "subagent_ray_spawn_slots"
)


class HostLostError(Exception):
    """The host (its actor, its node) is gone or unreachable; nothing more will come from it."""


def ray_module() -> Any:
    """`import ray`, or an `ImportError` that names what to install."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(_INSTALL_HINT) from error
    return ray


def is_ray_error(error: BaseException) -> bool:
    """True for Ray's own failures (actor died, unavailable, node lost, timeouts)."""
    ray = ray_module()
    return isinstance(error, ray.exceptions.RayError)


def _connected() -> bool:
    """Whether this process is a connected driver (`ray` is imported by then)."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


@dataclass(frozen=True, slots=True)
class HostKey:
    """Which host a placement uses: pinned to a node, or wherever these resources are."""

    node_id: str | None
    resources: tuple[tuple[str, float], ...]


class Host:
    """One node host actor, as the driver holds it."""

    def __init__(self, actor: Any, node_id: str, worker_pid: int) -> None:
        self.actor = actor
        self.node_id = node_id
        self.worker_pid = worker_pid
        self.lost = False

    def fire(self, method: str, *args: object) -> None:
        """Calls a host method without waiting for it (never blocks, never raises)."""
        if self.lost or not _connected():
            return
        with contextlib.suppress(Exception):
            getattr(self.actor, method).remote(*args)

    def submit(self, method: str, *args: object) -> Any:
        """Sends a host call; its reference, for `answer`.

        Raises:
            HostLostError: the host is already known to be gone.
        """
        if self.lost or not _connected():
            raise HostLostError
        try:
            return getattr(self.actor, method).remote(*args)
        except Exception as error:
            raise self._lose(error) from None

    async def answer(self, ref: Any) -> Any:
        """Waits for a submitted call's answer.

        Raises:
            HostLostError: the host or its node is gone (the host is then forgotten).
        """
        try:
            return await ref
        except Exception as error:
            raise self._lose(error) from None

    async def call(self, method: str, *args: object) -> Any:
        """Calls a host method and waits for its answer (`HostLostError` when it is gone)."""
        return await self.answer(self.submit(method, *args))

    def spawn_slots(self) -> anyio.Semaphore:
        """This event loop's `SPAWN_SLOTS` starts on this host; waiting for one is a plain,
        cancellable wait (nothing has started yet)."""
        table: weakref.WeakKeyDictionary[Host, anyio.Semaphore]
        try:
            table = _spawn_slots.get()
        except LookupError:
            table = weakref.WeakKeyDictionary()
            _spawn_slots.set(table)
        slots = table.get(self)
        if slots is None:
            slots = table[self] = anyio.Semaphore(SPAWN_SLOTS)
        return slots

    def _lose(self, error: Exception) -> HostLostError:
        if not is_ray_error(error):
            raise error
        self.lost = True
        _DRIVER.forget(self)
        return HostLostError()


class _Driver:
    """Process-wide: the Ray connection, the hosts by key and by node, the lease thread.

    Two kinds of lock, so that a slow start never stalls the lease: `_lock` guards the tables
    and is held only for dict work (the lease thread takes it every renewal); `_starting`
    holds one lock per key across connecting and placing a host, which can take the whole
    start bound on a loaded or new node. Other keys' starts, and every renewal, go on.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hosts: dict[HostKey, Host] = {}
        self._by_node: dict[str, Host] = {}
        self._starting: dict[HostKey, threading.Lock] = {}
        self._connect = threading.Lock()
        self._lease: threading.Thread | None = None
        self._host_class: Any = None

    def known(self, key: HostKey) -> Host | None:
        if not _connected():
            # `ray.shutdown()` (or never connected): every host handle is void.
            with self._lock:
                for host in self._hosts.values():
                    host.lost = True
                self._hosts.clear()
                self._by_node.clear()
            return None
        with self._lock:
            host = self._hosts.get(key)
        return None if host is None or host.lost else host

    def forget(self, host: Host) -> None:
        with self._lock:
            for key, value in list(self._hosts.items()):
                if value is host:
                    del self._hosts[key]
            if self._by_node.get(host.node_id) is host:
                del self._by_node[host.node_id]

    def hosts(self) -> list[Host]:
        with self._lock:
            return list(self._by_node.values())

    def host(
        self,
        key: HostKey,
        *,
        address: str | None,
        namespace: str | None,
        lease_seconds: float,
        start_timeout_seconds: float,
    ) -> Host:
        """The host for `key`, connecting and creating it when needed (blocking: a thread).

        Raises:
            HostLostError: the cluster cannot be reached, or no node can take the host in time.
        """
        ray = ray_module()
        with self._lock:
            starting = self._starting.setdefault(key, threading.Lock())
        with starting:
            host = self.known(key)
            if host is not None:
                return host
            try:
                with self._connect:
                    if not ray.is_initialized():
                        ray.init(
                            address=address,
                            namespace=namespace,
                            log_to_driver=False,
                            logging_level="warning",
                        )
                host = self._create(ray, key, lease_seconds, start_timeout_seconds)
            except ImportError:
                raise
            except Exception:
                raise HostLostError from None
            with self._lock:
                self._hosts[key] = host
                if self._lease is None:
                    self._lease = threading.Thread(
                        target=self._renew, name="subagent-ray lease", daemon=True
                    )
                    self._lease.start()
            return host

    def _create(self, ray: Any, key: HostKey, lease_seconds: float, timeout: float) -> Host:
        with self._connect:
            if self._host_class is None:
                if sys.platform == "win32":
                    raise HostLostError  # node hosts run on Linux only
                from ._host import NodeHost

                self._host_class = ray.remote(NodeHost)
        options: dict[str, object] = {
            "num_cpus": 0,
            "max_restarts": 0,
            "max_task_retries": 0,
            "max_concurrency": _MAX_CONCURRENCY,
            "lifetime": None,
        }
        if key.resources:
            options["resources"] = dict(key.resources)
        if key.node_id is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(key.node_id, soft=False)
        actor = self._host_class.options(**options).remote(lease_seconds)
        try:
            node_id, worker_pid = cast(
                "tuple[str, int]", ray.get(actor.start.remote(), timeout=timeout)
            )
        except BaseException:
            with contextlib.suppress(Exception):
                ray.kill(actor)
            raise
        with self._lock:
            existing = self._by_node.get(node_id)
            if existing is None or existing.lost:
                host = self._by_node[node_id] = Host(actor, node_id, worker_pid)
                return host
        # One host per node: this key's resources landed where a host already runs.
        with contextlib.suppress(Exception):
            ray.kill(actor)
        return existing

    def _renew(self) -> None:
        tick = threading.Event()
        while not tick.wait(RENEW_SECONDS):
            if not _connected():
                continue  # a call now would make Ray connect again on its own
            for host in self.hosts():
                host.fire("renew")


_DRIVER = _Driver()


async def host_for(
    node_id: str | None,
    resources: Mapping[str, float],
    *,
    address: str | None,
    namespace: str | None,
    lease_seconds: float,
    start_timeout_seconds: float,
) -> Host:
    """The host a placement's children run on (created on first use, in a worker thread).

    Raises:
        HostLostError: the cluster cannot be reached, or no node can take the host in time.
    """
    key = HostKey(node_id, tuple(sorted(resources.items())))
    host = _DRIVER.known(key)
    if host is not None:
        return host
    return await anyio.to_thread.run_sync(
        lambda: _DRIVER.host(
            key,
            address=address,
            namespace=namespace,
            lease_seconds=lease_seconds,
            start_timeout_seconds=start_timeout_seconds,
        ),
        # A connect that outlives the start's bound is left to finish in its thread.
        abandon_on_cancel=True,
    )


def live_hosts() -> list[Host]:
    """The hosts this driver holds (tests and benchmarks count workers with it)."""
    return _DRIVER.hosts()
