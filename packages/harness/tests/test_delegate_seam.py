"""`harness delegate` and `harness run` on the seam: usage and cost, structured output, the
--approve / deadline flags and the authentication hint, through the installed console script."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness._console.exit_codes import UsageError
from harness._registry.overrides import ProviderOverrides
from model_agent.testing import open_scripted_model_server
from subagent_acp import ACPConfig
from subagent_acp.testing import script_env
from subagent_core import READS_POLICY

SCRIPT = Path(sys.executable).with_name("harness")
COUNTED = {
    "prompt_tokens": 120,
    "completion_tokens": 7,
    "prompt_tokens_details": {"cached_tokens": 64},
}


async def harness(args: list[str], *, env: Mapping[str, str] | None = None) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DEEPSEEK_")}
    environ.update(env or {})
    with anyio.fail_after(90):
        done = await anyio.run_process([str(SCRIPT), *args], check=False, env=environ)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


GRACES = (
    "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
    "dispose_kill_grace_seconds = 1.0\n"
)
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
ACP_HAS_DEADLINES = "idle_timeout_seconds" in {f.name for f in dataclasses.fields(ACPConfig)}


def fake_acp(workspace: Path, name: str, script: Mapping[str, Any]) -> None:
    """A harness.toml with one ACP provider: the scripted fake child with `script`."""
    env_toml = ", ".join(
        f"{key} = {json.dumps(value)}" for key, value in script_env(script).items()
    )
    (workspace / "harness.toml").write_text(
        f'[providers.{name}]\nkind = "acp"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-m", "harness", "fake-acp-child"]\nenv = {{ {env_toml} }}\n{GRACES}',
        encoding="utf-8",
    )


def rules(*replies: dict[str, Any]) -> dict[str, Any]:
    return {"rules": [{"match": "", "replies": list(replies)}]}


async def test_delegate_prints_the_childs_tokens_and_puts_them_in_json(tmp_path: Path) -> None:
    async with open_scripted_model_server(rules({"text": "42", "usage": COUNTED})) as server:
        base = ["delegate", "-w", str(tmp_path), "-p", "model", "--base-url", server.base_url]
        code, out, err = await harness([*base, "answer"])
        assert (code, out) == (0, "42\n"), err
        assert err.splitlines()[-2:] == [
            "tokens: 120 in (64 cached), 7 out",
            "stop reason: completed",
        ]
        code, out, err = await harness([*base, "--json", "answer"])
    assert code == 0, err
    result = json.loads(out.splitlines()[-1])
    assert result["usage"] == {
        "input_tokens": 120,
        "output_tokens": 7,
        "cached_input_tokens": 64,
        "cost": None,
    }
    usage_events = [json.loads(line) for line in out.splitlines() if '"usage"' in line]
    assert usage_events[0] == {
        "type": "usage",
        "input_tokens": 120,
        "output_tokens": 7,
        "cached_input_tokens": 64,
        "cost": None,
    }


async def test_run_prints_the_runs_tokens_at_the_end(tmp_path: Path) -> None:
    async with open_scripted_model_server(rules({"text": "hello", "usage": COUNTED})) as server:
        code, out, err = await harness(
            ["run", "-w", str(tmp_path), "--base-url", server.base_url, "hi"]
        )
    assert (code, out) == (0, "hello\n"), err
    assert err.splitlines()[-1] == (
        "completed: 0 tool call(s), 0 child(ren); tokens: 120 in (64 cached), 7 out"
    )


def test_the_usage_line_shows_cost_and_leaves_out_what_was_not_reported() -> None:
    from harness._console.usage import usage_summary
    from subagent_core import Cost, Usage

    assert usage_summary(Usage(input_tokens=5, cost=Cost(0.0123, "USD"))) == (
        "tokens: 5 in; cost: 0.0123 USD"
    )
    assert usage_summary(Usage(cost=Cost(1.5, "EUR"))) == "cost: 1.5 EUR"
    assert usage_summary(Usage()) is None
    assert usage_summary(None) is None


# -- --output-schema ------------------------------------------------------------------------


async def test_output_schema_prints_the_validated_json(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    async with open_scripted_model_server(rules({"json": {"n": 4}, "text": "four"})) as server:
        base = ["delegate", "-w", str(tmp_path), "-p", "model", "--base-url", server.base_url]
        code, out, err = await harness([*base, "--output-schema", str(schema), "count"])
        assert (code, out) == (0, '{\n  "n": 4\n}\n'), err
        code, out, err = await harness([*base, "--output-schema", str(schema), "--json", "count"])
    assert code == 0, err
    result = json.loads(out.splitlines()[-1])
    assert (result["output"], result["structured_output"]) == ('{"n":4}', {"n": 4})


async def test_output_schema_failing_twice_is_output_schema(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    async with open_scripted_model_server(rules({"text": "four"})) as server:
        code, out, err = await harness(
            [
                "delegate",
                "-w",
                str(tmp_path),
                "-p",
                "model",
                "--base-url",
                server.base_url,
                "--output-schema",
                str(schema),
                "count",
            ]
        )
    assert (code, out) == (1, "four\n")
    assert err.splitlines()[-2:] == [
        "stop reason: error",
        "diagnostic: Subagent failure (provider: model; stage: answer; category: output-schema)",
    ]


async def test_output_schema_is_refused_by_an_acp_provider_before_spawn(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    fake_acp(tmp_path, "fake", {"text": "never"})
    code, out, err = await harness(
        ["delegate", "-w", str(tmp_path), "-p", "fake", "--output-schema", str(schema), "x"]
    )
    assert (code, out) == (2, "")
    assert (
        err == 'harness: subagent provider "fake" does not support the "output_schema" capability\n'
    )


async def test_an_output_schema_that_is_not_an_object_is_a_usage_error(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text("[1]", encoding="utf-8")
    code, _, err = await harness(
        [
            "delegate",
            "-w",
            str(tmp_path),
            "-p",
            "model",
            "--base-url",
            "http://127.0.0.1:9",
            "--output-schema",
            str(schema),
            "x",
        ]
    )
    assert code == 2
    assert err == f"harness: --output-schema: {schema} is not a JSON object (a JSON Schema)\n"


# -- --approve, deadlines -----------------------------------------------------------------


async def test_approve_reads_allows_a_read_and_refuses_an_execute(tmp_path: Path) -> None:
    asks = [{"tool_kind": "read"}, {"tool_kind": "execute"}]
    fake_acp(tmp_path, "fake", {"permission": asks})
    code, out, err = await harness(
        ["delegate", "-w", str(tmp_path), "-p", "fake", "--approve", "reads", "--json", "x"]
    )
    records = [json.loads(line) for line in out.splitlines()]
    decisions = [
        (r["tool_kind"], r["policy"], r["decision"]) for r in records if r["type"] == "permission"
    ]
    assert decisions == [("read", "allow", "allow_once"), ("execute", "reject", "cancelled")]
    result = records[-1]
    assert (code, result["stop_reason"]) == (0, "completed"), err
    assert result["output"] == "[permission selected allow][permission cancelled]"
    assert result["diagnostic"] == (
        "ACP permission (policy: reject; tool kind: execute; decision: cancelled)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--approve", "all", "--permission", "allow"],
            "--permission and --approve both set the permission: give one",
        ),
        (
            ["-p", "model", "--approve", "reads"],
            "--approve, --startup-timeout and --idle-timeout apply to providers with a child "
            'process (acp, sdk, claude, codex); "model" is model',
        ),
        (
            ["-p", "model", "--idle-timeout", "5"],
            "--approve, --startup-timeout and --idle-timeout apply to providers with a child "
            'process (acp, sdk, claude, codex); "model" is model',
        ),
    ],
)
async def test_override_flags_that_cannot_apply_are_usage_errors(
    tmp_path: Path, args: list[str], message: str
) -> None:
    fake_acp(tmp_path, "fake", {"text": "never"})
    provider = [] if "-p" in args else ["-p", "fake"]
    code, out, err = await harness(
        ["delegate", "-w", str(tmp_path), "--base-url", "http://127.0.0.1:9", *provider, *args, "x"]
    )
    assert (code, out, err) == (2, "", f"harness: {message}\n")


def test_overrides_replace_only_fields_the_config_has() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithDeadlines:
        permission: object = "reject"
        startup_timeout_seconds: float | None = 60.0
        idle_timeout_seconds: float | None = 1800.0

    @dataclasses.dataclass(frozen=True)
    class WithoutDeadlines:
        permission: object = "reject"

    both = ProviderOverrides(approve="reads", startup_timeout_seconds=2.0, idle_timeout_seconds=3.0)
    assert both.apply(WithDeadlines(), provider="p") == WithDeadlines(READS_POLICY, 2.0, 3.0)
    assert ProviderOverrides(approve="all").apply(WithoutDeadlines(), provider="p") == (
        WithoutDeadlines("allow")
    )
    with pytest.raises(UsageError) as caught:
        ProviderOverrides(idle_timeout_seconds=3.0).apply(WithoutDeadlines(), provider="p")
    assert str(caught.value) == '--idle-timeout: provider "p" has no idle_timeout_seconds setting'


@pytest.mark.skipif(not ACP_HAS_DEADLINES, reason="ACPConfig deadlines have not landed yet")
async def test_startup_timeout_bounds_a_child_that_never_answers_initialize(tmp_path: Path) -> None:
    fake_acp(tmp_path, "hung", {"hang_at": "initialize"})
    code, out, err = await harness(
        ["delegate", "-w", str(tmp_path), "-p", "hung", "--startup-timeout", "1", "x"]
    )
    assert (code, out) == (1, "")
    assert err.splitlines()[:2] == [
        "stop reason: error",
        "diagnostic: Subagent failure (provider: hung; stage: initialize; category: timeout)",
    ]


@pytest.mark.skipif(not ACP_HAS_DEADLINES, reason="ACPConfig deadlines have not landed yet")
async def test_idle_timeout_ends_a_silent_child_error_not_aborted(tmp_path: Path) -> None:
    fake_acp(tmp_path, "quiet", {"text": "partial", "hang_at": "prompt"})
    code, out, err = await harness(
        ["delegate", "-w", str(tmp_path), "-p", "quiet", "--idle-timeout", "1", "--json", "x"]
    )
    result = json.loads(out.splitlines()[-1])
    assert (code, result["stop_reason"], result["timed_out"]) == (1, "error", False), err
    assert result["output"] == "partial"
    assert result["diagnostic"] == (
        "Subagent failure (provider: quiet; stage: prompt; category: timeout)"
    )


# -- the authentication hint ----------------------------------------------------------------


async def test_an_authentication_failure_gets_a_next_step_line_apart(tmp_path: Path) -> None:
    fake_acp(tmp_path, "locked", {"error": {"at": "prompt", "code": -32000}})
    code, out, err = await harness(["delegate", "-w", str(tmp_path), "-p", "locked", "x"])
    assert (code, out) == (1, "")
    assert err.splitlines()[-3:] == [
        "stop reason: error",
        "diagnostic: Subagent failure (provider: locked; stage: prompt; category: authentication)",
        "harness: log the agent in or pass its key in the provider's env",
    ]
    code, out, _ = await harness(["delegate", "-w", str(tmp_path), "-p", "locked", "--json", "x"])
    result = json.loads(out.splitlines()[-1])
    assert result["diagnostic"] == (
        "Subagent failure (provider: locked; stage: prompt; category: authentication)"
    )
    assert "log the agent in" not in out
