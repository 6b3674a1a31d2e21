"""The keyed scenarios: real-model runs (`DEEPSEEK_API_KEY`), or their structure on the script.

With `real=False` the same bodies run against the scripted model, so the keyless suite checks
that the keyed scenarios are wired right.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from subagent_core import SubagentResult, child_env
from subagent_core.kit import open_managed_process

from harness._config.settings import API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL
from harness._registry.build import HARNESS_ARGV

from .kit import acp_agent_provider, run_child, sdk_runtime_provider
from .scenario import Expectation, Scenario, ScenarioContext

PROOF_TEXT = "ACP_CHILD_WAS_HERE"

PONG_PROMPT = "KEYED-PONG: reply with exactly the word PONG and nothing else."
PROOF_PROMPT = (
    "KEYED-PROOF: use your process_execute tool to run this exact command in the workspace: "
    f"printf {PROOF_TEXT} > proof.txt  — then reply DONE."
)


def keyed_rules() -> list[dict[str, Any]]:
    """What the scripted model does in place of the real one (the keyed scenarios' structure)."""
    proof_call = {
        "tool_calls": [
            {
                "name": "process_execute",
                "arguments": {"command": f"printf {PROOF_TEXT} > proof.txt"},
            }
        ]
    }
    return [
        {"match": "KEYED-PONG", "replies": [{"text": "PONG"}]},
        {"match": "KEYED-PROOF", "replies": [proof_call, {"text": "DONE"}]},
        {
            "match": "KEYED-RUN",
            "replies": [
                {
                    "tool_calls": [
                        {"name": "process_execute", "arguments": {"command": "echo $((6*7))"}}
                    ]
                },
                {"text": "The command printed 42."},
            ],
        },
    ]


def _key_env(real: bool) -> dict[str, str]:
    key = os.environ.get(API_KEY_ENV)
    return {API_KEY_ENV: key} if real and key else {}


def _proof_check(context: ScenarioContext, result: SubagentResult) -> str | None:
    proof = context.workspace / "proof.txt"
    if not proof.is_file() or PROOF_TEXT not in proof.read_text(encoding="utf-8"):
        return f"proof.txt does not contain {PROOF_TEXT}"
    return None


def keyed(*, real: bool = True) -> list[Scenario]:
    """The real-model scenarios; with `real=False` the same structure on the scripted model.

    The real ones talk to `DEEPSEEK_BASE_URL` when set (a proxy or another compatible
    endpoint), else DeepSeek.
    """

    def base(context: ScenarioContext) -> str:
        if not real:
            return context.base_url
        return os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL

    async def pong(context: ScenarioContext) -> SubagentResult:
        provider = acp_agent_provider(context, env=_key_env(real), base_url=base(context))
        return await run_child(provider, PONG_PROMPT, context)

    async def acp_proof(context: ScenarioContext) -> SubagentResult:
        provider = acp_agent_provider(
            context, permission="allow", env=_key_env(real), base_url=base(context)
        )
        return await run_child(provider, PROOF_PROMPT, context)

    async def sdk_proof(context: ScenarioContext) -> SubagentResult:
        provider = sdk_runtime_provider(context, env=_key_env(real), base_url=base(context))
        return await run_child(provider, PROOF_PROMPT, context)

    async def harness_run(context: ScenarioContext) -> SubagentResult:
        return await run_harness_command(
            [
                "run",
                "--mode",
                "execute",
                "--workspace",
                str(context.workspace),
                "--base-url",
                base(context),
                "KEYED-RUN: what is 6*7? Compute it by running `echo $((6*7))` with your "
                "process_execute tool, then answer with the number.",
            ],
            env=_key_env(real),
        )

    return [
        _row("keyed: acp-agent PONG", pong, output="PONG"),
        _row("keyed: acp-agent writes proof.txt (allow)", acp_proof, check=_proof_check),
        _row("keyed: sdk-runtime writes proof.txt", sdk_proof, check=_proof_check),
        _row("keyed: harness run with a command", harness_run, output="42"),
    ]


def _row(
    name: str,
    body: Callable[[ScenarioContext], Awaitable[SubagentResult]],
    *,
    output: str | None = None,
    check: Callable[[ScenarioContext, SubagentResult], str | None] | None = None,
) -> Scenario:
    """A keyed row: it must complete (with `output` in its text, and `check` passing)."""
    return Scenario(
        name=name,
        rules=keyed_rules(),
        body=body,
        expect=Expectation(stop_reason="completed", output_contains=output),
        keyed=True,
        extra_check=check,
    )


async def run_harness_command(args: list[str], *, env: dict[str, str]) -> SubagentResult:
    """Runs `python -m harness ARGS` to the end; exit 0 → completed with its stdout."""
    output = bytearray()
    async with open_managed_process(
        [*HARNESS_ARGV, *args],
        env=child_env(env),
        stdin="devnull",
        stderr="devnull",
    ) as process:
        assert process.stdout is not None
        async for chunk in process.stdout:
            output.extend(chunk)
        outcome = await process.wait()
    text = output.decode("utf-8", errors="replace")
    return SubagentResult(
        stop_reason="completed" if outcome.exit_code == 0 else "error", output=text
    )
