"""The scripted server speaks the real wire: the official `openai` client reads it as-is."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import openai
import pytest
from model_agent.testing import ScriptError, main, open_scripted_model_server, parse_script
from subagent_core.kit import open_managed_process

SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": "weather",
            "replies": [
                {
                    "text": "Sunny and warm.",
                    "chunks": 3,
                    "reasoning": "Look outside.",
                    "keepalives": 2,
                },
                {
                    "tool_calls": [
                        {"name": "read_file", "arguments": {"path": "a.txt"}, "id": "call_a"}
                    ]
                },
                {"status": 429, "times": 1},
            ],
        },
        {"match": "", "replies": [{"text": "default"}]},
    ]
}


async def test_the_openai_client_streams_text_reasoning_usage_and_tool_calls() -> None:
    with anyio.fail_after(30):
        async with open_scripted_model_server(SCRIPT) as server:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            async with client:
                stream = await client.chat.completions.create(
                    model="deepseek-chat",
                    messages=[{"role": "user", "content": "what is the weather"}],
                    stream=True,
                    stream_options={"include_usage": True},
                )
                text: list[str] = []
                reasoning: list[str] = []
                finish: list[str] = []
                usage = None
                async for chunk in stream:
                    assert chunk.object == "chat.completion.chunk"
                    assert chunk.model == "deepseek-chat"
                    if chunk.usage is not None:
                        usage = chunk.usage
                    for choice in chunk.choices:
                        if choice.delta.content:
                            text.append(choice.delta.content)
                        extra = (choice.delta.model_extra or {}).get("reasoning_content")
                        if extra:
                            reasoning.append(extra)
                        if choice.finish_reason:
                            finish.append(choice.finish_reason)
                assert text == ["Sunny", " and ", "warm."]
                assert "".join(reasoning) == "Look outside."
                assert finish == ["stop"]
                assert usage is not None
                assert usage.total_tokens == (usage.prompt_tokens + usage.completion_tokens)

                stream = await client.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": "what is the weather"}],
                    stream=True,
                )
                calls: dict[int, list[str]] = {}
                async for chunk in stream:
                    for choice in chunk.choices:
                        for call in choice.delta.tool_calls or []:
                            slot = calls.setdefault(call.index, ["", "", ""])
                            slot[0] += call.id or ""
                            slot[1] += (call.function and call.function.name) or ""
                            slot[2] += (call.function and call.function.arguments) or ""
                assert calls == {0: ["call_a", "read_file", '{"path": "a.txt"}']}

                with pytest.raises(openai.RateLimitError) as caught:
                    await client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "weather"}], stream=True
                    )
                assert caught.value.status_code == 429

                completion = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "anything"}], stream=True
                )
                assert [c.choices[0].delta.content async for c in completion if c.choices] == [
                    "",
                    "default",
                    None,
                ]
            assert server.request_count == 4
            assert server.count("weather") == 3
            assert server.count("") == 1
            assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_the_wire_bytes_are_sse_frames_ending_with_done() -> None:
    script = {"rules": [{"match": "", "replies": [{"text": "ab", "keepalives": 1}]}]}
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server, httpx.AsyncClient() as client:
            response = await client.post(
                server.base_url + "/chat/completions",
                json={
                    "model": "m",
                    "messages": [{"role": "user", "content": "x"}],
                    "stream": True,
                },
            )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    body = response.text
    assert body.startswith(": keep-alive\n\n")
    frames = [frame for frame in body.split("\n\n") if frame.startswith("data: ")]
    assert frames[-1] == "data: [DONE]"
    chunks = [json.loads(frame[len("data: ") :]) for frame in frames[:-1]]
    assert [c["choices"][0]["delta"] for c in chunks[:-1] if c["choices"]] == [
        {"role": "assistant", "content": ""},
        {"content": "ab"},
        {},
    ]
    assert chunks[-1]["choices"] == []
    assert set(chunks[-1]["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


async def test_conversations_get_their_own_script_and_concurrency_is_counted() -> None:
    script = {
        "rules": [
            {
                "match": "alpha",
                "replies": [{"text": "A1", "delay_ms": 50, "chunks": 2}, {"text": "A2"}],
            },
            {"match": "beta", "replies": [{"text": "B1", "delay_ms": 50, "chunks": 2}]},
        ]
    }
    results: dict[str, str] = {}
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as client:

                async def ask(key: str) -> None:
                    stream = await client.chat.completions.create(
                        model="m",
                        messages=[{"role": "user", "content": f"{key} please"}],
                        stream=True,
                    )
                    results[key] = "".join(
                        [c.choices[0].delta.content or "" async for c in stream if c.choices]
                    )

                async with anyio.create_task_group() as group:
                    group.start_soon(ask, "alpha")
                    group.start_soon(ask, "beta")
                await ask("alpha")
            assert server.max_in_flight == 2
            assert server.max_in_flight_for("alpha") == 1
            assert server.max_in_flight_for("please") == 2
            assert server.in_flight == 0
            assert server.in_flight_for("alpha") == 0
    assert results == {"alpha": "A2", "beta": "B1"}


def test_a_malformed_script_is_refused_with_the_place_named() -> None:
    with pytest.raises(ScriptError, match=r"rules\[0\]\.replies\[1\] has unknown field 'txt'"):
        parse_script({"rules": [{"match": "x", "replies": [{"text": "a"}, {"txt": "b"}]}]})
    with pytest.raises(ScriptError, match=r"rules\[0\]\.replies must be a non-empty list"):
        parse_script([{"match": "x", "replies": []}])


async def test_the_server_runs_as_a_process_and_prints_its_url_first(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"rules": [{"replies": [{"text": "from a process"}]}]}), "utf-8")
    argv = [sys.executable, "-m", "model_agent.testing", "--script", str(path)]
    with anyio.fail_after(30):
        async with open_managed_process(
            argv,
            stdin="devnull",
            stdout="pipe",
            eof_grace_seconds=0.5,
            term_grace_seconds=0.5,
            kill_grace_seconds=1.0,
        ) as process:
            assert process.stdout is not None
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
            base_url = line.decode().strip()
            assert base_url.startswith("http://127.0.0.1:")
            assert base_url.endswith("/v1")
            async with openai.AsyncOpenAI(base_url=base_url, api_key="k") as client:
                stream = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                )
                text = "".join(
                    [c.choices[0].delta.content or "" async for c in stream if c.choices]
                )
            assert text == "from a process"
            await process.terminate(0.5, 0.5, 1.0)


def test_the_command_line_refuses_a_bad_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"rules": [{"replies": [{"status": 99}]}]}', "utf-8")
    assert main(["--script", str(path)]) == 2
    assert (
        capsys.readouterr().err == "error: rules[0].replies[0].status must be an HTTP status code\n"
    )
