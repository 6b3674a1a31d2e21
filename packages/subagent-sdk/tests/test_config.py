"""SDKConfig validation: defaults as specified, clear errors naming the key."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from subagent_core.kit import ChildCommand
from subagent_sdk import SDKConfig


def test_defaults() -> None:
    config = SDKConfig(command="runtime")
    assert (config.provider_name, config.command, config.args, config.cwd) == (
        "dsh-sdk",
        "runtime",
        (),
        None,
    )
    assert (config.provider, config.model, config.max_tokens, config.env) == (
        "deepseek-official",
        "deepseek-chat",
        None,
        {},
    )
    assert (
        config.shutdown_timeout_seconds,
        config.dispose_eof_grace_seconds,
        config.dispose_grace_seconds,
        config.dispose_kill_grace_seconds,
        config.max_frame_bytes,
        config.max_output_bytes,
        config.write_timeout_seconds,
    ) == (0.5, 0.5, 0.5, 3.0, 16 * 1024 * 1024, 8 * 1024 * 1024, 10.0)
    assert config.prewarm == 0


def test_relative_cwd_is_resolved_at_construction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert SDKConfig(command="r", cwd="sub").cwd == tmp_path / "sub"
    assert SDKConfig(command="r", cwd=tmp_path).cwd == tmp_path


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("provider_name", ""),
        ("command", ""),
        ("command", None),
        ("command", "run\x00time"),
        ("args", "one string"),
        ("args", ["ok", 3]),
        ("args", ["nul\x00"]),
        ("cwd", ""),
        ("cwd", 5),
        ("cwd", "/tmp/\x00"),
        ("provider", ""),
        ("model", 1),
        ("max_tokens", 0),
        ("max_tokens", -3),
        ("max_tokens", True),
        ("max_tokens", 1.5),
        ("env", ["A=B"]),
        ("env", {"A": 1}),
        ("env", {"": "x"}),
        ("env", {"A=B": "x"}),
        ("env", {"A\x00": "x"}),
        ("env", {"A": "x\x00"}),
        ("shutdown_timeout_seconds", 0),
        ("dispose_eof_grace_seconds", -1.0),
        ("dispose_grace_seconds", math.inf),
        ("dispose_kill_grace_seconds", math.nan),
        ("dispose_grace_seconds", "3"),
        ("max_frame_bytes", 0),
        ("max_frame_bytes", True),
        ("max_output_bytes", 0),
        ("max_output_bytes", 1.5),
        ("write_timeout_seconds", 0),
        ("write_timeout_seconds", math.inf),
        ("prewarm", -1),
        ("prewarm", 65),
        ("prewarm", True),
        ("prewarm", 1.0),
    ],
)
def test_invalid_values_name_their_key(key: str, value: object) -> None:
    settings: dict[str, object] = {"command": "runtime", key: value}
    with pytest.raises(ValueError, match=rf"^SDKConfig\.{key} "):
        SDKConfig(**settings)  # type: ignore[arg-type]


def test_valid_values_are_normalised() -> None:
    config = SDKConfig(
        command="r",
        args=["a", "b"],
        env={"A": "1", "B": None},
        max_tokens=5,
        dispose_grace_seconds=1,
    )
    assert config.args == ("a", "b")
    assert config.env == {"A": "1", "B": None}
    assert config.child_command == ChildCommand(
        command="r", args=("a", "b"), env={"A": "1", "B": None}
    )
    assert config.dispose_grace_seconds == 1.0
    assert isinstance(config.dispose_grace_seconds, float)
