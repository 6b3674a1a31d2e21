"""One flood in a fresh interpreter, reporting time and peak RSS as one JSON line.

`python bench/_flood_probe.py tool|cat BYTES`: `tool` runs `yes | head -c BYTES` through
`process_execute`; `cat` runs the same producer piped into `cat > /dev/null` with
`subprocess.run`. Both import `model_agent` first so the interpreters weigh the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from model_agent.tools import ProcessExecuteTool, RequestContext
from subagent_core import CancelSignal


def _producer(size: int) -> str:
    return f"yes | head -c {size}"


async def _tool(workspace: Path, size: int) -> float:
    stat = os.stat(workspace)
    context = RequestContext(
        runtime="model",
        mode="execute",
        space="local",
        depth=0,
        workspace=workspace,
        workspace_identity=(stat.st_dev, stat.st_ino),
        shell="/bin/bash",
        tool_names=("process_execute",),
        cancel=CancelSignal(),
    )
    tool = ProcessExecuteTool()
    started = time.perf_counter()
    outcome = await tool.call({"command": _producer(size), "timeout_ms": 600_000}, context)
    elapsed = time.perf_counter() - started
    result = json.loads(outcome.content)
    if result["status"] != "completed" or result["stdoutTotalBytes"] != size:
        raise SystemExit(f"flood through process_execute ended {result['status']}")
    return elapsed


def _cat(size: int) -> float:
    started = time.perf_counter()
    subprocess.run(["/bin/bash", "-c", f"{_producer(size)} | cat > /dev/null"], check=True)
    return time.perf_counter() - started


def _peak_rss_mb() -> float:
    """This interpreter's peak RSS (`VmHWM`, MiB).

    Not `ru_maxrss`: Linux carries that across exec, so a probe forked from the big bench
    process would report the parent's size.
    """
    for line in Path("/proc/self/status").read_text("utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    mode, size = sys.argv[1], int(sys.argv[2])
    workspace = Path.cwd().resolve()
    seconds = anyio.run(_tool, workspace, size, backend="asyncio") if mode == "tool" else _cat(size)
    print(json.dumps({"seconds": seconds, "rss_self_mb": _peak_rss_mb()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
