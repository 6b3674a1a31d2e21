"""model_agent's own modules import one another without a cycle, counting every import.

The graph comes from subagent-core's test helper, which reads the source with `ast`: imports
inside functions and under `TYPE_CHECKING` count too (a lazy import hides a cycle from the
interpreter, not from a reader).
"""

from __future__ import annotations

from pathlib import Path

import model_agent
from subagent_core.testing import find_cycle, import_graph


def test_model_agent_has_no_import_cycle() -> None:
    graph = import_graph(Path(model_agent.__file__).parent, "model_agent")
    # The loop reaches the provider machinery, never the other way round (the factory is
    # injected), and no module imports the package root back.
    assert "model_agent._model_run" in graph["model_agent._delegate_tool"]
    assert "model_agent._agent" not in graph["model_agent._model_run"]
    for name, targets in graph.items():
        assert "model_agent" not in targets, f"{name} imports the package root"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])
