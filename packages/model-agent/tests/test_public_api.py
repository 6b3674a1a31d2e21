"""The public surface is exactly what `__all__` lists, sorted."""

from __future__ import annotations

import subprocess
import sys

import model_agent
import model_agent.testing


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return 0, name
    return (1 if name[0].isupper() else 2), name


def test_all_is_sorted_and_complete() -> None:
    for module in (model_agent, model_agent.testing):
        public = {name for name in vars(module) if not name.startswith("_")}
        exported = set(module.__all__)
        assert list(module.__all__) == sorted(module.__all__, key=_isort_key)
        assert exported <= public
        imported_modules = {"annotations", "argparse", "sys", "anyio", "Sequence", "testing"}
        assert public - exported - imported_modules == set()


def test_importing_the_package_does_not_import_httpx() -> None:
    code = "import sys, model_agent, model_agent.testing; print('httpx' in sys.modules)"
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, encoding="utf-8", check=True
    )
    assert output.stdout.strip() == "False"
