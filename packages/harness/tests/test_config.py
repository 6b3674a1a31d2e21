"""harness.toml: every bad value is one ConfigError naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import ConfigError, HarnessConfig, ModelSettings, ProviderSettings, load_config
from harness._config.loading import parse_config
from harness._config.settings import ModelChildConfig
from subagent_acp import ACPConfig
from subagent_sdk import SDKConfig


def test_no_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load_config(workspace=tmp_path) == HarnessConfig()


def test_a_full_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "child").mkdir()
    path = tmp_path / "harness.toml"
    path.write_text(
        """
[model]
base_url = "http://127.0.0.1:9/v1"
model = "m1"
max_tokens = 512
retry_statuses = [429]

[providers.claude]
kind = "acp"
command = "claude-agent-acp"
args = ["--x"]
cwd = "child"
permission = "allow"
env = { A = "b" }
dispose_eof_grace_seconds = 0.5
dispose_grace_seconds = 1
dispose_kill_grace_seconds = 2.5

[providers.dsh-sdk]
kind = "sdk"
command = "harness"
args = ["sdk-runtime"]
provider = "p"
model = "m2"
max_tokens = 7

[providers.model]
kind = "model"
mode = "execute"
""",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.model == ModelSettings(
        base_url="http://127.0.0.1:9/v1", model="m1", max_tokens=512, retry_statuses=(429,)
    )
    assert config.providers == (
        ProviderSettings(
            name="claude",
            kind="acp",
            config=ACPConfig(
                command="claude-agent-acp",
                args=("--x",),
                permission="allow",
                dispose_eof_grace_seconds=0.5,
                dispose_grace_seconds=1.0,
                dispose_kill_grace_seconds=2.5,
            ),
            command="claude-agent-acp",
            cwd=(tmp_path / "child").resolve(),
            env={"A": "b"},
        ),
        ProviderSettings(
            name="dsh-sdk",
            kind="sdk",
            config=SDKConfig(
                command="harness", args=("sdk-runtime",), provider="p", model="m2", max_tokens=7
            ),
            command="harness",
        ),
        ProviderSettings(name="model", kind="model", config=ModelChildConfig(mode="execute")),
    )
    assert config.path == path.resolve()
    assert config.provider("model") == config.providers[2]
    assert config.provider("nope") is None


@pytest.mark.parametrize(
    ("document", "key"),
    [
        ({"extra": 1}, "extra"),
        ({"model": 3}, "model"),
        ({"model": {"base_url": ""}}, "model.base_url"),
        ({"model": {"max_tokens": 0}}, "model.max_tokens"),
        ({"model": {"max_tokens": True}}, "model.max_tokens"),
        ({"model": {"retry_statuses": [42]}}, "model.retry_statuses"),
        ({"model": {"colour": "red"}}, "model.colour"),
        ({"providers": {"a": {"kind": "ssh"}}}, "providers.a.kind"),
        ({"providers": {"a": {"kind": "acp"}}}, "providers.a.command"),
        ({"providers": {"a": {"kind": "acp", "command": "x", "args": "y"}}}, "providers.a.args"),
        ({"providers": {"a": {"kind": "acp", "command": "x", "args": [1]}}}, "providers.a.args"),
        (
            {"providers": {"a": {"kind": "acp", "command": "x", "permission": "yolo"}}},
            "providers.a.permission",
        ),
        (
            {"providers": {"a": {"kind": "acp", "command": "x", "dispose_grace_seconds": -1}}},
            "providers.a.dispose_grace_seconds",
        ),
        (
            {"providers": {"a": {"kind": "acp", "command": "x", "env": {"K": 1}}}},
            "providers.a.env.K",
        ),
        (
            {"providers": {"a": {"kind": "acp", "command": "x", "provider": "p"}}},
            "providers.a.provider",
        ),
        ({"providers": {"a": {"kind": "model", "mode": "yolo"}}}, "providers.a.mode"),
        ({"providers": {"a": {"kind": "model", "command": "x"}}}, "providers.a.command"),
        (
            {"providers": {"a": {"kind": "model", "otel_passthrough": True}}},
            "providers.a.otel_passthrough",
        ),
    ],
)
def test_a_bad_value_names_its_key(document: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    assert caught.value.key == key
    assert str(caught.value).startswith(f"harness.toml: {key}: ")


def test_bad_toml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "harness.toml"
    path.write_text("[model\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.key == "(file)"


def test_a_missing_explicit_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.toml")
    assert "does not exist" in str(caught.value)


def test_mcp_tables_are_read(tmp_path: Path) -> None:
    from harness._config.settings import MCPServerSettings

    config = parse_config(
        {
            "mcp": {
                "files": {"command": "uvx", "args": ["srv"], "env": {"T": "${TOKEN}"}},
                "docs": {"url": "https://host/mcp", "headers": {"A": "Bearer ${KEY}"}},
            }
        },
        path=tmp_path / "harness.toml",
    )
    assert config.mcp == (
        MCPServerSettings(name="files", command="uvx", args=("srv",), env={"T": "${TOKEN}"}),
        MCPServerSettings(name="docs", url="https://host/mcp", headers={"A": "Bearer ${KEY}"}),
    )
    assert config.mcp[1].resolved({"KEY": "k"}) == ({}, {"A": "Bearer k"})


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"x": {}}, "mcp.x"),
        ({"x": {"url": "ftp://h"}}, "mcp.x.url"),
        ({"x": {"command": "c", "url_": 1}}, "mcp.x.url_"),
        ({"x": {"command": "c", "env": {"A": "${bad-name}"}}}, "mcp.x.env.A"),
    ],
)
def test_a_bad_mcp_table_names_its_key(table: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcp": table})
    assert caught.value.key == key


def test_an_unset_reference_names_the_key_not_a_value(tmp_path: Path) -> None:
    path = tmp_path / "harness.toml"
    config = parse_config(
        {"providers": {"p": {"kind": "acp", "command": "c", "env": {"K": "${NOPE}"}}}}, path=path
    )
    with pytest.raises(ConfigError) as caught:
        config.providers[0].resolved_env({})
    assert str(caught.value) == (
        f"{path}: providers.p.env.K: references ${{NOPE}}, which is not set in the environment"
    )


def test_a_codex_provider_table_builds_a_codex_provider(tmp_path: Path) -> None:
    from harness._config.loading import parse_config
    from harness._registry.build import build_provider
    from subagent_codex import CodexProvider

    config = parse_config(
        {
            "providers": {
                "codex": {
                    "kind": "codex",
                    "command": "/bin/true",
                    "permission": "allow",
                    "sandbox": "read-only",
                    "model": "gpt-5",
                    "config_overrides": {"model_provider": '"mock"'},
                }
            }
        }
    )
    settings = config.provider("codex")
    assert settings is not None
    provider = build_provider(settings, endpoint=None, workspace=tmp_path)
    assert isinstance(provider, CodexProvider)
    assert provider.config.sandbox == "read-only"
    assert provider.config.permission == "allow"
    assert provider.config.model == "gpt-5"
    assert provider.config.argv == [
        "/bin/true",
        "-c",
        'model_provider="mock"',
        "app-server",
        "--listen",
        "stdio://",
    ]


def test_a_codex_table_rejects_a_bad_sandbox() -> None:
    from harness._config.loading import parse_config
    from harness._config.toml_values import ConfigError

    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"c": {"kind": "codex", "sandbox": "wide-open"}}})
    assert caught.value.key == "providers.c.sandbox"


CHILD_KINDS = ("acp", "sdk", "claude", "codex")


@pytest.mark.parametrize("kind", CHILD_KINDS)
def test_otel_passthrough_reaches_the_config_of_every_child_kind(kind: str, tmp_path: Path) -> None:
    """`otel_passthrough = true` reaches the provider's config and the provider built from it;
    a table without the key leaves it false."""
    from harness._registry.build import build_provider
    from subagent_core.kit import ChildProvider

    table: dict[str, object] = {"kind": kind, "command": "agent"}
    config = parse_config({"providers": {"on": {**table, "otel_passthrough": True}, "off": table}})
    on, off = config.providers
    assert not isinstance(on.config, ModelChildConfig)
    assert not isinstance(off.config, ModelChildConfig)
    assert (on.config.otel_passthrough, off.config.otel_passthrough) == (True, False)
    built = build_provider(on, endpoint=None, workspace=tmp_path)
    assert isinstance(built, ChildProvider)
    assert built.config.otel_passthrough is True


@pytest.mark.parametrize("kind", CHILD_KINDS)
def test_a_non_boolean_otel_passthrough_is_refused(kind: str) -> None:
    table = {"kind": kind, "command": "agent", "otel_passthrough": "yes"}
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"a": table}})
    assert str(caught.value) == "harness.toml: providers.a.otel_passthrough: must be true or false"
