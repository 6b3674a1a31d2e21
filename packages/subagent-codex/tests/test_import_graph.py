"""subagent_codex's modules import one another without a cycle, and the fake app-server and its
scenario import nothing but the standard library and each other."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import subagent_codex
from subagent_core.testing import find_cycle, import_graph

_SOURCE = Path(subagent_codex.__file__).parent


def test_no_import_cycle() -> None:
    graph = import_graph(_SOURCE, "subagent_codex")
    assert "subagent_codex._thread" in graph["subagent_codex._run"]
    assert find_cycle(graph) is None


def test_the_fake_imports_only_the_standard_library() -> None:
    for name in ("_fake.py", "_script.py"):
        tree = ast.parse((_SOURCE / "testing" / name).read_text(encoding="utf-8"))
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                assert node.module == "_script", name  # only its sibling in `testing`
        assert imported <= sys.stdlib_module_names, (name, imported - sys.stdlib_module_names)
