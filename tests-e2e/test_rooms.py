"""Every provider over a child process keeps the same rooms, so a reader who knows one knows all.

The room list is written once, in subagent-core's AGENTS.md ("Writing a provider"); this test
holds the four child-process providers to it, and holds each `_run.py` to the protocol alone
(at most 350 lines: the lifecycle itself lives in the kit). The check reads file names and
counts lines; it starts nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = (
    "_provider.py",
    "_config.py",
    "_run.py",
    "_transcript.py",
    "_permission.py",
    "_facts.py",
    "_wire.py",
    "testing/_fake.py",
    "testing/_script.py",
)
PROVIDERS = {
    "subagent-acp": "subagent_acp",
    "subagent-claude": "subagent_claude",
    "subagent-codex": "subagent_codex",
    "subagent-sdk": "subagent_sdk",
}
TEST_ROOMS = (
    "test_conformance.py",
    "test_lifecycle.py",
    "test_facts.py",
    "test_hostile.py",
    "test_real.py",
)
NOT_APPLICABLE = {("subagent-sdk", "_permission.py"), ("subagent-sdk", "test_real.py")}
"""The SDK wire carries no permission requests, and no SDK runtime runs keyless against a
loopback stub (its one real runtime test needs a key: `test_keyed.py`); its AGENTS.md says so."""
RUN_LIMIT = 350


def _line_count(path: Path) -> int:
    with path.open(encoding="utf-8") as stream:
        return sum(1 for _ in stream)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("package", sorted(PROVIDERS))
def test_every_provider_package_has_the_shared_rooms(package: str) -> None:
    source = ROOT / "packages" / package / "src" / PROVIDERS[package]
    missing = [
        room
        for room in ROOMS
        if (package, room) not in NOT_APPLICABLE and not (source / room).is_file()
    ]
    assert not missing, f"{package} lacks the rooms {missing}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("package", sorted(PROVIDERS))
def test_every_provider_run_module_is_only_its_protocol(package: str) -> None:
    run = ROOT / "packages" / package / "src" / PROVIDERS[package] / "_run.py"
    assert _line_count(run) <= RUN_LIMIT


@pytest.mark.timeout(60)
@pytest.mark.parametrize("package", sorted(PROVIDERS))
def test_every_provider_names_its_tests_alike(package: str) -> None:
    tests = ROOT / "packages" / package / "tests"
    missing = [
        name
        for name in TEST_ROOMS
        if (package, name) not in NOT_APPLICABLE and not (tests / name).is_file()
    ]
    assert not missing, f"{package} lacks the test files {missing}"
