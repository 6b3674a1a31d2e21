"""The scenario bodies (imports the providers and model-agent; loaded only to run them)."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
from model_agent import Agent, AgentEvent, ChildEnded, ToolEnded
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import (
    CancelSignal,
    StopReason,
    SubagentProvider,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_sdk import SDKConfig, SDKProvider

from ._agent_factory import agent_config
from ._config import API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_MODEL
from ._endpoint import ResolvedEndpoint
from ._providers import HARNESS_ARGV
from ._scenarios import Expectation, Scenario, ScenarioContext

_AGENT_STATUS: dict[str, StopReason] = {
    "completed": "completed",
    "max-tokens": "max-tokens",
    "refusal": "refusal",
    "cancelled": "aborted",
}
ACP_FAILURE = "Subagent failure (provider: acp; stage: prompt; category: transport)"
SDK_FAILURE = (
    "Subagent failure (provider: dsh-sdk; stage: session-run; category: child-error; "
    "stop reason: error)"
)
PROOF_TEXT = "ACP_CHILD_WAS_HERE"


# -- building blocks ----------------------------------------------------------------------


def acp_agent_provider(
    context: ScenarioContext,
    *,
    name: str = "acp",
    permission: Literal["allow", "reject"] = "reject",
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    base_url: str | None = None,
) -> ACPProvider:
    """`harness acp-agent` as an ACP child, backed by the scenario's model endpoint."""
    command, *prefix = HARNESS_ARGV
    eof, term, kill = context.graces
    return ACPProvider(
        ACPConfig(
            provider_name=name,
            command=command,
            args=[*prefix, "acp-agent", "--base-url", base_url or context.base_url, *extra_args],
            permission=permission,
            env=env or {},
            dispose_eof_grace_seconds=eof,
            dispose_grace_seconds=term,
            dispose_kill_grace_seconds=kill,
        )
    )


def sdk_runtime_provider(
    context: ScenarioContext,
    *,
    name: str = "dsh-sdk",
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    base_url: str | None = None,
) -> SDKProvider:
    """`harness sdk-runtime` as an SDK child, backed by the scenario's model endpoint."""
    command, *prefix = HARNESS_ARGV
    eof, term, kill = context.graces
    return SDKProvider(
        SDKConfig(
            provider_name=name,
            command=command,
            args=[*prefix, "sdk-runtime", "--base-url", base_url or context.base_url, *extra_args],
            env=env or {},
            dispose_eof_grace_seconds=eof,
            dispose_grace_seconds=term,
            dispose_kill_grace_seconds=kill,
        )
    )


def fake_acp_provider(context: ScenarioContext, env: dict[str, str]) -> ACPProvider:
    """`harness fake-acp-child` driven by its scenario environment."""
    command, *prefix = HARNESS_ARGV
    eof, term, kill = context.graces
    return ACPProvider(
        ACPConfig(
            provider_name="acp-fake",
            command=command,
            args=[*prefix, "fake-acp-child"],
            env=env,
            dispose_eof_grace_seconds=eof,
            dispose_grace_seconds=term,
            dispose_kill_grace_seconds=kill,
        )
    )


async def run_child(
    provider: SubagentProvider,
    prompt: str,
    context: ScenarioContext,
    *,
    cancel_when: Callable[[], Awaitable[None]] | None = None,
) -> SubagentResult:
    """One run through a registry; a start error becomes an `error` row with its diagnostic.

    `cancel_when`, if given, is awaited after start; when it returns the run is cancelled.
    """
    registry = SubagentRegistry()
    registry.register(provider)
    cancel = CancelSignal()
    request = SubagentRequest(prompt=prompt, cwd=context.workspace, cancel=cancel)
    try:
        run = await registry.start(provider.name, request)
    except SubagentStartError as error:
        return SubagentResult(stop_reason="error", diagnostic=str(error))
    async with run:
        if cancel_when is None:
            return await run.result()
        result: SubagentResult | None = None
        async with anyio.create_task_group() as tg:

            async def trigger() -> None:
                await cancel_when()
                cancel.cancel()

            tg.start_soon(trigger)
            result = await run.result()
            tg.cancel_scope.cancel()
        assert result is not None
        return result


async def wait_for_file(path: Path) -> None:
    """Returns once `path` exists (a marker a child writes; bounded by the caller)."""
    apath = anyio.Path(path)
    # Another process creates the file: there is no in-process event to wait on.
    while not await apath.exists():  # noqa: ASYNC110
        await anyio.sleep(0.02)


