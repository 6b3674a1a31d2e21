"""Checks every package as a user installs it: from its wheel alone, outside the workspace.

For each member of `packages/`: build its sdist and wheel (`uv build`, the wheel from the
sdist, so a file missing from the sdist fails here), check both ship the licence and the sdist
holds no working notes, install the wheel into a clean venv (sibling packages come from the
wheels just built, never from the workspace), import it in an empty directory, and run its
README example: the ```python block after a `<!-- package-check -->` line, else the first one.

Run by `uvx nox -s packages`; needs only `uv` and Python >= 3.11.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_TIMEOUT_SECONDS = 180
SDIST_TOP_LEVEL = {
    "src",
    "tests",
    "README.md",
    "LICENSE",
    "pyproject.toml",
    "PKG-INFO",
    ".gitignore",
}
"""Everything an sdist may hold at its top level; anything else (notes, caches) fails."""
METADATA_FIELDS = ("License-Expression:", "Author:", "Keywords:", "Classifier:")
_MARKER = "<!-- package-check -->"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def main() -> int:
    packages = [_describe(folder) for folder in sorted((ROOT / "packages").iterdir())]
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="package-check-") as tmp_text:
        tmp = Path(tmp_text)
        dist = tmp / "dist"
        try:
            _run(["uv", "build", "--all-packages", "--out-dir", str(dist)], cwd=ROOT)
        except CheckFailed as failure:
            print(f"FAILED build: {failure}", flush=True)
            return 1
        exclude_newer = _exclude_newer()
        for package in packages:
            print(f"== {package['dist']}", flush=True)
            try:
                _check_artifacts(package, dist)
                _check_install(package, dist, tmp, exclude_newer)
            except CheckFailed as failure:
                print(f"FAILED {package['dist']}: {failure}", flush=True)
                failures.append(package["dist"])
            else:
                print(f"ok {package['dist']}", flush=True)
    total = len(packages)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


class CheckFailed(Exception):
    """One package failed a check; the message says which."""


def _describe(folder: Path) -> dict[str, str]:
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (import_dir,) = [path for path in (folder / "src").iterdir() if path.is_dir()]
    return {
        "dist": project["name"],
        "version": project["version"],
        "import": import_dir.name,
        "folder": str(folder),
    }


def _exclude_newer() -> str:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return root["tool"]["uv"]["exclude-newer"]


def _check_artifacts(package: dict[str, str], dist: Path) -> None:
    licence = (ROOT / "LICENSE").read_bytes()
    if (Path(package["folder"]) / "LICENSE").read_bytes() != licence:
        raise CheckFailed("the package's LICENSE differs from the repository's")
    stem = f"{package['dist'].replace('-', '_')}-{package['version']}"
    wheel = dist / f"{stem}-py3-none-any.whl"
    sdist = dist / f"{stem}.tar.gz"
    if not wheel.is_file() or not sdist.is_file():
        raise CheckFailed(f"missing {wheel.name} or {sdist.name}")
    with zipfile.ZipFile(wheel) as archive:
        shipped = f"{stem}.dist-info/licenses/LICENSE"
        if shipped not in archive.namelist() or archive.read(shipped) != licence:
            raise CheckFailed("the wheel's LICENSE is not the repository's")
        metadata = archive.read(f"{stem}.dist-info/METADATA").decode("utf-8")
    for field in METADATA_FIELDS:
        if not any(line.startswith(field) for line in metadata.splitlines()):
            raise CheckFailed(f"the wheel's metadata has no {field[:-1]}")
    with tarfile.open(sdist) as archive:
        members = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    if "LICENSE" not in members:
        raise CheckFailed("the sdist does not ship LICENSE")
    extra = sorted({name.split("/", 1)[0] for name in members} - SDIST_TOP_LEVEL)
    if extra:
        raise CheckFailed(f"the sdist ships more than the package: {', '.join(extra)}")


def _check_install(package: dict[str, str], dist: Path, tmp: Path, exclude_newer: str) -> None:
    venv = tmp / f"venv-{package['dist']}"
    python = venv / "bin" / "python"
    _run(["uv", "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=tmp)
    wheel = dist / f"{package['dist'].replace('-', '_')}-{package['version']}-py3-none-any.whl"
    _install(python, [str(wheel)], dist, exclude_newer)
    empty = tmp / f"cwd-{package['dist']}"
    empty.mkdir()
    env = _clean_env(venv)
    _run(
        [
            str(python),
            "-c",
            f"import importlib.metadata, {package['import']}; "
            f"print(importlib.metadata.version({package['dist']!r}))",
        ],
        cwd=empty,
        env=env,
    )
    example = _readme_example(Path(package["folder"]) / "README.md")
    if example is None:
        raise CheckFailed("the README has no ```python example")
    if 'command="harness"' in example and package["dist"] != "subagent-harness":
        # An example that drives the `harness` command needs that program installed too.
        harness = dist / f"subagent_harness-{_version_of(dist, 'subagent_harness')}"
        _install(python, [f"{harness}-py3-none-any.whl"], dist, exclude_newer)
    script = empty / "readme_example.py"
    script.write_text(example, encoding="utf-8")
    _run([str(python), str(script)], cwd=empty, env=env, timeout=EXAMPLE_TIMEOUT_SECONDS)
    if (venv / "bin" / "harness").exists():
        _run([str(venv / "bin" / "harness"), "--version"], cwd=empty, env=env)


def _version_of(dist: Path, stem: str) -> str:
    (wheel,) = dist.glob(f"{stem}-*-py3-none-any.whl")
    return wheel.name.split("-")[1]


def _install(python: Path, requirements: list[str], dist: Path, exclude_newer: str) -> None:
    _run(
        [
            "uv",
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            "--find-links",
            str(dist),
            "--exclude-newer",
            exclude_newer,
            *requirements,
        ],
        cwd=dist,
    )


def _readme_example(readme: Path) -> str | None:
    text = readme.read_text(encoding="utf-8")
    marker = text.find(_MARKER)
    match = _PYTHON_BLOCK.search(text, marker if marker >= 0 else 0)
    return None if match is None else match.group(1)


def _clean_env(venv: Path) -> dict[str, str]:
    """The parent's environment without workspace or key leakage, the venv first on PATH."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("VIRTUAL_ENV", "PYTHON", "UV_", "DEEPSEEK_"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONWARNDEFAULTENCODING"] = "1"
    return env


def _run(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> None:
    print("$", " ".join(argv), flush=True)
    try:
        completed = subprocess.run(argv, cwd=cwd, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"{argv[-1]} did not finish in {timeout:g} s") from None
    if completed.returncode != 0:
        raise CheckFailed(f"{Path(argv[0]).name} exited {completed.returncode}")


if __name__ == "__main__":
    sys.exit(main())
