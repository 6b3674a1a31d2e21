"""subagent_claude imports no cycle, nothing but subagent-core and anyio at run time, and its
fake CLI only the standard library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import subagent_claude
from subagent_core.testing import find_cycle, import_graph


def test_no_import_cycle() -> None:
    graph = import_graph(Path(subagent_claude.__file__).parent, "subagent_claude")
    assert "subagent_claude._wire" in graph["subagent_claude._run"]
    assert find_cycle(graph) is None


def test_the_provider_never_imports_the_agent_sdk() -> None:
    code = (
        "import sys, subagent_claude._run, subagent_claude._provider;"
        "print(any(m.startswith('claude_agent_sdk') for m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", check=True
    )
    assert done.stdout.strip() == "False"


def test_the_fake_cli_imports_only_the_standard_library() -> None:
    code = (
        "import sys, subagent_claude.testing._fake;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('anyio', 'subagent_core', 'claude_agent_sdk')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", check=True
    )
    assert done.stdout.strip() == "[]"
