"""subagent_acp's modules import one another without a cycle, counting every import."""

from __future__ import annotations

from pathlib import Path

import subagent_acp
from subagent_core.testing import find_cycle, import_graph


def test_subagent_acp_has_no_import_cycle() -> None:
    graph = import_graph(Path(subagent_acp.__file__).parent, "subagent_acp")
    assert "subagent_acp._wire" in graph["subagent_acp._bridge"]
    assert find_cycle(graph) is None


def test_the_config_and_the_fake_child_do_not_import_acp() -> None:
    """`ACPConfig` is built on CLI paths and the fake child must start fast: neither pulls in
    the `acp` SDK (about a second of schema building)."""
    graph = import_graph(Path(subagent_acp.__file__).parent, "subagent_acp")
    for start in ("subagent_acp._config", "subagent_acp.testing"):
        seen: set[str] = set()
        todo = [start]
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
        assert not seen & {
            "subagent_acp._bridge",
            "subagent_acp._wire",
            "subagent_acp._client",
            "subagent_acp._run",
        }, start
