"""What a provider's tests declare to run the conformance suite: the scenario and the target."""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, Final, Literal

from subagent_core import SubagentProvider
from subagent_core.kit import FailureCategory, failure_line

HangAt = Literal["handshake", "turn"]
"""Where a fake goes silent: before answering its handshake, or after streaming its first
turn's answer."""

HostMode = Literal["run", "session"]
"""What the parent-SIGKILL host holds when killed: a live run, or a session after one turn."""

CheckName = Literal[
    "pre-cancel-spawns-nothing",
    "cancel-mid-handshake-rolls-back",
    "caller-cancel-mid-handshake-rolls-back",
    "startup-deadline",
    "idle-deadline",
    "exit-during-handshake",
    "missing-command",
    "local-cancel-mid-turn",
    "dispose-before-result",
    "cancelled-dispose-caller",
    "eof-deaf-tree-ended",
    "term-trapping-tree-ended",
    "grandchild-holding-stdout-ended",
    "escaped-grandchild-ended",
    "flood-stays-bounded",
    "parent-sigkill-leaves-nothing",
    "concurrent-runs-isolated",
    "session-turns-share-one-process",
    "session-turn-cancelled-then-next",
    "session-turn-dispose-keeps-session",
    "session-one-turn-at-a-time",
    "session-child-killed-between-turns",
    "session-aclose-leaves-nothing",
    "session-parent-sigkill-leaves-nothing",
]
"""The checks of the suite, by the name a target uses to skip one."""

MISSING_COMMAND: Final = "/nonexistent/subagent-conformance/missing-command"
"""The command a target configures when a scenario asks for `missing_command`."""