def _endpoint(base_url: str, *, real: bool) -> ResolvedEndpoint:
    if real:
        return ResolvedEndpoint(
            base_url=DEFAULT_BASE_URL, model=DEFAULT_MODEL, api_key=os.environ.get(API_KEY_ENV)
        )
    return ResolvedEndpoint(base_url=base_url, model=DEFAULT_MODEL, api_key=None)


# -- the in-process agent -----------------------------------------------------------------

_AGENT_RULES: list[dict[str, Any]] = [
    {"match": "DEMO-CHILD", "replies": [{"text": "child: the command said harness-demo-ok"}]},
    {
        "match": "DEMO-AGENT",
        "replies": [
            {
                "tool_calls": [
                    {"name": "process_execute", "arguments": {"command": "echo harness-demo-ok"}}
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "subagent_delegate",
                        "arguments": {
                            "task": "DEMO-CHILD: confirm what the command printed",
                            "description": "confirm the output",
                        },
                    }
                ]
            },
            {
                "text": "The command printed harness-demo-ok and the child confirmed it.",
                "chunks": 3,
            },
        ],
    },
]


async def _agent_body(context: ScenarioContext) -> SubagentResult:
    events: list[AgentEvent] = []
    config = agent_config(
        _endpoint(context.base_url, real=False), workspace=context.workspace, mode="execute"
    )
    agent = Agent(config, observer=events.append)
    result = await agent.run(
        "DEMO-AGENT: run a command, then ask a child to confirm", CancelSignal()
    )
    ran = any(
        isinstance(e, ToolEnded)
        and e.name == "process_execute"
        and "harness-demo-ok" in e.content
        and not e.is_error
        for e in events
    )
    child = any(isinstance(e, ChildEnded) and e.status == "completed" for e in events)
    stop = _AGENT_STATUS.get(str(result.status), "error")
    if stop == "completed" and not (ran and child):
        return SubagentResult(stop_reason="error", output=result.output)
    return SubagentResult(stop_reason=stop, output=result.output)


# -- scenarios ----------------------------------------------------------------------------


async def _acp_self(context: ScenarioContext) -> SubagentResult:
    return await run_child(
        acp_agent_provider(context, extra_args=("--mode", "ask")),
        "DEMO-ACP: say hello",
        context,
    )


async def _sdk_self(context: ScenarioContext) -> SubagentResult:
    return await run_child(
        sdk_runtime_provider(context, extra_args=("--mode", "ask")),
        "DEMO-SDK: say hello",
        context,
    )


async def _acp_fake(context: ScenarioContext) -> SubagentResult:
    from subagent_acp.testing import script_env

    env = script_env({"text": "Hello from the fake ACP child.", "chunks": 3})
    return await run_child(fake_acp_provider(context, env), "say hello", context)


async def _sdk_fake(context: ScenarioContext) -> SubagentResult:
    from subagent_sdk.testing import FakeScript

    script = FakeScript(text="Hello from the fake SDK runtime.", deltas=3)
    command, *prefix = HARNESS_ARGV
    eof, term, kill = context.graces
    provider = SDKProvider(
        SDKConfig(
            provider_name="dsh-sdk-fake",
            command=command,
            args=[*prefix, "fake-sdk-runtime", "--json", script.to_json()],
            dispose_eof_grace_seconds=eof,
            dispose_grace_seconds=term,
            dispose_kill_grace_seconds=kill,
        )
    )
    return await run_child(provider, "say hello", context)


def demo() -> list[Scenario]:
    """The demo rows."""
    return [
        Scenario(
            name="agent: command + in-process child",
            rules=_AGENT_RULES,
            body=_agent_body,
            expect=Expectation(stop_reason="completed", output_contains="harness-demo-ok"),
        ),
        Scenario(
            name="acp: fake ACP child",
            rules=[],
            body=_acp_fake,
            expect=Expectation(
                stop_reason="completed", output_contains="Hello from the fake ACP child."
            ),
        ),
        Scenario(
            name="acp: harness acp-agent",
            rules=[
                {
                    "match": "DEMO-ACP",
                    "replies": [{"text": "Hello over ACP from harness.", "chunks": 4}],
                }
            ],
            body=_acp_self,
            expect=Expectation(
                stop_reason="completed", output_contains="Hello over ACP from harness."
            ),
        ),
        Scenario(
            name="sdk: fake SDK runtime",
            rules=[],
            body=_sdk_fake,
            expect=Expectation(
                stop_reason="completed", output_contains="Hello from the fake SDK runtime."
            ),
        ),
        Scenario(
            name="sdk: harness sdk-runtime",
            rules=[
                {
                    "match": "DEMO-SDK",
                    "replies": [{"text": "Hello over the SDK protocol.", "chunks": 4}],
                }
            ],
            body=_sdk_self,
            expect=Expectation(
                stop_reason="completed", output_contains="Hello over the SDK protocol."
            ),
        ),
    ]


