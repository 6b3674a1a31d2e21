"""Whatever a child writes, the diagnostic stays in the closed grammar and within 4096 bytes."""

from __future__ import annotations

import json

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from subagent_acp import ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest, SubagentStartError

MARK = "ZQXJ"  # every generated child text carries this, so a leak is detectable

child_text = st.text(min_size=0, max_size=300).map(lambda text: f"{MARK}{text}")
option_kinds = st.sampled_from(["allow_once", "allow_always", "reject_once", "reject_always"])
tool_kinds = st.sampled_from(
    [
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "think",
        "fetch",
        "switch_mode",
        "other",
    ]
)

behaviours = st.fixed_dictionaries(
    {
        "stop_reason": st.one_of(
            st.sampled_from(
                ["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
            ),
            child_text,
        ),
        "stderr": st.fixed_dictionaries({"text": child_text, "bytes": st.integers(0, 20_000)}),
        "text": child_text,
    },
    optional={
        "error": st.fixed_dictionaries(
            {
                "at": st.sampled_from(["initialize", "new_session", "prompt", "prompt_end"]),
                "code": st.integers(-33000, -32000),
                "message": child_text,
                "data": child_text,
            }
        ),
        "permission": st.fixed_dictionaries(
            {
                "tool_kind": tool_kinds,
                "title": child_text,
                "raw_input": st.dictionaries(child_text, child_text, max_size=2),
                "options": st.lists(
                    st.fixed_dictionaries(
                        {"optionId": child_text, "name": child_text, "kind": option_kinds}
                    ),
                    max_size=3,
                ),
            }
        ),
        "crash": st.fixed_dictionaries(
            {
                "at": st.sampled_from(
                    ["initialize", "new_session", "prompt", "after_prompt_output"]
                ),
                "exit_code": st.integers(0, 255),
            }
        ),
        "session_id": st.one_of(child_text, st.integers(), st.none()),
    },
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(behaviour=behaviours, policy=st.sampled_from(["allow", "reject"]))
async def test_diagnostic_is_always_in_the_grammar(
    make_config, in_grammar, behaviour, policy
) -> None:
    # JSON cannot carry lone surrogates; the child would reject such a script.
    behaviour = json.loads(json.dumps(behaviour))
    behaviour["echo_env"] = ["CHILD_SECRET_TOKEN"]  # a secret from its env, echoed as output
    env = {"CHILD_SECRET_TOKEN": f"{MARK}-env-secret"}
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(behaviour, permission=policy, env=env)))
    with anyio.fail_after(60):
        try:
            run = await registry.start("acp", SubagentRequest(prompt="go"))
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
