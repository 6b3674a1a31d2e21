"""The harness's own modules import each other without a cycle (imports inside functions too).

A lazy import inside a function hides a cycle from Python at import time but not from a reader:
the scenario catalogue once imported its bodies lazily while the bodies imported the catalogue.
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness

_SRC = Path(harness.__file__).parent


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module → the package's modules it imports anywhere in its body (functions included).

    `from pkg import name` counts as importing `pkg.name` when that is a module, else `pkg`.
    A package's `__init__` is not implied by importing a submodule: that edge would make every
    package that imports its own submodules look circular.
    """
    modules = {_module_name(path, root, package): path for path in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.module, node.level)
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    targets.append(candidate if candidate in modules else base)
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def _resolve(current: str, is_package: bool, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    parts = current.split(".")
    if not is_package:
        parts.pop()
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, module] if module else parts)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that starts and ends at the same module, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_harness_import_graph_has_no_cycle() -> None:
    graph = import_graph(_SRC, "harness")
    assert "harness._demo.catalogue" in graph
    assert find_cycle(graph) is None


def test_the_demo_catalogue_builds_on_the_runner_types_not_the_reverse() -> None:
    graph = import_graph(_SRC, "harness")
    assert "harness._demo.bodies" in graph["harness._demo.catalogue"]
    assert (
        graph["harness._demo.scenario"]
        & {name for name in graph if name.startswith("harness._demo.")}
        == set()
    )


def test_a_lazy_back_import_is_reported_as_a_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("from . import b\n", encoding="utf-8")
    (package / "b.py").write_text(
        "def later():\n    from .a import thing\n    return thing\n", encoding="utf-8"
    )
    graph = import_graph(package, "pkg")
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.a"]
