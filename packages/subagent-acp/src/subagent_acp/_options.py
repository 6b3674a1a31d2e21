"""Session options (`ACPConfig.mode`, `.model`) against what the child's `session/new` (or, for a
resumed session, `session/resume` / `session/load`) offers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from acp.schema import (
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
)

from ._bridge import Session
from ._config import ACPConfig

Step = tuple[Literal["mode", "config"], str, str]
"""`("mode", "", mode_id)` → `session/set_mode`; `("config", option_id, value)` →
`session/set_config_option`."""

SessionAnswer = NewSessionResponse | LoadSessionResponse | ResumeSessionResponse
"""An answer that opens a session: its modes and config options are what may be selected."""


def session_options(config: ACPConfig, response: SessionAnswer) -> list[Step | None]:
    """The requests that apply the configured mode and model; `None` for one not offered.

    A mode is chosen from the child's session modes, else from a config option of category
    `mode`; a model only from a config option of category `model`.
    """
    steps: list[Step | None] = []
    if config.mode is not None:
        modes = response.modes
        if modes is not None and any(mode.id == config.mode for mode in modes.available_modes):
            steps.append(("mode", "", config.mode))
        else:
            steps.append(_config_step(response, "mode", config.mode))
    if config.model is not None:
        steps.append(_config_step(response, "model", config.model))
    return steps


async def apply_option(session: Session, session_id: str, step: Step) -> None:
    """Sends the request of one step (its answer carries nothing the run keeps)."""
    kind, config_id, value = step
    if kind == "mode":
        await session.set_mode(session_id, value)
    else:
        await session.set_config_option(session_id, config_id, value)


def _config_step(response: SessionAnswer, category: str, value: str) -> Step | None:
    for option in response.config_options or []:
        if not isinstance(option, SessionConfigOptionSelect):
            continue
        if option.category != category:
            continue
        if value in _values(option.options):
            return ("config", option.id, value)
    return None


def _values(
    options: Iterable[SessionConfigSelectOption] | Iterable[SessionConfigSelectGroup],
) -> set[str]:
    values: set[str] = set()
    for item in options:
        if isinstance(item, SessionConfigSelectGroup):
            values.update(option.value for option in item.options)
        else:
            values.add(item.value)
    return values