async def _acp_fail(context: ScenarioContext) -> SubagentResult:
    return await run_child(acp_agent_provider(context), "E2E-ACP-FAIL: anything", context)


async def _sdk_fail(context: ScenarioContext) -> SubagentResult:
    return await run_child(sdk_runtime_provider(context), "E2E-SDK-FAIL: anything", context)


def _hang_rules(token: str) -> list[dict[str, Any]]:
    marker = f"{token.lower()}-started"
    return [
        {
            "match": token,
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "process_execute",
                            # The marker holds the command's pid: `exec` keeps it for sleep.
                            "arguments": {"command": f"echo $$ > {marker}; exec sleep 60"},
                        }
                    ]
                },
                {"text": "finished"},
            ],
        }
    ]


async def _acp_cancel(context: ScenarioContext) -> SubagentResult:
    provider = acp_agent_provider(context, extra_args=("--no-ask-permission",))
    marker = context.workspace / "e2e-acp-cancel-started"
    return await run_child(
        provider,
        "E2E-ACP-CANCEL: run a long command",
        context,
        cancel_when=lambda: wait_for_file(marker),
    )


async def _sdk_cancel(context: ScenarioContext) -> SubagentResult:
    provider = sdk_runtime_provider(context)
    marker = context.workspace / "e2e-sdk-cancel-started"
    return await run_child(
        provider,
        "E2E-SDK-CANCEL: run a long command",
        context,
        cancel_when=lambda: wait_for_file(marker),
    )


def failures() -> list[Scenario]:
    """Scripted model failures and cancels over both wires."""
    return [
        Scenario(
            name="acp: acp-agent model failure",
            rules=[{"match": "E2E-ACP-FAIL", "replies": [{"status": 400}]}],
            body=_acp_fail,
            expect=Expectation(stop_reason="error", diagnostic=ACP_FAILURE),
        ),
        Scenario(
            name="sdk: sdk-runtime model failure",
            rules=[{"match": "E2E-SDK-FAIL", "replies": [{"status": 400}]}],
            body=_sdk_fail,
            expect=Expectation(stop_reason="error", diagnostic=SDK_FAILURE),
        ),
        Scenario(
            name="acp: cancel reaches the child's command",
            rules=_hang_rules("E2E-ACP-CANCEL"),
            body=_acp_cancel,
            expect=Expectation(stop_reason="aborted"),
        ),
        Scenario(
            name="sdk: cancel reaches the child's command",
            rules=_hang_rules("E2E-SDK-CANCEL"),
            body=_sdk_cancel,
            expect=Expectation(stop_reason="aborted"),
        ),
    ]


# -- keyed --------------------------------------------------------------------------------

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
    """The real-model scenarios; with `real=False` the same structure on the scripted model."""

    def base(context: ScenarioContext) -> str:
        return DEFAULT_BASE_URL if real else context.base_url

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
        Scenario(
            name="keyed: acp-agent PONG",
            rules=keyed_rules(),
            body=pong,
            expect=Expectation(stop_reason="completed", output_contains="PONG"),
            keyed=True,
        ),
        Scenario(
            name="keyed: acp-agent writes proof.txt (allow)",
            rules=keyed_rules(),
            body=acp_proof,
            expect=Expectation(stop_reason="completed"),
            keyed=True,
            extra_check=_proof_check,
        ),
        Scenario(
            name="keyed: sdk-runtime writes proof.txt",
            rules=keyed_rules(),
            body=sdk_proof,
            expect=Expectation(stop_reason="completed"),
            keyed=True,
            extra_check=_proof_check,
        ),
        Scenario(
            name="keyed: harness run with a command",
            rules=keyed_rules(),
            body=harness_run,
            expect=Expectation(stop_reason="completed", output_contains="42"),
            keyed=True,
        ),
    ]


async def run_harness_command(args: list[str], *, env: dict[str, str]) -> SubagentResult:
    """Runs `python -m harness ARGS` to the end; exit 0 → completed with its stdout."""
    from subagent_core import child_env, open_managed_process

    output = bytearray()
    async with open_managed_process(
        [sys.executable, "-m", "harness", *args],
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
