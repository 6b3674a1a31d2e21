"""`--verify`: the user's check in each child's worktree, protected files, ranking, bounds.

A real git repository holds a bug (`calc.add` subtracts) and its test (`test_calc.py`, a plain
script the verify command runs). Scripted fake ACP children each write files into their own
worktree: one fixes the bug, one breaks it another way, one rewrites the test so it passes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import psutil
import pytest
from harness.fanout import FanoutResult, run_fanout
from harness.fanout._isolation import Place
from harness.fanout._verify import DEFAULT_PROTECT, Verifier
from subagent_acp import ACPProvider
from subagent_core import CancelSignal, SubagentRegistry, SubagentRequest

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a * b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, 'add is wrong'\nprint('calc ok')\n"
CHEAT = "print('calc ok')\n"
SECRET = "verify-output-secret-4711"
VERIFY = f"echo {SECRET}; {sys.executable} test_calc.py"


Writer = Callable[..., ACPProvider]
Entries = Callable[[Path], list[Path]]

# Run folders (records, verify logs, patches) under the test's own state directory.
pytestmark = pytest.mark.usefixtures("state_dir")


@pytest.fixture
def repo(make_repo: Callable[[dict[str, str]], Path]) -> Path:
    return make_repo({"calc.py": BUGGY, "test_calc.py": TEST, "data/cases.csv": "2,3,5\n"})


def cells(outcomes: list[FanoutResult]) -> dict[str, tuple[str, int]]:
    return {o.agent: ("—" if o.verify is None else o.verify.cell, o.rank) for o in outcomes}


async def test_pass_fail_and_tampered_are_told_apart_and_ranked(
    repo: Path,
    temp_root: Path,
    state_dir: Path,
    writer: Writer,
    entries: Entries,
) -> None:
    registry = SubagentRegistry()
    # Registered (and asked) worst first: the ranking, not the order, puts them right.
    registry.register(writer("cheater", {"test_calc.py": CHEAT}))
    registry.register(writer("breaker", {"calc.py": WRONG}))
    registry.register(writer("fixer", {"calc.py": FIXED}))
    with anyio.fail_after(90):
        async with registry:
            outcomes = await run_fanout(
                registry,
                ["cheater", "breaker", "fixer"],
                SubagentRequest(prompt="fix add", cwd=repo),
                verify=VERIFY,
            )
    assert [o.agent for o in outcomes] == ["cheater", "breaker", "fixer"]  # the order asked
    assert cells(outcomes) == {
        "fixer": ("pass", 1),
        "breaker": ("fail (exit 1)", 2),
        "cheater": ("tampered", 3),
    }
    cheater = outcomes[0].verify
    assert cheater is not None
    assert (cheater.exit_code, cheater.tampered) == (0, ("test_calc.py",))  # it did pass
    for outcome in outcomes:
        verify = outcome.verify
        assert verify is not None
        assert verify.log is not None
        assert verify.log.parent == state_dir / "fanout" / outcome.run_id
        log = verify.log.read_text(encoding="utf-8")
        assert SECRET in log  # the user's own output, for a person
        assert SECRET not in repr(dataclass_facts(outcome))
    record = json.loads((state_dir / "fanout" / outcomes[0].run_id / "run.json").read_text("utf-8"))
    assert [(c["agent"], c["rank"], c["verify"]["status"]) for c in record["children"]] == [
        ("cheater", 3, "tampered"),
        ("breaker", 2, "fail"),
        ("fixer", 1, "pass"),
    ]
    assert (repo / "calc.py").read_text(encoding="utf-8") == BUGGY  # the user's tree untouched
    assert entries(temp_root) == []


def dataclass_facts(outcome: FanoutResult) -> object:
    """Everything of an outcome but the child's own answer text."""
    return (outcome.verify, outcome.rank, outcome.result.diagnostic, outcome.files)


