"""Checks that the built docs site has an anchor for every public name of every package's face.

Usage: `python .ci/docs_check.py SITE_DIR` (the `docs` nox session runs it after
`mkdocs build --strict`). A face is every public module of every package (no path part starting
with `_`); its public names are its `__all__`, or, for a module without one, what a type checker
counts as public in a `py.typed` package: the names it defines without a leading `_` and the
ones it re-exports as `import x as x`. The API pages are written with mkdocstrings, whose anchor
for a name is its dotted path (`subagent_core.SubagentRegistry`), so each name must appear as
an HTML `id` somewhere in the site. A new face, or a new name in one, fails this check until a
page documents it.

The faces are read from source, as mkdocstrings reads them, not imported: some import pytest
(the conformance suite) or need Ray at run time, and the docs venv has neither.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "subagent_core": "packages/subagent-core/src",
    "subagent_acp": "packages/subagent-acp/src",
    "subagent_sdk": "packages/subagent-sdk/src",
    "subagent_claude": "packages/subagent-claude/src",
    "subagent_codex": "packages/subagent-codex/src",
    "subagent_ray": "packages/subagent-ray/src",
    "model_agent": "packages/model-agent/src",
    "harness": "packages/harness/src",
}
"""Import name → the folder that holds it."""
NOT_FACES = {
    "harness.cli": "the command line: its page is generated from the typer app itself",
    "subagent_core.guard": "the containment guard's own program (`python -m`), not an API",
}
"""Public modules that are not an importable face, and why."""
_ID = re.compile(r"""\bid=["']([^"']+)["']""")


def faces() -> Iterator[tuple[str, Path]]:
    """Every public module of every package: (dotted name, source file)."""
    for package, src in PACKAGES.items():
        top = ROOT / src / package
        for path in sorted(top.rglob("*.py")):
            parts = path.relative_to(top.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(part.startswith("_") for part in parts):
                continue
            name = ".".join(parts)
            if name not in NOT_FACES:
                yield name, path


def public_names(path: Path) -> list[str]:
    """The module's `__all__`, or the names a type checker counts as public without one.

    Raises:
        SystemExit: `__all__` is not a literal list or tuple of strings.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets):
            value = ast.literal_eval(node.value)
            if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
                raise SystemExit(f"{path}: __all__ must be a literal list of strings")
            return list(value)
    return [name for name in _defined_names(tree) if not name.startswith("_")]


def _defined_names(tree: ast.Module) -> Iterator[str]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id
        elif isinstance(node, ast.ImportFrom | ast.Import):
            # `from ._x import name as name` is a re-export; a plain import is not.
            yield from (a.asname for a in node.names if a.asname and a.asname == a.name)


def site_ids(site: Path) -> set[str]:
    """Every HTML `id` in the built site."""
    ids: set[str] = set()
    for page in site.rglob("*.html"):
        ids.update(_ID.findall(page.read_text(encoding="utf-8")))
    return ids


def main(argv: list[str]) -> int:
    """Prints each face's missing names; 0 when none is missing."""
    if len(argv) != 1:
        print("usage: docs_check.py SITE_DIR", file=sys.stderr)
        return 2
    ids = site_ids(Path(argv[0]))
    checked = 0
    missing: list[str] = []
    for face, path in faces():
        wanted = [face, *(f"{face}.{name}" for name in public_names(path))]
        checked += len(wanted) - 1
        missing.extend(anchor for anchor in wanted if anchor not in ids)
    if missing:
        print(f"docs: {len(missing)} public names have no anchor in the site:", file=sys.stderr)
        for anchor in missing:
            print(f"  {anchor}", file=sys.stderr)
        print("document them with `::: module` under docs/reference/api/", file=sys.stderr)
        return 1
    count = sum(1 for _ in faces())
    print(f"docs: every public name has its anchor ({checked} names in {count} faces)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
