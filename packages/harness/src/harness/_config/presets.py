"""Agents by name: the built-in recipes for the agents people delegate to.

A preset is a provider recipe a user can name without writing any config (`harness delegate
-a gemini …`) or start a `harness.toml` table from (`[providers.review] preset = "claude"`
plus overrides). Each says which program it runs, the host variables that must not reach it,
the teardown graces that suit it, how to install it and which credential variables it takes.

Credentials are never read from the parent environment implicitly: the inherited environment
is scrubbed of credential-shaped names (`subagent_core.child_env`), and a preset hands its
child exactly the credential variables it names, as `${VAR}` references resolved when the
child is spawned — only those that are set. A preset that cannot work without one of them
refuses to start before anything is spawned, naming the variables (never a value).

The versions in the install hints are the ones the real-work suite (`tests-realwork/`) runs.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

PresetKind = Literal["acp", "claude", "codex"]
"""Which provider runs the preset: ACP, or the native `subagent-claude` / `subagent-codex`."""

NATIVE_PACKAGES: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {
        "claude": ("subagent_claude", "subagent-claude"),
        "codex": ("subagent_codex", "subagent-codex"),
    }
)
"""Native provider kind → (import name, distribution)."""

NATIVE_KINDS: Final = ("claude", "codex")
"""The kinds whose provider finds its CLI itself (on PATH, or bundled in an extra's wheel)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """One agent by name: how to start it, what it needs, how to install it."""

    name: str
    kind: PresetKind
    program: str
    """The executable looked up on PATH (the native providers look for it themselves)."""
    args: tuple[str, ...] = ()
    command: str | None = None
    """argv[0] when it is not `program` on PATH (`harness` runs this interpreter)."""
    mode: str | None = None
    """ACP: the session mode selected after `session/new` (None: the agent's default)."""
    protocol_args: tuple[str, ...] = ()
    """Arguments a native provider adds itself (shown only)."""
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Fixed child variables (no credentials): settings that suit a delegated run."""
    unset: tuple[str, ...] = ()
    """Host variables the child must not inherit (they change how the agent behaves)."""
    credentials: tuple[str, ...] = ()
    """Credential variables passed to the child (as `${VAR}`) when set in the environment."""
    requires_credential: bool = False
    """True: at least one of `credentials` must be set, else the run refuses to start.
    False: the agent can also use its own stored login."""
    install: str
    """What to run to install the agent (an npm package with its version, or a pip extra)."""
    dispose_eof_grace_seconds: float = 0.5
    dispose_grace_seconds: float = 0.5
    dispose_kill_grace_seconds: float = 3.0

    @property
    def argv(self) -> tuple[str, ...]:
        """The command line as shown (the native providers add their protocol flags)."""
        return (self.command or self.program, *self.args, *self.protocol_args)

    def missing_credentials(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """The credential variables not set in `environ` (names only)."""
        return tuple(name for name in self.credentials if not environ.get(name))

    def lacks_credential(self, environ: Mapping[str, str]) -> bool:
        """True when the preset needs a credential and none of its variables is set."""
        return self.requires_credential and len(self.missing_credentials(environ)) == len(
            self.credentials
        )


_QUIET_CLAUDE: Final = MappingProxyType(
    {
        # A delegated run wants a prompt answer, not minutes of retries: the CLI retries a
        # 401 (and every 5xx) ten times with backoff by default, over a minute in all.
        "CLAUDE_CODE_MAX_RETRIES": "2",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
)
_CLAUDE_CREDENTIALS: Final = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
)
_OPENAI_CREDENTIALS: Final = ("OPENAI_API_KEY", "CODEX_API_KEY")

PRESETS: Final[tuple[Preset, ...]] = (
    Preset(
        name="claude",
        kind="claude",
        program="claude",
        env=_QUIET_CLAUDE,
        unset=("IS_SANDBOX",),
        credentials=_CLAUDE_CREDENTIALS,
        install="pip install 'subagent-claude[cli]'",
    ),
    Preset(
        name="codex",
        kind="codex",
        program="codex",
        protocol_args=("app-server",),
        credentials=_OPENAI_CREDENTIALS,
        install="pip install 'subagent-codex[cli]'",
    ),
    Preset(
        name="claude-acp",
        kind="acp",
        program="claude-agent-acp",
        # Without a mode it starts in `auto`, where a model classifier approves edits and
        # commands itself and the permission policy here is never asked.
        mode="default",
        env=_QUIET_CLAUDE,
        # Set (as on many CI hosts), it tells the bundled CLI it runs in a sandbox, where as
        # root it lets permission checks be skipped; earlier releases failed session/new.
        unset=("IS_SANDBOX",),
        credentials=_CLAUDE_CREDENTIALS,
        install="npm install -g @agentclientprotocol/claude-agent-acp@0.101.0",
    ),
    Preset(
        name="codex-acp",
        kind="acp",
        program="codex-acp",
        credentials=_OPENAI_CREDENTIALS,
        install="npm install -g @zed-industries/codex-acp@0.16.0",
    ),
    Preset(
        name="gemini",
        kind="acp",
        program="gemini",
        args=("--acp",),
        env=MappingProxyType({"GEMINI_CLI_NO_RELAUNCH": "true"}),
        # A service-account file would authenticate the child without being named here.
        unset=("GOOGLE_APPLICATION_CREDENTIALS",),
        credentials=("GEMINI_API_KEY",),
        requires_credential=True,
        install="npm install -g @google/gemini-cli@0.61.0",
    ),
    Preset(
        name="qwen",
        kind="acp",
        program="qwen",
        args=("--acp",),
        unset=("GOOGLE_APPLICATION_CREDENTIALS",),
        credentials=("OPENAI_API_KEY", "DASHSCOPE_API_KEY"),
        install="npm install -g @qwen-code/qwen-code@0.24.4",
    ),
    Preset(
        name="opencode",
        kind="acp",
        program="opencode",
        args=("acp",),
        env=MappingProxyType(
            {
                "OPENCODE_DISABLE_AUTOUPDATE": "true",
                # Its default lets every edit and command run unasked; asked, the permission
                # policy here decides (this variable wins over the user's own config).
                "OPENCODE_PERMISSION": '{"edit": "ask", "bash": "ask", "webfetch": "ask"}',
            }
        ),
        credentials=("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"),
        install="npm install -g opencode-ai@1.18.33",
    ),
    Preset(
        name="harness",
        kind="acp",
        program="harness",
        command=sys.executable,
        args=("-m", "harness", "acp-agent"),
        credentials=("DEEPSEEK_API_KEY",),
        install="pip install subagent-harness",
    ),
)
"""Every preset, in the order `harness agents` lists them."""


def find_preset(name: str) -> Preset | None:
    """The preset called `name`, or None."""
    return next((preset for preset in PRESETS if preset.name == name), None)


def preset_names() -> tuple[str, ...]:
    """Every preset's name (for messages)."""
    return tuple(preset.name for preset in PRESETS)
