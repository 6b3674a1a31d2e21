"""ACPConfig: every bad value is a ValueError naming its key; good values are normalised."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import subagent_acp
from subagent_acp import ACPConfig


def test_defaults() -> None:
    config = ACPConfig(command="agent")
    assert config.provider_name == "acp"
    assert config.args == ()
    assert config.cwd is None
    assert config.permission == "reject"
    assert dict(config.env) == {}
    assert (
        config.dispose_eof_grace_seconds,
        config.dispose_grace_seconds,
        config.dispose_kill_grace_seconds,
    ) == (0.5, 0.5, 3.0)
    assert config.max_frame_bytes == 16 * 1024 * 1024
    assert config.max_output_bytes == 8 * 1024 * 1024
    assert config.write_timeout_seconds == 10.0
    assert (config.fs, config.terminal, config.mode, config.model) == ("none", False, None, None)
    assert config.argv == ["agent"]


def test_permission_accepts_a_callback() -> None:
    async def ask(question: object) -> str | None:
        return None

    assert ACPConfig(command="agent", permission=ask).permission is ask


def test_values_are_normalised(tmp_path: Path) -> None:
    env = {"A": "1", "B": None}
    config = ACPConfig(
        command="agent", args=["x", "y"], cwd=str(tmp_path), env=env, permission="allow"
    )
    env["A"] = "changed"
    assert config.args == ("x", "y")
    assert config.cwd == tmp_path
    assert dict(config.env) == {"A": "1", "B": None}
    assert config.argv == ["agent", "x", "y"]
    with pytest.raises(TypeError):
        config.env["C"] = "3"  # type: ignore[index]


BAD: list[tuple[str, dict[str, Any]]] = [
    ("command", {"command": ""}),
    ("command", {"command": 3}),
    ("command", {"command": "a\x00b"}),
    ("args", {"args": "one string"}),
    ("args", {"args": [1]}),
    ("args", {"args": ["a\x00"]}),
    ("provider_name", {"provider_name": ""}),
    ("provider_name", {"provider_name": "has space"}),
    ("provider_name", {"provider_name": "x; stage: fake)"}),
    ("provider_name", {"provider_name": "x" * 65}),
    ("cwd", {"cwd": ""}),
    ("cwd", {"cwd": 5}),
    ("cwd", {"cwd": "/definitely/not/here"}),
    ("permission", {"permission": "ask"}),
    ("env", {"env": ["A=1"]}),
    ("env", {"env": {"": "x"}}),
    ("env", {"env": {"A=B": "x"}}),
    ("env", {"env": {"A": 1}}),
    ("env", {"env": {"A": "x\x00"}}),
    ("dispose_eof_grace_seconds", {"dispose_eof_grace_seconds": 0}),
    ("dispose_eof_grace_seconds", {"dispose_eof_grace_seconds": -1.0}),
    ("dispose_grace_seconds", {"dispose_grace_seconds": math.inf}),
    ("dispose_grace_seconds", {"dispose_grace_seconds": math.nan}),
    ("dispose_kill_grace_seconds", {"dispose_kill_grace_seconds": True}),
    ("dispose_kill_grace_seconds", {"dispose_kill_grace_seconds": "3"}),
    ("max_frame_bytes", {"max_frame_bytes": 0}),
    ("max_frame_bytes", {"max_frame_bytes": 1.5}),
    ("max_frame_bytes", {"max_frame_bytes": True}),
    ("max_output_bytes", {"max_output_bytes": 0}),
    ("max_output_bytes", {"max_output_bytes": "8"}),
    ("write_timeout_seconds", {"write_timeout_seconds": 0}),
    ("write_timeout_seconds", {"write_timeout_seconds": math.inf}),
    ("permission", {"permission": 3}),
    ("fs", {"fs": "write"}),
    ("fs", {"fs": True}),
    ("terminal", {"terminal": "yes"}),
    ("mode", {"mode": ""}),
    ("model", {"model": 5}),
    ("child_stderr", {"child_stderr": "inherit"}),
]


@pytest.mark.parametrize(
    ("key", "fields"), BAD, ids=[f"{key}-{i}" for i, (key, _) in enumerate(BAD)]
)
def test_bad_values_name_their_key(key: str, fields: dict[str, Any]) -> None:
    fields = {"command": "agent", **fields}
    with pytest.raises(ValueError, match=rf"^ACPConfig\.{key} "):
        ACPConfig(**fields)


def test_public_names() -> None:
    assert subagent_acp.__all__ == sorted(subagent_acp.__all__)
    assert subagent_acp.__all__ == ["ACPConfig", "ACPProvider"]
    for name in subagent_acp.__all__:
        assert getattr(subagent_acp, name).__name__ == name
    with pytest.raises(AttributeError):
        _ = subagent_acp.NotAThing  # type: ignore[attr-defined]


def test_testing_public_names() -> None:
    from subagent_acp import testing

    assert testing.__all__ == sorted(testing.__all__)
