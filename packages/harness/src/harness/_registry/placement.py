"""Where a provider's child runs, as the placement object its config takes.

An ssh `remote` is already one (`SSHRemote`, from the table); a Ray table becomes a
`subagent_ray.RayPlacement` only here, when the provider is built, so a file with a Ray
provider loads (and every other provider works) without the `[ray]` extra installed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from subagent_core import Placement

from harness._config.placement import RaySettings
from harness._config.settings import ProviderSettings
from harness._config.toml_values import ConfigError
from harness._console.exit_codes import UsageError

RAY_INSTALL = "pip install 'subagent-harness[ray]'"


def placement_of(settings: ProviderSettings) -> Placement | None:
    """Where the child of `settings` runs: its ssh remote, its Ray cluster, or here (None).

    Raises:
        UsageError: a Ray placement and no `subagent-ray` installed (names the extra).
        ConfigError: `subagent-ray` refused a value of the `ray` table.
    """
    if settings.ray is not None:
        return ray_placement(settings.ray, provider=settings.name, source=settings.source)
    return settings.remote


def ray_placement(settings: RaySettings, *, provider: str, source: Path | None) -> Placement:
    """The `RayPlacement` for checked settings (imports `subagent_ray` now, not before).

    Raises:
        UsageError: `subagent-ray` is not installed (the message says what to install).
        ConfigError: the package refused a value (names the key, never the value).
    """
    try:
        from subagent_ray import RayPlacement
    except ImportError:
        raise UsageError(
            f'provider "{provider}" runs on Ray (placement = "ray"), and subagent-ray is not '
            f"installed: {RAY_INSTALL}"
        ) from None
    try:
        placement = RayPlacement(
            address=settings.address,
            resources=dict(settings.resources),
            node_id=settings.node_id,
            namespace=settings.namespace,
        )
        if settings.start_timeout_seconds is None:
            return placement
        return replace(placement, start_timeout_seconds=settings.start_timeout_seconds)
    except ValueError as error:
        key, _, problem = str(error).partition(" ")
        raise ConfigError(
            f"providers.{provider}.ray.{key.removeprefix('remote.')}", problem, file=source
        ) from None
