"""subagent_core's own modules import one another without a cycle, counting every import."""

from __future__ import annotations

from pathlib import Path

import subagent_core
from subagent_core.testing import find_cycle, import_graph


def test_subagent_core_has_no_import_cycle() -> None:
    graph = import_graph(Path(subagent_core.__file__).parent, "subagent_core")
    assert "subagent_core._events" in graph["subagent_core._run"]
    assert find_cycle(graph) is None


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from . import _a, _b\n", encoding="utf-8")
    (package / "_a.py").write_text("from ._b import thing\n", encoding="utf-8")
    (package / "_b.py").write_text(
        "def thing():\n    from ._a import other\n    return other\n", encoding="utf-8"
    )
    graph = import_graph(package, "pkg")
    assert graph["pkg"] == {"pkg._a", "pkg._b"}  # every name of one `from . import` counts
    assert find_cycle(graph) == ["pkg._a", "pkg._b", "pkg._a"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None
