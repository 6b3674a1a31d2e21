"""ChildCommand: one frozen child description, validated once with fixed messages."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from subagent_core.kit import ChildCommand

MESSAGES = {
    "command must be a non-empty string without NUL",
    "args must be a sequence of strings without NUL",
    "env must be a mapping of names to strings or None",
    "env names must be non-empty strings without '=' or NUL",
    "env values must be strings without NUL, or None",
    "cwd must be a non-empty path without NUL, or None",
}


def test_a_valid_command_is_normalised_and_read_only(tmp_path: Path) -> None:
    args = ["--flag", "value"]
    env: dict[str, str | None] = {"TOKEN": "explicit", "HOME": None}
    command = ChildCommand(command="prog", args=args, env=env, cwd=tmp_path)  # type: ignore[arg-type]
    args.append("later")
    env["LATER"] = "x"
    assert command.args == ("--flag", "value")
    assert command.argv == ("prog", "--flag", "value")
    assert dict(command.env) == {"TOKEN": "explicit", "HOME": None}
    with pytest.raises(TypeError):
        command.env["X"] = "y"  # type: ignore[index]
    assert command.cwd == tmp_path
    assert ChildCommand(command="prog") == ChildCommand(command="prog", args=(), env={})


def test_a_relative_cwd_becomes_absolute_and_existence_is_left_to_spawn() -> None:
    command = ChildCommand(command="prog", cwd=Path("some/../missing"))
    assert command.cwd == Path(os.getcwd()) / "missing"
    assert ChildCommand(command="prog", cwd="rel").cwd == Path(os.getcwd()) / "rel"  # type: ignore[arg-type]


def test_environment_scrubs_the_parent_and_lays_the_explicit_entries_over_it() -> None:
    command = ChildCommand(command="prog", env={"API_TOKEN": "mine", "PATH": None, "X": "1"})
    parent = {"PATH": "/bin", "OPENAI_API_KEY": "parent-secret", "DSH_MODE": "y", "LANG": "C"}
    assert command.environment(parent) == {"API_TOKEN": "mine", "X": "1", "LANG": "C"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"command": ""}, "command must be a non-empty string without NUL"),
        ({"command": "a\x00b"}, "command must be a non-empty string without NUL"),
        ({"command": b"prog"}, "command must be a non-empty string without NUL"),
        ({"args": "one-string"}, "args must be a sequence of strings without NUL"),
        ({"args": ["ok", 3]}, "args must be a sequence of strings without NUL"),
        ({"args": ["secret\x00"]}, "args must be a sequence of strings without NUL"),
        ({"env": [("A", "1")]}, "env must be a mapping of names to strings or None"),
        ({"env": {"": "1"}}, "env names must be non-empty strings without '=' or NUL"),
        ({"env": {"A=B": "1"}}, "env names must be non-empty strings without '=' or NUL"),
        ({"env": {"A\x00": "1"}}, "env names must be non-empty strings without '=' or NUL"),
        ({"env": {1: "1"}}, "env names must be non-empty strings without '=' or NUL"),
        ({"env": {"A": "se\x00cret"}}, "env values must be strings without NUL, or None"),
        ({"env": {"A": 1}}, "env values must be strings without NUL, or None"),
        ({"cwd": ""}, "cwd must be a non-empty path without NUL, or None"),
        ({"cwd": "a\x00b"}, "cwd must be a non-empty path without NUL, or None"),
        ({"cwd": b"/tmp"}, "cwd must be a non-empty path without NUL, or None"),
        ({"cwd": 3}, "cwd must be a non-empty path without NUL, or None"),
    ],
)
def test_bad_values_are_refused_with_fixed_text(fields: dict[str, Any], message: str) -> None:
    values: dict[str, Any] = {"command": "prog", **fields}
    with pytest.raises(ValueError) as caught:
        ChildCommand(**values)
    assert str(caught.value) == message


@given(
    command=st.text(max_size=8),
    args=st.lists(st.text(max_size=8), max_size=3),
    env=st.dictionaries(st.text(max_size=8), st.none() | st.text(max_size=8), max_size=3),
)
def test_any_value_is_accepted_whole_or_refused_without_echoing_it(
    command: str, args: list[str], env: dict[str, str | None]
) -> None:
    built: ChildCommand | None = None
    refused = ""
    try:
        built = ChildCommand(command=command, args=tuple(args), env=env)
    except ValueError as error:
        refused = str(error)
    if built is None:
        assert refused in MESSAGES
        return
    assert built.argv == (command, *args)
    assert dict(built.env) == env
    assert command
    assert "\x00" not in command
    assert all("=" not in name and name and "\x00" not in name for name in env)