_CONFIG_ONLY: Final = frozenset(
    {"missing_command", "startup_timeout_seconds", "idle_timeout_seconds"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """What one check asks of the provider's fake child, and of the provider's configuration.

    The knobs (`text` … `flood`) are the shared vocabulary every fake understands under these
    names; `knobs()` hands them over. The last three fields are configuration, not knobs.
    """

    text: str = "done"
    """The answer: streamed as the turn's output, then the turn completes."""
    echo_prompt: bool = False
    """Each turn answers its own prompt instead of `text` (what the fake makes of a prompt is
    `ConformanceTarget.answer`), with usage for the turn where the protocol reports usage."""
    hang_at: HangAt | None = None
    """`handshake`: never answer the handshake. `turn`: the first turn streams its answer, then
    goes silent (still reading: the provider's interrupt may end the turn, stdin EOF ends the
    child); later turns of a session answer as usual, so the session goes on. A fake whose
    protocol has no interrupt runs the silent turn out once the next prompt arrives."""
    exit_code: int | None = None
    """Exit with this code when the handshake's first request arrives, without answering."""
    ignore_eof: bool = False
    """Keep running after stdin reaches EOF (until signalled)."""
    trap_term: bool = False
    """Ignore SIGTERM: only SIGKILL ends the child."""
    grandchild_holds_stdout: bool = False
    """Before the turn's first output, start a grandchild in the child's process group that
    keeps the child's stdout open and never exits by itself."""
    setsid_escapee: bool = False
    """Before the turn's first output, start a grandchild in a session of its own (it leaves
    the child's process group) that never exits by itself."""
    flood: int = 0
    """Before the answer, send this many thought (reasoning) frames: activity the provider
    publishes as events, never output."""
    missing_command: bool = False
    """Configuration: the provider's command is `MISSING_COMMAND`, a program that does not exist."""
    startup_timeout_seconds: float | None = None
    """Configuration: the startup deadline (`None`: the provider's default)."""
    idle_timeout_seconds: float | None = None
    """Configuration: the idle deadline (`None`: the provider's default)."""

    def knobs(self) -> dict[str, object]:
        """The fake's knobs: `text`, and every other knob set away from its default."""
        default = Scenario()
        knobs: dict[str, object] = {"text": self.text}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name not in _CONFIG_ONLY and value != getattr(default, item.name):
                knobs[item.name] = value
        return knobs

    def deadlines(self) -> dict[str, float]:
        """The deadlines this scenario shortens, by the config field names every provider uses."""
        values = {
            "startup_timeout_seconds": self.startup_timeout_seconds,
            "idle_timeout_seconds": self.idle_timeout_seconds,
        }
        return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostics:
    """The stage and category names a provider reports for the shared failures.

    The defaults are the common vocabulary (`initialize`, `prompt`, `process`; `process-start`,
    `process-exit`); a provider whose protocol names its stages otherwise, or whose spec maps
    these facts to another category, says so here.
    """

    handshake_stage: str = "initialize"
    """The stage of a failure before publication (startup deadline, exit in the handshake)."""
    turn_stage: str = "prompt"
    """The stage of a failure during the turn (idle deadline)."""
    spawn_stage: str = "process"
    """The stage of a command that could not be started."""
    spawn_category: FailureCategory = "process-start"
    """The category of a command that could not be started."""
    exit_category: FailureCategory = "process-exit"
    """The category of a child that exited (during the handshake, or between turns)."""
    exit_stage: str = "process"
    """The stage of a child that exited after the handshake (the next turn names it)."""

    def startup_timeout(self, provider: str) -> str:
        """The line of a startup deadline that expired."""
        return failure_line(provider, self.handshake_stage, "timeout")

    def idle_timeout(self, provider: str) -> str:
        """The line of an idle deadline that expired."""
        return failure_line(provider, self.turn_stage, "timeout")

    def handshake_exit(self, provider: str, exit_code: int) -> str:
        """The line of a child that exited with `exit_code` during the handshake."""
        return failure_line(provider, self.handshake_stage, self.exit_category, exit_code=exit_code)

    def turn_exit(self, provider: str, signal: str) -> str:
        """The line of a turn whose child was killed by `signal` (e.g. `SIGKILL`)."""
        return failure_line(provider, self.exit_stage, self.exit_category, signal=signal)

    def missing_command(self, provider: str) -> str:
        """The line of a command that does not exist."""
        return failure_line(provider, self.spawn_stage, self.spawn_category)


class ConformanceTarget(abc.ABC):
    """How the suite builds the provider under test; a provider's tests subclass it.

    Define the subclass at module level and keep it constructible without arguments: the
    parent-SIGKILL check rebuilds it in a separate interpreter, from the file it is defined in.
    """

    aborted_text: ClassVar[str]
    """The fixed start-error text of a cancelled start (`aborted_before_start_text(kind)`)."""
    diagnostics: ClassVar[Diagnostics] = Diagnostics()
    """The stage and category names this provider reports."""
    skips: ClassVar[Mapping[CheckName, str]] = MappingProxyType({})
    """Checks that do not apply to this provider, each with the reason shown when skipped."""
    teardown_seconds: ClassVar[float] = 2.0
    """The longest a teardown of the fake may take with the graces the target configures."""

    def answer(self, prompt: str) -> str:
        """What the fake answers to `prompt` when the scenario sets `echo_prompt` (the prompt
        itself, unless the target says otherwise)."""
        return prompt

    def provider(self, scenario: Scenario, workspace: Path) -> SubagentProvider:
        """A provider whose child is the fake playing `scenario.knobs()`, working in
        `workspace`, with the scenario's configuration (command, deadlines) applied.

        Raises:
            NotImplementedError: the target overrides `open_provider` instead.
        """
        raise NotImplementedError

    @asynccontextmanager
    async def open_provider(
        self, scenario: Scenario, workspace: Path
    ) -> AsyncGenerator[SubagentProvider]:
        """`provider(scenario, workspace)`, around whatever the fake needs running (a stub
        server, say); override this instead of `provider` when it needs such a resource."""
        yield self.provider(scenario, workspace)
