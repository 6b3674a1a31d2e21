"""The real `codex` binary (the `[cli]` extra) against the loopback Responses stub, keyless."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from subagent_core import (
    CancelSignal,
    PermissionEvent,
    SubagentRequest,
    SubagentStartError,
    Usage,
)

STUB_SECRET = "sk-stub-SECRET-7f3a9c"


async def test_text_completes_with_exact_usage(stub_factory, stub_config, run_once) -> None:
    stub = stub_factory([{"text": "PONG", "usage": {"input": 11, "cached": 3, "output": 7}}])
    result, disposed, events = await run_once(stub_config(stub))
    assert result.stop_reason == "completed"
    assert result.output == "PONG"
    assert result.diagnostic is None
    assert result.usage == Usage(input_tokens=11, output_tokens=7)
    assert disposed is None
    assert len(stub.requests) == 1
    assert stub.authorizations == [f"Bearer {STUB_SECRET}"]
