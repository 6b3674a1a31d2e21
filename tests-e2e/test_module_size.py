"""Every source module stays at most 600 lines, so each one can be read whole.

`subagent_core/guard.py` is exempt: it travels inline to remote hosts as one standard-library
file, so splitting it would mean shipping several. The check reads the files, starts nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LIMIT = 600
ROOT = Path(__file__).resolve().parents[1]
EXEMPT = frozenset({Path("packages/subagent-core/src/subagent_core/guard.py")})


def _line_count(path: Path) -> int:
    with path.open(encoding="utf-8") as stream:
        return sum(1 for _ in stream)


@pytest.mark.timeout(60)
def test_every_source_module_is_at_most_600_lines() -> None:
    modules = sorted(ROOT.glob("packages/*/src/**/*.py"))
    assert modules, "no source modules found"
    offenders = [
        f"{path.relative_to(ROOT)}: {count} lines"
        for path in modules
        if path.relative_to(ROOT) not in EXEMPT and (count := _line_count(path)) > LIMIT
    ]
    assert not offenders, f"modules over {LIMIT} lines:\n" + "\n".join(offenders)
