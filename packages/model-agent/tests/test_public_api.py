"""Each face's `__all__` is exactly its public names (httpx's `test_exported_members` way).

Every name in `__all__` is an attribute, and every attribute without a leading `_` that is not
a submodule (nor `annotations` from `from __future__`) is in `__all__`: a name added to a face
without being exported, or exported without existing, fails here rather than in a user's
import.
"""

from __future__ import annotations

import subprocess
import sys
import types

import model_agent
import model_agent.testing
import model_agent.tools
import pytest

FACES = (model_agent, model_agent.tools, model_agent.testing)


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return 0, name
    return (1 if name[0].isupper() else 2), name


@pytest.mark.parametrize("module", FACES, ids=lambda module: module.__name__)
def test_all_is_exactly_the_public_names(module: types.ModuleType) -> None:
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key)
    for name in exported:
        assert hasattr(module, name), name
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    assert public == set(exported)


def test_the_agent_face_holds_no_tool_names() -> None:
    assert not set(model_agent.__all__) & set(model_agent.tools.__all__)


def test_importing_the_package_does_not_import_httpx() -> None:
    code = (
        "import sys, model_agent, model_agent.tools, model_agent.testing;"
        " print('httpx' in sys.modules)"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", check=True
    )
    assert output.stdout.strip() == "False"
