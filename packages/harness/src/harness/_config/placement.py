"""Where a configured child runs: here, on an ssh host, or on a Ray cluster.

A provider table says it with `placement` (`"local"`, `"ssh"` or `"ray"`) and the table of
that placement: `remote = { destination = … }` for ssh, `ray = { address = …, resources = … }`
for Ray. Either table alone implies its placement; both at once, or a placement whose table
contradicts it, is one error naming both keys. The Ray table is checked here, without
importing `subagent_ray`: a file is judged the same whether or not the extra is installed, and
the package is imported only when such a provider is built (`_registry.placement`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from subagent_core import SSHRemote

from .toml_values import (
    ConfigError,
    read_list,
    read_optional_string,
    read_positive_int,
    read_seconds,
    read_string,
    read_table,
    reject_unknown,
)

PLACEMENT_KEYS = {"placement", "remote", "ray"}
"""The keys of a process provider's table that say where its child runs."""
_REMOTE_KEYS = {"destination", "port", "identity_file", "options", "python"}
_RAY_KEYS = {"address", "resources", "node_id", "namespace", "start_timeout_seconds"}


def _no_resources() -> Mapping[str, float]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RaySettings:
    """A `[providers.x.ray]` table, checked; `_registry.placement` makes the `RayPlacement`."""

    address: str | None = None
    """The cluster (`host:port` or `auto`); None: Ray's default (`RAY_ADDRESS`, else local)."""
    resources: Mapping[str, float] = field(default_factory=_no_resources)
    """Custom resources the node host needs (`{ node_b = 0.001 }`); empty: any node."""
    node_id: str | None = None
    """Pin the host to this Ray node id (hex)."""
    namespace: str | None = None
    """The Ray namespace the driver joins."""
    start_timeout_seconds: float | None = None
    """Bound on reaching the cluster and starting the child (None: the package's 30 s)."""


def read_placement(
    table: Mapping[str, object], base: Path, prefix: str
) -> tuple[SSHRemote | None, RaySettings | None]:
    """The ssh remote or the Ray settings of a provider table (at most one; neither: local).

    Raises:
        ConfigError: an unknown placement, both tables, a placement without its table or with
            the other's, or a bad value in either table.
    """
    implied = "ssh" if "remote" in table else "ray" if "ray" in table else "local"
    placement = read_string(table, "placement", prefix, implied)
    if placement not in ("local", "ssh", "ray"):
        raise ConfigError(f"{prefix}.placement", 'must be "local", "ssh" or "ray"')
    if "remote" in table and "ray" in table:
        raise ConfigError(
            f"{prefix}.remote", f"and {prefix}.ray exclude each other (one placement per child)"
        )
    if placement != "ssh" and "remote" in table:
        raise ConfigError(
            f"{prefix}.placement",
            f'is "{placement}", so {prefix}.remote (an ssh host) cannot be set',
        )
    if placement != "ray" and "ray" in table:
        raise ConfigError(f"{prefix}.ray", f'needs placement = "ray" (placement is "{placement}")')
    if placement == "ssh" and "remote" not in table:
        raise ConfigError(f"{prefix}.remote", 'is required with placement = "ssh"')
    if placement == "ssh":
        remote = read_table(table["remote"], f"{prefix}.remote")
        return _remote(remote, base, f"{prefix}.remote"), None
    if placement == "ray":
        return None, _ray(read_table(table.get("ray", {}), f"{prefix}.ray"), f"{prefix}.ray")
    return None, None


def _remote(remote: Mapping[str, object], base: Path, prefix: str) -> SSHRemote:
    """`remote = { destination = "user@host", port = 22, identity_file = "…", options = […] }`."""
    reject_unknown(remote, _REMOTE_KEYS, prefix)
    destination = read_optional_string(remote, "destination", prefix)
    if destination is None:
        raise ConfigError(f"{prefix}.destination", "is required (the host to run on)")
    identity = read_optional_string(remote, "identity_file", prefix)
    try:
        return SSHRemote(
            destination=destination,
            port=read_positive_int(remote, "port", prefix),
            identity_file=None if identity is None else base / Path(identity).expanduser(),
            options=tuple(read_list(remote, "options", prefix, item=str)),
            python=read_string(remote, "python", prefix, "python3"),
        )
    except ValueError as error:
        # The message names the field ("remote.port must …") and never the value.
        key, _, problem = str(error).partition(" ")
        raise ConfigError(f"{prefix}.{key.removeprefix('remote.')}", problem) from None


def _ray(ray: Mapping[str, object], prefix: str) -> RaySettings:
    """`ray = { address = "head:6379", resources = { node_b = 0.001 }, namespace = "…" }`."""
    reject_unknown(ray, _RAY_KEYS, prefix)
    resources: dict[str, float] = {}
    for name, amount in read_table(ray.get("resources", {}), f"{prefix}.resources").items():
        if (
            isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or not math.isfinite(amount)
            or amount <= 0
        ):
            raise ConfigError(f"{prefix}.resources.{name}", "must be a positive amount")
        resources[name] = float(amount)
    timeout = (
        read_seconds(ray, "start_timeout_seconds", prefix, 0.0)
        if "start_timeout_seconds" in ray
        else None
    )
    return RaySettings(
        address=read_optional_string(ray, "address", prefix),
        resources=MappingProxyType(resources),
        node_id=read_optional_string(ray, "node_id", prefix),
        namespace=read_optional_string(ray, "namespace", prefix),
        start_timeout_seconds=timeout,
    )
