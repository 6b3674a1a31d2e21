"""subagent_sdk's modules import one another without a cycle, counting every import."""

from __future__ import annotations

from pathlib import Path

import subagent_sdk
from subagent_core.testing import find_cycle, import_graph


def test_subagent_sdk_has_no_import_cycle() -> None:
    graph = import_graph(Path(subagent_sdk.__file__).parent, "subagent_sdk")
    assert "subagent_sdk._run" in graph["subagent_sdk._provider"]
    assert find_cycle(graph) is None


def test_the_fake_runtime_is_built_on_the_public_wire_only() -> None:
    """The fake runtime speaks the wire through `subagent_sdk.wire`, as any runtime would;
    it never reaches into the client or the provider."""
    graph = import_graph(Path(subagent_sdk.__file__).parent, "subagent_sdk")
    for module in ("subagent_sdk.testing._fake", "subagent_sdk.testing._script"):
        assert graph[module] <= {"subagent_sdk.wire", "subagent_sdk.testing._script"}, module
