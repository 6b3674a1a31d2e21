"""Every check CI runs, one nox session each.

Each package session syncs only that workspace member, its declared dependencies and the root
`dev` group into the session's venv, so an import of an undeclared package fails there.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = [
    "lint",
    "types",
    "tests",
    "e2e",
    "ray",
    "packages",
    "realwork",
    "docs",
    "browser",
]

PACKAGES = {
    "subagent-core": "subagent-core",
    "subagent-acp": "subagent-acp",
    "subagent-sdk": "subagent-sdk",
    "subagent-claude": "subagent-claude",
    "subagent-codex": "subagent-codex",
    "subagent-model-agent": "model-agent",
    "subagent-harness": "harness",
}
"""Distribution name → folder under packages/ (the folders keep the import names' spelling)."""
EXTRAS = {
    "subagent-claude": ("cli",),
    "subagent-codex": ("cli",),
    "subagent-harness": ("otel",),
}
"""Extras a package's tests need: the `[cli]` extras bring the real CLI (claude) or binary
(codex) their tests drive (they skip, saying why, only when it cannot be installed); the
harness's `[otel]` brings the OTLP exporter its export tests feed a receiver with."""
TEST_ENV = {"PYTHONWARNDEFAULTENCODING": "1"}


def _sync(session: nox.Session, *args: str) -> None:
    session.run_install(
        "uv",
        "sync",
        *args,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        silent=True,
    )


@nox.session
@nox.parametrize("package", list(PACKAGES))
def tests(session: nox.Session, package: str) -> None:
    """One package alone, with only its own dependencies and the test tools."""
    extras = [arg for extra in EXTRAS.get(package, ()) for arg in ("--extra", extra)]
    _sync(session, "--package", package, *extras, "--no-default-groups", "--group", "dev")
    session.run("pytest", f"packages/{PACKAGES[package]}/tests", *session.posargs, env=TEST_ENV)


@nox.session
def e2e(session: nox.Session) -> None:
    """Cross-package end-to-end suite, slow soak included; keyed tests skip without a key."""
    _sync(session, "--all-packages", "--no-default-groups", "--group", "dev")
    session.run("pytest", "tests-e2e", *session.posargs, env=TEST_ENV)


@nox.session
def realwork(session: nox.Session) -> None:
    """The real npm agents doing real work through the presets, against a loopback model stub.

    Serial and short: each agent is installed once (pinned, `npm install --ignore-scripts`)
    into a cache folder later runs reuse (`REALWORK_CACHE`, default
    `~/.cache/subagent-harness/realwork`); one that fails to install is skipped with the reason.
    The native presets' CLIs come from the `[cli]` extras of subagent-claude and subagent-codex
    (skipped, saying why, when one is unavailable). Each agent's figures are printed at the end.
    """
    _sync(session, "--all-packages", "--extra", "cli", "--no-default-groups", "--group", "dev")
    session.run("pytest", "tests-realwork", "-rs", *session.posargs, env=TEST_ENV)


@nox.session
def ray(session: nox.Session) -> None:
    """subagent-ray's tests on a real local 3-node Ray cluster (serial; its own session because
    the cluster costs ~1.5 GB and tens of seconds to start, so it is not in `tests`)."""
    # The harness with its `[ray]` extra: `harness fanout` across the cluster's nodes.
    _sync(
        session,
        "--package",
        "subagent-ray",
        "--package",
        "subagent-acp",
        "--package",
        "subagent-harness",
        "--extra",
        "ray",
        "--no-default-groups",
        "--group",
        "dev",
    )
    # Under uv, Ray would otherwise package the checkout and start each worker through uv.
    env = {**TEST_ENV, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    session.run("pytest", "packages/subagent-ray/tests", *session.posargs, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check over the whole tree."""
    _sync(session, "--only-group", "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """pyright strict over every package, `tests-realwork/` and `bench/` (pyproject's
    `include`), once for Linux and once for Windows branches."""
    # The harness's [otel] extra: its exporter import is typed against the real package.
    _sync(
        session,
        "--all-packages",
        "--extra",
        "otel",
        "--no-default-groups",
        "--group",
        "lint",
        "--group",
        "dev",
    )
    for platform in ("Linux", "Windows"):
        session.run("pyright", "--pythonplatform", platform, *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site: `mkdocs build --strict` (a broken link, anchor or API reference fails),
    then a check that every public name of every package's face has its anchor in the site.

    The API pages are read from source, so Ray, which `subagent-ray` needs only at run time,
    is left out of the venv."""
    _sync(
        session,
        "--all-packages",
        "--no-install-package",
        "ray",
        "--no-default-groups",
        "--group",
        "docs",
    )
    site = Path(session.create_tmp()) / "site"
    # Material prints a notice about MkDocs 2.0 on every build; it says nothing about this site.
    session.run(
        "mkdocs", "build", "--strict", "--site-dir", str(site), env={"NO_MKDOCS_2_WARNING": "1"}
    )
    session.run("python", ".ci/docs_check.py", str(site))


@nox.session
def browser(session: nox.Session) -> None:
    """The fan-out report in a real headless Chromium: Debian's `chromium` (`.ci/run` installs
    it) driven by Playwright's Python package at `executable_path` (`playwright install` is
    never run: it would download a browser). Serial; prints its figures (browser version, load
    time, rows, diffs, the screenshot's path); skips, saying why, only without chromium."""
    _sync(session, "--package", "subagent-harness", "--no-default-groups", "--group", "dev")
    session.install("playwright>=1.49")
    session.run(
        "pytest",
        "packages/harness/tests/test_fanout_browser.py",
        "-s",
        "-rs",
        *session.posargs,
        env=TEST_ENV,
    )


@nox.session
def build(session: nox.Session) -> None:
    """Build every member's sdist and wheel."""
    session.run_install("uv", "build", "--all-packages", "-o", "dist", external=True)


@nox.session(venv_backend="none")
def packages(session: nox.Session) -> None:
    """Build each package, install each wheel alone in a clean venv, import it, run its example.

    Also checks what each sdist and wheel ships: the licence, no working notes.
    """
    session.run(sys.executable, ".ci/package_check.py", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: print same-run ratios and write bench/results.md (not part of CI).

    The `[cli]` extras bring the real `claude` CLI and `codex` binary, so the native-vs-ACP
    cases (`claude`, `codex`) run instead of skipping."""
    _sync(session, "--all-packages", "--extra", "cli", "--no-default-groups", "--group", "dev")
    session.run("python", "bench/run.py", *session.posargs)
