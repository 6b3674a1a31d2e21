"""Whatever the child writes, the diagnostic stays in the closed grammar and within 4096 bytes,
and none of the child's text reaches it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_core import SubagentRegistry, SubagentRequest, SubagentStartError

MARK = "ZQXJ"  # every generated child text carries this, so a leak is detectable

child_text = st.text(min_size=0, max_size=200).map(lambda text: f"{MARK}{text}")
closed_or_child = st.one_of(
    st.sampled_from(
        [
            "success",
            "error_max_turns",
            "error_max_budget_usd",
            "error_during_execution",
            "error_max_structured_output_retries",
            "end_turn",
            "refusal",
            "max_tokens",
            "aborted_streaming",
            "api_error",
            "authentication_failed",
            "rate_limit",
            "server_error",
        ]
    ),
    child_text,
    st.integers(),
    st.none(),
)

behaviours = st.fixed_dictionaries(
    {"text": child_text},
    optional={
        "result": st.fixed_dictionaries(
            {
                "subtype": closed_or_child,
                "stop_reason": closed_or_child,
                "terminal_reason": closed_or_child,
                "is_error": st.one_of(st.booleans(), child_text),
                "api_error_status": st.one_of(st.integers(0, 999), child_text, st.none()),
                "result": child_text,
                "errors": st.lists(child_text, max_size=2),
                "total_cost_usd": st.one_of(st.floats(allow_nan=True), child_text),
            }
        ),
        "assistant_error": closed_or_child,
        "api_retry_status": st.sampled_from([401, 403, 429, 500, 529]),
        "tool": st.fixed_dictionaries(
            {
                "name": st.one_of(st.sampled_from(["Bash", "Write", "Read"]), child_text),
                "input": st.dictionaries(child_text, child_text, max_size=2),
            }
        ),
        "die_mid_frame": st.integers(0, 255),
        "garbage": st.booleans(),
    },
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(behaviour=behaviours, policy=st.sampled_from(["allow", "reject"]))
async def test_diagnostic_is_always_in_the_grammar(
    fake_config: Callable[..., ClaudeConfig],
    in_grammar: Callable[[str | None], bool],
    behaviour: dict[str, Any],
    policy: str,
) -> None:
    # JSON cannot carry lone surrogates; the child would reject such a script.
    behaviour = json.loads(json.dumps(behaviour))
    if "tool" in behaviour:
        behaviour["tool"]["input"]["file_path"] = "/nonexistent/dir/f"
    env = {"CHILD_SECRET_TOKEN": f"{MARK}-env-secret"}
    registry = SubagentRegistry()
    # A retried 429/5xx makes the fake wait like the CLI does: the idle deadline ends it.
    config = fake_config(behaviour, permission=policy, env=env, idle_timeout_seconds=2)
    registry.register(ClaudeProvider(config))
    with anyio.fail_after(60):
        try:
            run = await registry.start("claude", SubagentRequest(prompt="go"))
        except SubagentStartError as error:
            texts = [str(error), error.diagnostic]
        else:
            async with run:
                result = await run.result()
                disposed = await run.dispose()
            texts = [result.diagnostic, disposed]
            assert result.stop_reason in ("completed", "max-tokens", "refusal", "aborted", "error")
    for text in texts:
        assert in_grammar(text), text
        assert MARK not in (text or "")
