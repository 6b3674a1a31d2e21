"""`harness delegate` and `harness run` on the seam: usage and cost, structured output, the
--approve / deadline flags and the authentication hint, through the installed console script."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from model_agent.testing import open_scripted_model_server

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
    from harness._usage_view import usage_summary
    from subagent_core import Cost, Usage

    assert usage_summary(Usage(input_tokens=5, cost=Cost(0.0123, "USD"))) == (
        "tokens: 5 in; cost: 0.0123 USD"
    )
    assert usage_summary(Usage(cost=Cost(1.5, "EUR"))) == "cost: 1.5 EUR"
    assert usage_summary(Usage()) is None
    assert usage_summary(None) is None
