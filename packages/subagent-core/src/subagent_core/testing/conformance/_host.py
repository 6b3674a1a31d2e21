"""The host of the parent-SIGKILL checks: `python -m subagent_core.testing.conformance._host
FILE QUALNAME SCENARIO WORKSPACE MODE` rebuilds the target from its file, plays the scenario —
one run until it streams its text (`run`), or a session until its first turn completed
(`session`) — prints the spawned process groups (JSON), and waits to be killed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Final, cast

import anyio

from subagent_core import MessageChunk, SessionRequest, SubagentRegistry, SubagentRequest
from subagent_core.testing import track_spawns

from ._target import ConformanceTarget, HostMode, Scenario

SESSION_PROMPT: Final = "first turn"
"""The prompt of the session's one completed turn."""


def load_target(path: str, qualname: str) -> ConformanceTarget:
    """An instance of the target class `qualname` defined in the module file `path`.

    Raises:
        TypeError: the name is not a `ConformanceTarget` subclass.
    """
    spec = importlib.util.spec_from_file_location("conformance_target_module", path)
    if spec is None or spec.loader is None:
        raise TypeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    found: object = module
    for part in qualname.split("."):
        found = getattr(found, part)
    if not (isinstance(found, type) and issubclass(found, ConformanceTarget)):
        raise TypeError(f"{qualname} is not a ConformanceTarget")
    return found()


async def host(target: ConformanceTarget, scenario: Scenario, workspace: Path) -> None:
    """Starts the run, reports once its text streamed, then sleeps until killed."""
    with track_spawns() as spawned:
        async with target.open_provider(scenario, workspace) as provider:
            registry = SubagentRegistry()
            registry.register(provider)
            run = await registry.start(provider.name, SubagentRequest(prompt="go", cwd=workspace))
            async with anyio.create_task_group() as tg:
                tg.start_soon(run.result)  # a provider may drive its child from `result()`
                seen = ""
                async for event in run.events():
                    if isinstance(event, MessageChunk):
                        seen += event.text
                        if seen == scenario.text:
                            break
                print(json.dumps(spawned), flush=True)
                await anyio.sleep_forever()


async def host_session(target: ConformanceTarget, scenario: Scenario, workspace: Path) -> None:
    """Opens a session, completes its first turn, reports, then sleeps until killed.

    Raises:
        RuntimeError: the turn did not complete (the check then sees the host end early).
    """
    with track_spawns() as spawned:
        async with target.open_provider(scenario, workspace) as provider:
            registry = SubagentRegistry()
            registry.register(provider)
            session = await registry.open_session(provider.name, SessionRequest(cwd=workspace))
            result = await (await session.run(SESSION_PROMPT)).result()
            if result.stop_reason != "completed":
                raise RuntimeError(f"the session's first turn ended {result.stop_reason}")
            print(json.dumps(spawned), flush=True)
            await anyio.sleep_forever()


def main(argv: list[str]) -> None:
    """Entry point: FILE QUALNAME SCENARIO WORKSPACE MODE."""
    path, qualname, payload, workspace, mode = argv
    target = load_target(path, qualname)
    scenario = Scenario(**json.loads(payload))
    play = host_session if cast(HostMode, mode) == "session" else host
    anyio.run(play, target, scenario, Path(workspace))


if __name__ == "__main__":
    main(sys.argv[1:])
