"""A child's stderr never reaches the harness's own streams: every command that starts a child,
run as a user runs it (the installed console script in a subprocess, both pipes read).

Each configured child writes a secret to its stderr and exits 3. An agent that runs `harness`
through its shell tool reads stdout and stderr alike, so the secret must be in neither; it is
in the bounded log under the state directory instead, and on stderr only with
`--child-stderr`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import anyio
import pytest
from harness._demo.bodies import SECRET as DEMO_SECRET
from model_agent.testing import open_scripted_model_server
from subagent_acp.testing import script_env

SCRIPT = Path(sys.executable).with_name("harness")
SECRET = "sk-child-stderr-7f3a9e"
CRASH = 'echo "fatal: token=$CRASH_NOTE" >&2; exit 3'
"""The secret comes from the environment: the harness shows a provider's command line."""
GRACES = (
    "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
    "dispose_kill_grace_seconds = 1.0\n"
)
LOGGED = ("crasher", "claude-crasher", "codex-crasher")
"""The providers whose children's stderr is logged (the SDK client keeps its own tail)."""
ALL = (*LOGGED, "sdk-crasher")

Output = tuple[int, str, str]
ConsoleScript = Callable[[list[str], Mapping[str, str]], Awaitable[Output]]


def _table(name: str, kind: str, command: str, args: list[str], env: Mapping[str, str]) -> str:
    env_toml = ", ".join(f"{key} = {json.dumps(value)}" for key, value in env.items())
    return (
        f'[providers.{name}]\nkind = "{kind}"\ncommand = {json.dumps(command)}\n'
        f"args = {json.dumps(args)}\nenv = {{ {env_toml} }}\n{GRACES}"
    )


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    """A workspace whose harness.toml has a crashing child of every kind, and a state dir."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    acp_script = {
        "text": "Working",
        "stderr": {"text": f"fatal: token={SECRET}\n"},
        "crash": {"at": "prompt", "exit_code": 3},
    }
    tables = [
        _table(
            "crasher",
            "acp",
            sys.executable,
            ["-m", "harness", "fake-acp-child"],
            script_env(acp_script),
        ),
        *(
            _table(f"{kind}-crasher", kind, "/bin/sh", ["-c", CRASH], {})
            for kind in ("claude", "codex", "sdk")
        ),
    ]
    (workspace / "harness.toml").write_text("\n".join(tables), encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    return {"workspace": workspace, "state": tmp_path / "state", "home": home}


def _env(place: Mapping[str, Path]) -> dict[str, str]:
    """Exactly this environment: no key, no user config, a state dir of the test's own."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(place["home"]),
        "XDG_CONFIG_HOME": str(place["home"] / ".config"),
        "HARNESS_STATE_DIR": str(place["state"]),
        "PYTHONWARNDEFAULTENCODING": "1",
        "CRASH_NOTE": SECRET,
    }


@pytest.fixture
def console_script(run_harness: Callable[..., Awaitable[Output]]) -> ConsoleScript:
    """The console script with exactly `env`; both pipes read to their end, its tree reaped."""

    async def run(args: list[str], env: Mapping[str, str]) -> Output:
        assert SCRIPT.is_file(), "the harness console script is installed beside the interpreter"
        with anyio.fail_after(120):
            return await run_harness(args, env=env, command=[str(SCRIPT)])

    return run


def _logged(state: Path, provider: str) -> str:
    logs = sorted(state.glob(f"child-stderr/*/{provider}/*.log"))
    return "".join(log.read_text("utf-8") for log in logs)


def _for(workspace: Path, *args: str) -> list[str]:
    return [*args, "-w", str(workspace)]


FANOUT = ["fanout", *(arg for name in ALL for arg in ("-a", name)), "--isolation", "none", "-y"]
COMMANDS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "delegate-acp": (["delegate", "-p", "crasher", "go"], ("crasher",)),
    "delegate-acp-json": (["delegate", "-p", "crasher", "--json", "go"], ("crasher",)),
    "delegate-claude": (["delegate", "-p", "claude-crasher", "go"], ("claude-crasher",)),
    "delegate-codex": (["delegate", "-p", "codex-crasher", "go"], ("codex-crasher",)),
    "delegate-sdk": (["delegate", "-p", "sdk-crasher", "go"], ()),
    "fanout": (FANOUT, LOGGED),
    "fanout-json": ([*FANOUT, "--json"], LOGGED),
    "providers": (["providers"], ()),
    "providers-json": (["providers", "--json"], ()),
    "agents-check": (["agents", "--check"], ()),
}


@pytest.mark.parametrize("case", list(COMMANDS))
async def test_no_command_passes_a_childs_stderr_through(
    case: str, place: dict[str, Path], console_script: ConsoleScript
) -> None:
    args, logged = COMMANDS[case]
    if args[0] == "fanout":
        args = [*args, "go"]
    code, out, err = await console_script(_for(place["workspace"], *args), _env(place))
    assert code == 1, err
    assert "exit code: 3" in out + err  # the children ran, wrote their secret and crashed
    assert SECRET not in out
    assert SECRET not in err
    for provider in logged:
        assert _logged(place["state"], provider) == f"fatal: token={SECRET}\n"


@pytest.mark.parametrize("command", ["demo", "e2e"])
async def test_the_demo_tables_pass_no_childs_stderr_through(
    command: str, place: dict[str, Path], console_script: ConsoleScript
) -> None:
    code, out, err = await console_script([command], _env(place))
    assert code == 0, err
    assert DEMO_SECRET not in out
    assert DEMO_SECRET not in err


async def test_run_passes_no_mcp_servers_stderr_through(
    place: dict[str, Path], console_script: ConsoleScript
) -> None:
    rules = {"rules": [{"match": "go", "replies": [{"text": "answered"}]}]}
    async with open_scripted_model_server(rules) as server:
        args = ["run", "--base-url", server.base_url, "--mcp", f"crash=/bin/sh -c '{CRASH}'"]
        code, out, err = await console_script(_for(place["workspace"], *args, "go"), _env(place))
    assert code in (0, 1), err
    assert SECRET not in out
    assert SECRET not in err


@pytest.mark.parametrize("command", ["delegate", "fanout"])
async def test_child_stderr_shows_it_live_and_names_the_log(
    command: str, place: dict[str, Path], console_script: ConsoleScript
) -> None:
    args = ["delegate", "-p", "crasher"] if command == "delegate" else ["fanout", "-a", "crasher"]
    if command == "fanout":
        args += ["--isolation", "none", "-y"]
    args = _for(place["workspace"], *args, "--child-stderr", "go")
    code, out, err = await console_script(args, _env(place))
    assert code == 1, err
    assert SECRET not in out
    assert f"fatal: token={SECRET}\n" in err
    [directory] = (place["state"] / "child-stderr").iterdir()
    assert err.splitlines()[-1] == f"harness: child stderr logged under {directory}"
    assert _logged(place["state"], "crasher") == f"fatal: token={SECRET}\n"


async def test_without_child_stderr_the_log_is_not_named(
    place: dict[str, Path], console_script: ConsoleScript
) -> None:
    args = _for(place["workspace"], "delegate", "-p", "crasher", "go")
    _, _, err = await console_script(args, _env(place))
    assert "child-stderr" not in err
    assert _logged(place["state"], "crasher") == f"fatal: token={SECRET}\n"
