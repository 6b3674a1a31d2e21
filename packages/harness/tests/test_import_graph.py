"""The harness's own modules import each other without a cycle (imports inside functions too).

A lazy import inside a function hides a cycle from Python at import time but not from a reader:
the scenario catalogue once imported its bodies lazily while the bodies imported the catalogue.
"""

from __future__ import annotations

from pathlib import Path

import harness
from subagent_core.testing import find_cycle, import_graph

_SRC = Path(harness.__file__).parent


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
