"""The real-work suite's fixtures: the real agents, the loopback model stub, a home each.

The npm agents are installed once, pinned, with `npm install --ignore-scripts` into a cache folder
(`REALWORK_CACHE`, default `~/.cache/subagent-harness/realwork`) that later runs reuse. An
agent whose install fails is skipped with the reason, never silently. The native presets'
CLIs (`claude`, `codex`) come from the `[cli]` extras and `harness` is this interpreter; a
missing one is skipped the same way. Each test gets a
throwaway `HOME` (and XDG dirs, `CODEX_HOME`) holding that agent's config pointed at the stub,
and fake keys: nothing of the machine's own agent logins or settings is read.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.request import Request, urlopen

import pytest
from subagent_core.testing.pytest_plugin import process_test_fixtures

AGENTS: dict[str, tuple[str, dict[str, str]]] = {
    # preset → (npm package@version, the programs it provides: name on PATH → path in the package)
    "claude-acp": (
        "@agentclientprotocol/claude-agent-acp@0.101.0",
        {"claude-agent-acp": "node_modules/.bin/claude-agent-acp"},
    ),
    "codex-acp": ("@zed-industries/codex-acp@0.16.0", {"codex-acp": "node_modules/.bin/codex-acp"}),
    "gemini": ("@google/gemini-cli@0.61.0", {"gemini": "node_modules/.bin/gemini"}),
    "qwen": ("@qwen-code/qwen-code@0.24.4", {"qwen": "node_modules/.bin/qwen"}),
    # Without its postinstall (scripts are never run) the launcher is a stub: use the binary of
    # the platform package npm installed beside it.
    "opencode": (
        "opencode-ai@1.18.33",
        {"opencode": "node_modules/opencode-linux-x64/bin/opencode"},
    ),
}
"""The npm agents the suite drives, pinned (the presets' install hints name the same versions)."""

NATIVE: dict[str, str] = {
    # preset → where its program comes from (the `realwork` nox session syncs both extras)
    "claude": "subagent-claude[cli] (claude-agent-sdk's bundled claude)",
    "codex": "subagent-codex[cli] (openai-codex-cli-bin's codex)",
    "harness": "subagent-harness (this interpreter: harness acp-agent)",
}
"""The presets whose program comes from Python packages, not npm."""

PRESETS = [*AGENTS, *NATIVE]
"""Every preset the suite drives, in the order it drives them."""

INSTALL_TIMEOUT_SECONDS = 600
SECRET = "sk-realwork-SECRET-4f1c9e"
"""Put in the stub's 401 body: it must appear in no safe field."""
FAKE_KEY = "sk-realwork-fake-key"

anyio_backend, process_leak_guard = process_test_fixtures()


def _load_stub() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "realwork_model_stub", Path(__file__).with_name("model_stub.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cache() -> Path:
    root = os.environ.get("REALWORK_CACHE") or str(
        Path.home() / ".cache" / "subagent-harness" / "realwork"
    )
    return Path(root)


@dataclass(frozen=True)
class Installed:
    """One agent ready to run, or why not."""

    preset: str
    package: str
    bin_dir: Path | None
    skipped: str | None = None


def _install(preset: str, cache: Path) -> Installed:
    package, programs = AGENTS[preset]
    folder = cache / package.replace("/", "+").replace("@", "_")
    bin_dir = folder / "bin"
    marker = folder / ".installed"
    npm = shutil.which("npm")
    if not marker.exists():
        if npm is None:
            return Installed(preset, package, None, "npm is not installed")
        folder.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(folder),
                    "--ignore-scripts",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    package,
                ],
                capture_output=True,
                timeout=INSTALL_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Installed(
                preset, package, None, f"npm install did not finish in {INSTALL_TIMEOUT_SECONDS} s"
            )
        if done.returncode != 0:
            return Installed(preset, package, None, f"npm install exited {done.returncode}")
        marker.write_text(package, encoding="utf-8")
    bin_dir.mkdir(exist_ok=True)
    for name, relative in programs.items():
        target = folder / relative
        if not target.exists():
            return Installed(preset, package, None, f"{relative} is missing after the install")
        link = bin_dir / name
        if not link.exists():
            link.symlink_to(target)
    return Installed(preset, package, bin_dir)


def _native(preset: str) -> Installed:
    """A native preset's program, found as its provider finds it, or why it is missing."""
    found: object = sys.executable
    if preset == "claude":
        from subagent_claude._argv import bundled_cli  # pyright: ignore[reportPrivateUsage]

        found = bundled_cli() or shutil.which("claude")
    elif preset == "codex":
        from subagent_codex._config import bundled_codex  # pyright: ignore[reportPrivateUsage]

        found = bundled_codex() or shutil.which("codex")
    if found is None:
        return Installed(preset, NATIVE[preset], None, f"{NATIVE[preset]} is not installed")
    return Installed(preset, NATIVE[preset], Path(sys.executable).parent)


_installed: dict[str, Installed] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Installs every agent before any test runs (outside the per-test timeout)."""
    cache = _cache()
    for preset in AGENTS:
        started = time.monotonic()
        installed = _install(preset, cache)
        _installed[preset] = installed
        took = time.monotonic() - started
        state = f"SKIPPED: {installed.skipped}" if installed.skipped else "ready"
        INSTALLS.append((preset, f"{AGENTS[preset][0]}: {state} ({took:.1f} s)"))
    for preset in NATIVE:
        installed = _native(preset)
        _installed[preset] = installed
        state = f"SKIPPED: {installed.skipped}" if installed.skipped else "ready"
        INSTALLS.append((preset, f"{NATIVE[preset]}: {state}"))


INSTALLS: list[tuple[str, str]] = []


@pytest.fixture(scope="session")
def installs() -> dict[str, Installed]:
    """Every agent, installed (or the reason it could not be)."""
    return _installed


@pytest.fixture(scope="session")
def stub_server() -> Iterator[Any]:
    """The loopback model stub, in a thread of this process (its own port, 127.0.0.1)."""
    stub = _load_stub()
    server = stub.ThreadingHTTPServer(("127.0.0.1", 0), stub.Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class Stub:
    """The stub seen from one test: its base URL, the scenario, what it was asked."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"

    def script(self, **scenario: object) -> None:
        request = Request(
            f"{self.base}/__scenario",
            data=json.dumps(scenario).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urlopen(request, timeout=5) as answer:
            answer.read()

    def log(self) -> list[dict[str, Any]]:
        with urlopen(f"{self.base}/__log", timeout=5) as answer:
            return json.loads(answer.read())


@pytest.fixture
def stub(stub_server: Any) -> Stub:
    return Stub(stub_server.server_address[1])


@dataclass(frozen=True)
class AgentHome:
    """One agent's throwaway home and workspace, and the environment that points it at the stub."""

    preset: str
    workspace: Path
    env: dict[str, str]


def _codex_home(home: Path, base: str, model: str) -> dict[str, str]:
    """A `CODEX_HOME` whose config points codex at the stub, no retries; the variables."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "stub"\n'
        "[model_providers.stub]\n"
        f'name = "stub"\nbase_url = "{base}/v1"\nenv_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n',
        encoding="utf-8",
    )
    return {"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": FAKE_KEY}


def agent_env(preset: str, home: Path, bin_dir: Path, stub: Stub) -> dict[str, str]:
    """The whole environment of a run: PATH, a throwaway home, the stub, fake keys."""
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
        # Set on the machine that runs CI: the claude-acp preset must not pass it on.
        "IS_SANDBOX": "1",
        "PYTHONWARNDEFAULTENCODING": "1",
    }
    base = stub.base
    if preset == "claude-acp":
        env |= {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": FAKE_KEY}
    elif preset == "codex-acp":
        # A model codex knows, so it offers its apply_patch tool.
        env |= _codex_home(home, base, "gpt-5.2-codex")
    elif preset == "gemini":
        settings = home / ".gemini"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "settings.json").write_text(
            json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}), encoding="utf-8"
        )
        # A fixed model skips the router, whose classifier calls expect a JSON answer.
        env |= {
            "GEMINI_API_KEY": FAKE_KEY,
            "GOOGLE_GEMINI_BASE_URL": base,
            "GEMINI_MODEL": "gemini-2.5-flash",
        }
    elif preset == "qwen":
        settings = home / ".qwen"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "settings.json").write_text(
            json.dumps(
                {"security": {"auth": {"selectedType": "openai"}}, "model": {"name": "stub-model"}}
            ),
            encoding="utf-8",
        )
        env |= {
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_BASE_URL": f"{base}/v1",
            "OPENAI_MODEL": "stub-model",
        }
    elif preset == "claude":
        env |= {
            "ANTHROPIC_BASE_URL": base,
            "ANTHROPIC_API_KEY": FAKE_KEY,
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        }
    elif preset == "codex":
        # `gpt-5`: a model whose plain Responses turns the stub drives (exec_command).
        env |= _codex_home(home, base, "gpt-5")
        # Codex asks for approval only when a command asks to leave a read-only sandbox: the
        # user's harness.toml makes the preset's sandbox read-only (workspace-write, the
        # default, lets every write in the workspace run unasked).
        harness_dir = home / ".config" / "harness"
        harness_dir.mkdir(parents=True, exist_ok=True)
        (harness_dir / "harness.toml").write_text(
            '[providers.codex]\npreset = "codex"\nsandbox = "read-only"\n', encoding="utf-8"
        )
        tmpdir = home / "tmp"
        tmpdir.mkdir(exist_ok=True)
        env |= {"TMPDIR": str(tmpdir)}
    elif preset == "harness":
        env |= {
            "DEEPSEEK_API_KEY": FAKE_KEY,
            "DEEPSEEK_BASE_URL": f"{base}/v1",
            "DEEPSEEK_MODEL": "stub-model",
        }
    elif preset == "opencode":
        config = home / ".config" / "opencode"
        config.mkdir(parents=True, exist_ok=True)
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "stub",
            "options": {"baseURL": f"{base}/v1", "apiKey": "{env:OPENAI_API_KEY}"},
            "models": {"stub-model": {"name": "stub"}},
        }
        (config / "opencode.json").write_text(
            json.dumps(
                {
                    "provider": {"stub": provider},
                    "model": "stub/stub-model",
                    "small_model": "stub/stub-model",
                    "autoupdate": False,
                    "share": "disabled",
                }
            ),
            encoding="utf-8",
        )
        env |= {"OPENAI_API_KEY": FAKE_KEY}
    return env


CODEX_HOMES_IN_CACHE = ("codex-acp", "codex")


def _make_agent(
    preset: str, tmp_path: Path, installs: dict[str, Installed], stub: Stub
) -> Iterator[AgentHome]:
    installed = installs[preset]
    if installed.bin_dir is None:
        pytest.skip(f"{preset} ({installed.package}) not installed: {installed.skipped}")
    # codex refuses to set up its sandbox helper (`codex-linux-sandbox`) under the temporary
    # directory, so its home lives in the cache folder, removed after the test.
    home = tmp_path / "home"
    if preset in CODEX_HOMES_IN_CACHE:
        home = _cache() / "homes" / tmp_path.name
        shutil.rmtree(home, ignore_errors=True)
    workspace = tmp_path / "workspace"
    home.mkdir(parents=True)
    workspace.mkdir()
    try:
        yield AgentHome(
            preset, workspace.resolve(), agent_env(preset, home, installed.bin_dir, stub)
        )
    finally:
        if preset in CODEX_HOMES_IN_CACHE:
            shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(params=PRESETS)
def agent(
    request: pytest.FixtureRequest, tmp_path: Path, installs: dict[str, Installed], stub: Stub
) -> Iterator[AgentHome]:
    """Each agent in turn: skipped (naming why) when not installed; else its home and env."""
    yield from _make_agent(request.param, tmp_path, installs, stub)


@pytest.fixture
def codex_agent(tmp_path: Path, installs: dict[str, Installed], stub: Stub) -> Iterator[AgentHome]:
    """codex-acp alone (its command sandbox)."""
    yield from _make_agent("codex-acp", tmp_path, installs, stub)


FIGURES: list[tuple[str, str, str]] = []
"""(agent, scenario, what was measured), printed at the end of the session."""


@pytest.fixture
def figure() -> Any:
    """Records one figure for the end-of-session table (and prints it at once)."""

    def record(preset: str, scenario: str, text: str) -> None:
        FIGURES.append((preset, scenario, text))
        print(f"realwork: {preset}: {scenario}: {text}")

    return record


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Each agent's figures, and each skipped install with its reason."""
    write = terminalreporter.write_line
    if _installed or FIGURES:
        write("")
        write("realwork figures (agent | scenario | measured):")
    for preset, text in INSTALLS:
        write(f"  {preset} | install | {text}")
    for preset, scenario, text in FIGURES:
        write(f"  {preset} | {scenario} | {text}")
