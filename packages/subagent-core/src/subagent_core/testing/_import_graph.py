"""A package's own import graph read from its source, for tests that forbid import cycles.

Read with `ast`, so imports inside functions and under `TYPE_CHECKING` count too: a lazy import
hides a cycle from the interpreter, not from a reader. The implicit import of a parent package
(`a.b` loads `a` first) is not an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path


def _module_names(root: Path, package: str) -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join([package, *parts])] = path
    return modules


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Edges from each module of `package` (source under `root`) to the package modules it imports.

    Every name of a `from x import a, b` counts: a name that is a submodule is an edge to it,
    any other name is an edge to `x` itself.
    """
    modules = _module_names(root, package)

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
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
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                resolved = resolve(target)
                if resolved is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path that ends where it starts, or `None` when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for successor in sorted(graph.get(node, ())):
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
