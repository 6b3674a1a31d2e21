"""Real ACP agents from npm, keyless: their failure reads as something a user can act on.

Each agent is installed once into a cache directory (`ACP_REAL_AGENTS_DIR`, default
`~/.cache/subagent-acp/real-agents`) at a pinned version. The tests skip themselves when npm is
missing, the registry cannot be reached, or `ACP_REAL_AGENTS=0`. Without a key an agent answers
with JSON-RPC error -32000 (`auth_required`) — which must read `category: authentication` — or
fails otherwise, which must read `transport`; either way no child text reaches the diagnostic.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest
from acp import RequestError
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest, SubagentStartError

AGENTS = {
    "claude-agent-acp": ("@zed-industries/claude-agent-acp@0.23.1", "claude-agent-acp", ()),
    "gemini": ("@google/gemini-cli@0.61.0", "gemini", ("--acp",)),
}
AUTH_STAGE = {"claude-agent-acp": "prompt", "gemini": "new-session"}

_INSTALL_SECONDS = 300


def _agents_dir() -> Path:
    configured = os.environ.get("ACP_REAL_AGENTS_DIR")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "subagent-acp" / "real-agents"


def _install(package: str, binary: str) -> Path:
    if os.environ.get("ACP_REAL_AGENTS") == "0":
        pytest.skip("ACP_REAL_AGENTS=0")
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    prefix = _agents_dir() / package.replace("/", "_")
    executable = prefix / "node_modules" / ".bin" / binary
    if not executable.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package],
                check=True,
                capture_output=True,
                timeout=_INSTALL_SECONDS,
            )
        except (subprocess.SubprocessError, OSError):
            pytest.skip(f"could not install {package} from npm")
    if not executable.exists():
        pytest.skip(f"{package} installed no {binary}")
    return executable


def _error_codes(records: list[logging.LogRecord]) -> set[int]:
    codes: set[int] = set()
    for record in records:
        if record.exc_info and isinstance(record.exc_info[1], RequestError):
            codes.add(record.exc_info[1].code)
    return codes


@pytest.mark.parametrize("agent", sorted(AGENTS))
async def test_a_keyless_real_agent_fails_with_an_actionable_safe_reason(
    agent: str, tmp_path: Path, caplog, in_grammar
) -> None:
    package, binary, args = AGENTS[agent]
    executable = _install(package, binary)
    home = tmp_path / "home"  # no credentials of this host's user reach the agent
    home.mkdir()
    config = ACPConfig(
        command=str(executable),
        args=args,
        cwd=tmp_path,
        # IS_SANDBOX (set on some CI machines) makes claude-agent-acp fail `session/new` with
        # an internal error before it can ask for authentication: a host setting, not the child's.
        env={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "IS_SANDBOX": None},
        dispose_eof_grace_seconds=1.0,
        dispose_grace_seconds=1.0,
        dispose_kill_grace_seconds=2.0,
    )
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with caplog.at_level(logging.INFO, logger="subagent_acp"), anyio.fail_after(180):
        try:
            run = await registry.start("acp", SubagentRequest(prompt="reply exactly PONG"))
        except SubagentStartError as error:
            diagnostic, text = error.diagnostic, str(error)
        else:
            async with run:
                result = await run.result()
                assert await run.dispose() is None
            assert result.stop_reason == "error"
            diagnostic = text = result.diagnostic
    assert diagnostic is not None
    assert text == diagnostic
    assert in_grammar(diagnostic), diagnostic
    # Both pinned versions answer keyless with auth_required (-32000), at the stage named here;
    # the diagnostic names it without copying any of the child's text.
    assert -32000 in _error_codes(caplog.records)
    assert diagnostic == (
        f"Subagent failure (provider: acp; stage: {AUTH_STAGE[agent]}; category: authentication)"
    )
