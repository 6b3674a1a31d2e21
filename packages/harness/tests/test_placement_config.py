"""Where a configured child runs: `placement`, the ssh `remote` table and the `ray` table."""

from __future__ import annotations

import sys
from pathlib import Path
from types import MappingProxyType

import pytest
from harness import ConfigError
from harness._config.loading import parse_config
from harness._config.placement import RaySettings
from harness._console.exit_codes import UsageError
from harness._registry.build import build_provider
from harness._registry.placement import placement_of
from subagent_core import SSHRemote


def _provider(kind: str, **keys: object) -> dict[str, object]:
    base: dict[str, object] = {"kind": kind}
    if kind in ("acp", "sdk"):
        base["command"] = "agent"
    return {"providers": {"p": {**base, **keys}}}


@pytest.mark.parametrize("kind", ["acp", "sdk", "claude", "codex"])
def test_a_ray_table_is_read_for_every_process_kind(kind: str) -> None:
    document = _provider(
        kind,
        placement="ray",
        ray={
            "address": "10.0.0.1:6379",
            "resources": {"node_b": 0.001, "gpu_box": 1},
            "node_id": "ab12",
            "namespace": "agents",
            "start_timeout_seconds": 90,
        },
    )
    (settings,) = parse_config(document).providers
    assert settings.remote is None
    assert settings.ray == RaySettings(
        address="10.0.0.1:6379",
        resources=MappingProxyType({"node_b": 0.001, "gpu_box": 1.0}),
        node_id="ab12",
        namespace="agents",
        start_timeout_seconds=90.0,
    )


def test_placement_ray_alone_is_the_default_cluster() -> None:
    (settings,) = parse_config(_provider("acp", placement="ray")).providers
    assert settings.ray == RaySettings()


def test_a_ray_table_alone_implies_placement_ray() -> None:
    (settings,) = parse_config(_provider("acp", ray={"address": "auto"})).providers
    assert settings.ray == RaySettings(address="auto")


def test_a_remote_table_is_an_ssh_placement(tmp_path: Path) -> None:
    document = _provider(
        "sdk",
        remote={
            "destination": "me@box",
            "port": 2222,
            "identity_file": "key",
            "options": ["ConnectTimeout=5"],
        },
    )
    (settings,) = parse_config(document, path=tmp_path / "harness.toml").providers
    assert settings.ray is None
    assert settings.remote == SSHRemote(
        destination="me@box",
        port=2222,
        identity_file=tmp_path / "key",
        options=("ConnectTimeout=5",),
    )
    assert placement_of(settings) is settings.remote


def test_no_placement_keys_is_local() -> None:
    (settings,) = parse_config(_provider("codex")).providers
    assert (settings.remote, settings.ray) == (None, None)
    assert placement_of(settings) is None


@pytest.mark.parametrize(
    ("keys", "key", "problem"),
    [
        (
            {"placement": "ray", "remote": {"destination": "h"}},
            "providers.p.placement",
            'is "ray", so providers.p.remote (an ssh host) cannot be set',
        ),
        (
            {"remote": {"destination": "h"}, "ray": {}},
            "providers.p.remote",
            "and providers.p.ray exclude each other (one placement per child)",
        ),
        (
            {"placement": "ssh", "ray": {}},
            "providers.p.ray",
            'needs placement = "ray" (placement is "ssh")',
        ),
        ({"placement": "ssh"}, "providers.p.remote", 'is required with placement = "ssh"'),
        (
            {"placement": "local", "remote": {"destination": "h"}},
            "providers.p.placement",
            'is "local", so providers.p.remote (an ssh host) cannot be set',
        ),
        ({"placement": "k8s"}, "providers.p.placement", 'must be "local", "ssh" or "ray"'),
        ({"placement": "ray", "ray": {"port": 1}}, "providers.p.ray.port", "unknown key"),
        (
            {"ray": {"resources": {"node_b": 0}}},
            "providers.p.ray.resources.node_b",
            "must be a positive amount",
        ),
        (
            {"ray": {"resources": {"node_b": True}}},
            "providers.p.ray.resources.node_b",
            "must be a positive amount",
        ),
        ({"ray": {"resources": 3}}, "providers.p.ray.resources", "must be a table"),
        ({"ray": {"address": ""}}, "providers.p.ray.address", "must be a non-empty string"),
        (
            {"ray": {"start_timeout_seconds": 0}},
            "providers.p.ray.start_timeout_seconds",
            "must be positive and finite",
        ),
        ({"ray": "auto"}, "providers.p.ray", "must be a table"),
        (
            {"remote": {"destination": "h", "port": 0}},
            "providers.p.remote.port",
            "must be a positive integer",
        ),
        ({"remote": {}}, "providers.p.remote.destination", "is required (the host to run on)"),
    ],
)
def test_a_bad_placement_is_one_error_naming_its_keys(
    keys: dict[str, object], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_provider("acp", **keys))
    assert (caught.value.key, caught.value.problem) == (key, problem)


def test_a_model_provider_takes_no_placement() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"m": {"kind": "model", "placement": "ray"}}})
    assert caught.value.key == "providers.m.placement"


def test_without_subagent_ray_building_the_provider_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The file is judged without the package; only building the provider needs it.
    monkeypatch.setitem(sys.modules, "subagent_ray", None)
    (settings,) = parse_config(_provider("acp", placement="ray")).providers
    with pytest.raises(UsageError) as caught:
        build_provider(settings, endpoint=None, workspace=tmp_path)
    assert str(caught.value) == (
        'provider "p" runs on Ray (placement = "ray"), and subagent-ray is not installed: '
        "pip install 'subagent-harness[ray]'"
    )
