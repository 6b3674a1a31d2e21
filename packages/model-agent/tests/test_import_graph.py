"""model_agent's own modules import one another without a cycle, counting every import.

The graph is read from the source with `ast`, so imports inside functions and under
`TYPE_CHECKING` count too: a lazy import hides a cycle from the interpreter, not from a reader.
An implicit import of a parent package (`a.b` loads `a` first) is not an edge. The helper
below takes only a source directory and a package name, so any package can copy it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import model_agent

SOURCE = Path(model_agent.__file__).parent


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under `root`, by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join([package, *parts])] = path
    return modules


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Edges from each module to the package's modules it imports, wherever the import is."""
    modules = module_names(root, package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base]) if base else ".".join(anchor)
                # `from pkg import sub` may name a submodule; otherwise it names `pkg` itself.
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
                    break
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it starts, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for successor in sorted(graph[node]):
            if state.get(successor) == 1:
                return [*stack[stack.index(successor) :], successor]
            if successor not in state:
                cycle = visit(successor)
                if cycle is not None:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle is not None:
                return cycle
    return None


def test_model_agent_has_no_import_cycle() -> None:
    graph = import_graph(SOURCE, "model_agent")
    # Imports made by the package `__init__` re-export the API; a module never imports it back.
    for name, targets in graph.items():
        assert "model_agent" not in targets, f"{name} imports the package root"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "_a.py").write_text("from ._b import B\n", encoding="utf-8")
    (package / "_b.py").write_text(
        "def make():\n    from . import _a\n    return _a\nB = 1\n", encoding="utf-8"
    )
    graph = import_graph(package, "pkg")
    assert graph == {"pkg": set(), "pkg._a": {"pkg._b"}, "pkg._b": {"pkg._a"}}
    assert find_cycle(graph) == ["pkg._a", "pkg._b", "pkg._a"]
