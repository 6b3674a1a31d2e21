"""The harness's import graph: no cycle, and its folders layered so imports point one way.

A lazy import inside a function hides a cycle from Python at import time but not from a reader:
the scenario catalogue once imported its bodies lazily while the bodies imported the catalogue.
The layers are the package's components, highest first (an import-linter "layers" contract, on
the graph `subagent_core.testing.import_graph` reads from the source, lazy imports included).
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness
from subagent_core.testing import find_cycle, import_graph

_SRC = Path(harness.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("harness", "harness.__main__"),
    ("harness.cli",),
    ("harness._commands",),
    # The servers are faces of the harness for other hosts: `harness mcp` runs delegations
    # and fan-outs, so they sit above the components that run them.
    ("harness._agent_servers",),
    ("harness._live", "harness.fanout", "harness._demo"),
    ("harness._registry",),
    ("harness._config",),
    ("harness._console",),
    ("harness._version",),
)
"""Highest first. A module may import its own folder and any lower layer; the folders of one
layer are independent of each other."""

TOP_LEVEL_MODULES = {"__init__", "__main__", "cli", "_version"}
"""Everything else lives in a component's folder."""

PROVIDER_PACKAGES = ("subagent_acp", "subagent_sdk", "subagent_claude", "subagent_codex")
"""Imported (their provider faces) only by `_registry`, and their configs by `_config`; their
`testing` fakes and the SDK's `wire` protocol are not the providers."""


def _layer(module: str) -> tuple[int, str] | None:
    """The layer index and folder of `module`, or None when it is in none."""
    for index, folders in enumerate(LAYERS):
        for folder in folders:
            inside = folder != "harness" and module.startswith(folder + ".")
            if module == folder or inside:
                return index, folder
    return None


def layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every edge that imports upward, or across to another folder of the same layer."""
    violations: list[tuple[str, str]] = []
    for importer, targets in graph.items():
        source = _layer(importer)
        for target in targets:
            destination = _layer(target)
            if source is None or destination is None or source[1] == destination[1]:
                continue
            if destination[0] <= source[0]:
                violations.append((importer, target))
    return sorted(violations)


def test_the_harness_import_graph_has_no_cycle() -> None:
    graph = import_graph(_SRC, "harness")
    assert "harness._demo.catalogue" in graph
    assert find_cycle(graph) is None


def test_every_module_sits_in_a_layer_and_only_four_at_the_top() -> None:
    graph = import_graph(_SRC, "harness")
    assert [module for module in graph if _layer(module) is None] == []
    top = {path.stem for path in _SRC.glob("*.py")}
    assert top == TOP_LEVEL_MODULES


def test_imports_point_down_the_layers() -> None:
    assert layer_violations(import_graph(_SRC, "harness")) == []


def test_a_lower_folder_importing_a_higher_one_breaks_the_contract() -> None:
    """The check itself, shown failing: the real graph with one deliberate bad import added."""
    graph = import_graph(_SRC, "harness")
    graph["harness._console.exit_codes"].add("harness._live.delegation")  # down → up
    graph["harness._live.delegation"].add("harness.fanout._run")  # across one layer
    assert layer_violations(graph) == [
        ("harness._console.exit_codes", "harness._live.delegation"),
        ("harness._live.delegation", "harness.fanout._run"),
    ]


def test_only_the_registry_and_the_config_import_the_provider_packages() -> None:
    importers: set[str] = set()
    for path in _SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                package, _, rest = name.partition(".")
                if package in PROVIDER_PACKAGES and rest.split(".")[0] not in ("testing", "wire"):
                    importers.add(path.relative_to(_SRC).parts[0])
    assert importers == {"_config", "_registry"}


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
