"""The demo and end-to-end scenario bodies (imports the providers and model-agent).

The demo shows the happy paths and the safety: a crashing child, a failed turn and a cancel
each end with their exact safe diagnostic (or none), and what the children wrote on stderr or
put in error messages reaches no row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from model_agent import Agent, AgentEvent, ChildEnded, ToolEnded
from subagent_core import CancelSignal, StopReason, SubagentResult

from harness._config.endpoint import ResolvedEndpoint
from harness._config.settings import DEFAULT_MODEL
from harness._registry.model_agent_config import agent_config

from .kit import (
    acp_agent_provider,
    claude_fake_provider,
    leaked_text,
    process_left,
    run_child,
    sdk_runtime_provider,
    self_provider,
    wait_for_file,
)
from .scenario import Expectation, Scenario, ScenarioContext

_AGENT_STATUS: dict[str, StopReason] = {
    "completed": "completed",
    "max-tokens": "max-tokens",
    "refusal": "refusal",
    "cancelled": "aborted",
}
CLAUDE_REFUSED = "Claude permission (policy: reject; tool kind: edit; decision: reject_once)"
ACP_FAILURE = "Subagent failure (provider: acp; stage: prompt; category: transport)"
ACP_CRASH = "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)"
SDK_FAILURE = (
    "Subagent failure (provider: dsh-sdk; stage: session-run; category: child-error; "
    "stop reason: error)"
)
SECRET = "DEMO-SECRET-7c1f9e"
"""Stands for a token a child leaks on stderr or in an error message; it must reach no row."""
CHILD_STDERR = "child-stderr.log"

Body = Callable[[ScenarioContext], Awaitable[SubagentResult]]
Check = Callable[[ScenarioContext, SubagentResult], str | None]


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
        ResolvedEndpoint(base_url=context.base_url, model=DEFAULT_MODEL, api_key=None),
        workspace=context.workspace,
        mode="execute",
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


# -- happy paths --------------------------------------------------------------------------


async def _acp_fake(context: ScenarioContext) -> SubagentResult:
    from subagent_acp.testing import script_env

    env = script_env({"text": "Hello from the fake ACP child.", "chunks": 3})
    provider = self_provider(context, "acp", "acp-fake", "fake-acp-child", env=env)
    return await run_child(provider, "say hello", context)


async def _claude_fake(context: ScenarioContext) -> SubagentResult:
    provider = claude_fake_provider(
        context, {"text": "Hello from the fake Claude CLI.", "chunks": 3}
    )
    return await run_child(provider, "say hello", context)


async def _claude_refused(context: ScenarioContext) -> SubagentResult:
    target = context.workspace / "claude-proof.txt"
    tool = {"name": "Write", "input": {"file_path": str(target), "content": "x"}}
    provider = claude_fake_provider(context, {"tool": tool, "text": "I could not write it."})
    return await run_child(provider, "write a file", context)


def _nothing_written(context: ScenarioContext, result: SubagentResult) -> str | None:
    if (context.workspace / "claude-proof.txt").exists():
        return "the refused Write left a file"
    return None


async def _acp_self(context: ScenarioContext) -> SubagentResult:
    provider = acp_agent_provider(context, extra_args=("--mode", "ask"))
    return await run_child(provider, "DEMO-ACP: say hello", context)


async def _sdk_fake(context: ScenarioContext) -> SubagentResult:
    from subagent_sdk.testing import FakeScript

    script = FakeScript(text="Hello from the fake SDK runtime.", deltas=3)
    provider = self_provider(
        context, "sdk", "dsh-sdk-fake", "fake-sdk-runtime", "--json", script.to_json()
    )
    return await run_child(provider, "say hello", context)


async def _sdk_self(context: ScenarioContext) -> SubagentResult:
    provider = sdk_runtime_provider(context, extra_args=("--mode", "ask"))
    return await run_child(provider, "DEMO-SDK: say hello", context)


async def _codex_fake(context: ScenarioContext) -> SubagentResult:
    """A `kind = "codex"` provider on the stdlib fake app-server (codex's own protocol)."""
    import sys

    from subagent_codex.testing import scenario_env

    from harness._config.provider_tables import provider_from_table
    from harness._registry.build import build_provider, with_graces

    turn = [
        {"delta": "Hello from "},
        {"message": "Hello from the fake Codex app-server.", "phase": "final_answer"},
        {"usage": [12, 2, 5]},
        {"complete": "completed"},
    ]
    settings = provider_from_table(
        "codex-fake",
        {
            "kind": "codex",
            "command": sys.executable,
            "args": ["-m", "subagent_codex.testing"],
            "env": scenario_env({"turn": turn}),
            "sandbox": "read-only",
        },
    )
    provider = build_provider(
        with_graces(settings, *context.graces), endpoint=None, workspace=context.workspace
    )
    return await run_child(provider, "say hello", context)


def _completes(name: str, body: Body, text: str, rules: list[dict[str, Any]]) -> Scenario:
    return Scenario(
        name=name,
        rules=rules,
        body=body,
        expect=Expectation(stop_reason="completed", output_contains=text),
    )


def _says(token: str, text: str) -> list[dict[str, Any]]:
    return [{"match": token, "replies": [{"text": text, "chunks": 4}]}]


# -- safety -------------------------------------------------------------------------------


async def _acp_crash(context: ScenarioContext) -> SubagentResult:
    """The fake ACP child streams, writes a secret to stderr, then exits 3 mid-prompt."""
    from subagent_acp.testing import script_env

    env = script_env(
        {
            "text": "Working on it",
            "stderr": {"text": f"fatal: token={SECRET}\n", "bytes": 4096},
            "crash": {"at": "after_prompt_output", "exit_code": 3},
        }
    )
    provider = self_provider(
        context,
        "acp",
        "acp",
        "fake-acp-child",
        env=env,
        stderr_to=context.workspace / CHILD_STDERR,
    )
    return await run_child(provider, "DEMO-CRASH: start", context)


def _crash_check(context: ScenarioContext, result: SubagentResult) -> str | None:
    written = (context.workspace / CHILD_STDERR).read_text(encoding="utf-8", errors="replace")
    if SECRET not in written:
        return "the child did not write its secret to stderr"
    return leaked_text(SECRET, result)


async def _sdk_fail(context: ScenarioContext) -> SubagentResult:
    return await run_child(sdk_runtime_provider(context), "DEMO-FAILING-TURN: anything", context)


def _sdk_fail_rules() -> list[dict[str, Any]]:
    """The model refuses the request with an error message carrying the secret."""
    body = {"error": {"message": f"invalid api key {SECRET}", "type": "invalid_request_error"}}
    return [{"match": "DEMO-FAILING-TURN", "replies": [{"status": 400, "body": body}]}]


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


ACP_CANCEL_MARKER = "demo-cancel-started"
SDK_CANCEL_MARKER = "e2e-sdk-cancel-started"


async def _acp_cancel(context: ScenarioContext) -> SubagentResult:
    provider = acp_agent_provider(context, extra_args=("--no-ask-permission",))
    return await run_child(
        provider,
        "DEMO-CANCEL: run a long command",
        context,
        cancel_when=lambda: wait_for_file(context.workspace / ACP_CANCEL_MARKER),
    )


async def _sdk_cancel(context: ScenarioContext) -> SubagentResult:
    return await run_child(
        sdk_runtime_provider(context),
        "E2E-SDK-CANCEL: run a long command",
        context,
        cancel_when=lambda: wait_for_file(context.workspace / SDK_CANCEL_MARKER),
    )


def _command_gone(marker: str) -> Check:
    def check(context: ScenarioContext, result: SubagentResult) -> str | None:
        return process_left(context.workspace / marker)

    return check


async def _acp_fail(context: ScenarioContext) -> SubagentResult:
    return await run_child(acp_agent_provider(context), "E2E-ACP-FAIL: anything", context)


# -- the tables -----------------------------------------------------------------------------


def demo() -> list[Scenario]:
    """The demo rows: every way of delegating, then what the product does when things fail."""
    return [
        Scenario(
            name="agent: command + in-process child",
            rules=_AGENT_RULES,
            body=_agent_body,
            expect=Expectation(stop_reason="completed", output_contains="harness-demo-ok"),
        ),
        _completes("acp: fake ACP child", _acp_fake, "Hello from the fake ACP child.", []),
        _completes(
            "acp: harness acp-agent",
            _acp_self,
            "Hello over ACP from harness.",
            _says("DEMO-ACP", "Hello over ACP from harness."),
        ),
        _completes("claude: fake Claude CLI", _claude_fake, "Hello from the fake Claude CLI.", []),
        Scenario(
            name="claude: Write refused by the default policy",
            rules=[],
            body=_claude_refused,
            expect=Expectation(
                stop_reason="completed",
                output_contains="I could not write it.",
                diagnostic=CLAUDE_REFUSED,
            ),
            extra_check=_nothing_written,
        ),
        _completes("sdk: fake SDK runtime", _sdk_fake, "Hello from the fake SDK runtime.", []),
        _completes(
            "codex: fake app-server", _codex_fake, "Hello from the fake Codex app-server.", []
        ),
        _completes(
            "sdk: harness sdk-runtime",
            _sdk_self,
            "Hello over the SDK protocol.",
            _says("DEMO-SDK", "Hello over the SDK protocol."),
        ),
        Scenario(
            name="acp: child crashes mid-prompt, secret on stderr",
            rules=[],
            body=_acp_crash,
            expect=Expectation(stop_reason="error", diagnostic=ACP_CRASH),
            extra_check=_crash_check,
        ),
        Scenario(
            name="sdk: sdk-runtime turn fails, secret in model error",
            rules=_sdk_fail_rules(),
            body=_sdk_fail,
            expect=Expectation(stop_reason="error", diagnostic=SDK_FAILURE),
            extra_check=lambda context, result: leaked_text(SECRET, result),
        ),
        Scenario(
            name="acp: cancel stops the child's command",
            rules=_hang_rules("DEMO-CANCEL"),
            body=_acp_cancel,
            expect=Expectation(stop_reason="aborted"),
            extra_check=_command_gone(ACP_CANCEL_MARKER),
        ),
    ]


def failures() -> list[Scenario]:
    """More failure and cancel paths for `harness e2e` (the demo has the others)."""
    return [
        Scenario(
            name="acp: acp-agent model failure",
            rules=[{"match": "E2E-ACP-FAIL", "replies": [{"status": 400}]}],
            body=_acp_fail,
            expect=Expectation(stop_reason="error", diagnostic=ACP_FAILURE),
        ),
        Scenario(
            name="sdk: cancel stops the child's command",
            rules=_hang_rules("E2E-SDK-CANCEL"),
            body=_sdk_cancel,
            expect=Expectation(stop_reason="aborted"),
            extra_check=_command_gone(SDK_CANCEL_MARKER),
        ),
    ]