async def test_a_verify_that_hangs_times_out_within_its_bound_and_leaves_no_process(
    repo: Path,
    temp_root: Path,
    tmp_path: Path,
    writer: Writer,
    entries: Entries,
) -> None:
    pids = tmp_path / "pids"
    command = f"echo $$ > {pids}; sleep 600 & echo $! >> {pids}; wait"
    registry = SubagentRegistry()
    registry.register(writer("fixer", {"calc.py": FIXED}))
    with anyio.fail_after(60):
        async with registry:
            [outcome] = await run_fanout(
                registry,
                ["fixer"],
                SubagentRequest(prompt="fix add", cwd=repo),
                verify=command,
                verify_timeout_seconds=1.0,
            )
    verify = outcome.verify
    assert verify is not None
    assert (verify.cell, verify.exit_code) == ("timeout", None)
    assert 1.0 <= verify.seconds < 1.0 + 2.0 + 2.0 + 2.0  # the bound, then TERM and KILL graces
    started = [int(line) for line in pids.read_text(encoding="utf-8").split()]
    assert len(started) == 2
    for pid in started:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert entries(temp_root) == []


async def test_a_protect_glob_catches_a_created_file_and_a_command_file(
    repo: Path, temp_root: Path, writer: Writer, entries: Entries
) -> None:
    """`--protect data/*.csv`: a new CSV is tampering; so is a change to a file CMD names."""
    (repo / "check.sh").write_text(f"{sys.executable} test_calc.py\n", encoding="utf-8")
    registry = SubagentRegistry()
    registry.register(writer("adder", {"calc.py": FIXED, "data/more.csv": "1,1,2\n"}))
    registry.register(writer("scripter", {"calc.py": FIXED, "check.sh": "true\n"}))
    registry.register(writer("fixer", {"calc.py": FIXED, "notes.md": "fixed\n"}))
    with anyio.fail_after(90):
        async with registry:
            outcomes = await run_fanout(
                registry,
                ["adder", "scripter", "fixer"],
                SubagentRequest(prompt="fix add", cwd=repo),
                verify="sh check.sh",
                protect=["data/*.csv"],
            )
    assert {agent: cell for agent, (cell, _) in cells(outcomes).items()} == {
        "fixer": "pass",
        "adder": "tampered",
        "scripter": "tampered",
    }
    assert cells(outcomes)["fixer"][1] == 1  # the two tampered ones rank by their wall time
    tampered = {o.agent: o.verify.tampered for o in outcomes if o.verify is not None}
    assert tampered == {"adder": ("data/more.csv",), "scripter": ("check.sh",), "fixer": ()}
    assert entries(temp_root) == []


async def test_a_deleted_protected_file_is_tampering(tmp_path: Path) -> None:
    """The check alone, on a place made by hand: a protected file removed after `before`."""
    root = tmp_path / "place"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "conftest.py").write_text("x = 1\n", encoding="utf-8")
    (root / "run.sh").write_text("exit 0\n", encoding="utf-8")
    (root / ".git").write_text("gitdir: /nowhere\n", encoding="utf-8")
    place = Place(cwd=root, root=root)
    verifier = Verifier("sh ./run.sh", log_dir=tmp_path / "logs")
    assert verifier.named_files(place) == ("run.sh",)
    before = await verifier.before(place)
    assert sorted(before) == ["run.sh", "sub/conftest.py"]
    (root / "sub" / "conftest.py").unlink()
    with anyio.fail_after(30):
        outcome = await verifier.check(place, before, "x.log", CancelSignal())
    assert (outcome.status, outcome.exit_code, outcome.tampered) == (
        "tampered",
        0,
        ("sub/conftest.py",),
    )
    assert outcome.protected == 2


async def test_a_cancelled_fan_out_does_not_verify(tmp_path: Path) -> None:
    root = tmp_path / "place"
    root.mkdir()
    place = Place(cwd=root, root=root)
    verifier = Verifier(f"touch {tmp_path / 'ran'}", log_dir=tmp_path / "logs")
    cancel = CancelSignal()
    cancel.cancel()
    outcome = await verifier.check(place, await verifier.before(place), "x.log", cancel)
    assert outcome.status == "cancelled"
    assert not (tmp_path / "ran").exists()


def test_the_defaults_protect_the_usual_test_configuration() -> None:
    for name in ("pytest.ini", "pyproject.toml", "conftest.py", "package.json", "jest.config.*"):
        assert name in DEFAULT_PROTECT


async def test_verify_with_isolation_none_is_refused(tmp_path: Path, writer: Writer) -> None:
    registry = SubagentRegistry()
    registry.register(writer("fixer", {"calc.py": FIXED}))
    with pytest.raises(ValueError, match="isolation none"):
        await run_fanout(
            registry,
            ["fixer"],
            SubagentRequest(prompt="x", cwd=tmp_path),
            isolation="none",
            verify="true",
        )
