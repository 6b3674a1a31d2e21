"""One ACP run in a fresh interpreter (the cold, one-shot cost a CLI user pays).

`python bench/_acp_oneshot.py provider|raw SCRIPT_FILE CWD`; exits non-zero unless the run
completed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio


async def _provider(script: str, cwd: str) -> bool:
    from subagent_acp import ACPConfig, ACPProvider
    from subagent_core import SubagentRequest

    provider = ACPProvider(
        ACPConfig(command=sys.executable, args=["-m", "subagent_acp.testing", "--script", script])
    )
    run = await provider.start(SubagentRequest(prompt="bench", cwd=Path(cwd)))
    async with run:
        result = await run.result()
    return result.stop_reason == "completed"


async def _raw(script: str, cwd: str) -> bool:
    from _acp_raw import raw_run

    argv = [sys.executable, "-m", "subagent_acp.testing", "--script", script]
    return (await raw_run(argv, cwd)).stop_reason == "end_turn"


def main() -> int:
    kind, script, cwd = sys.argv[1:4]
    body = _provider if kind == "provider" else _raw
    ok = anyio.run(body, script, cwd, backend="asyncio")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
