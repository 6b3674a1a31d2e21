"""The fake ACP agent's stored sessions: each conversation, kept where another process finds it.

With the `state_dir` knob (or `ACP_FAKE_STATE_DIR`) every session is a JSON file in that folder
— its id, its cwd, its prompts and the answers the fake gave — named by a digest of the id, so
any id the script chose is a safe file name; `session/load` and `session/resume` in a later
process reopen it, and an id never kept there is refused. Without it a session lives as long as
its process. Standard library only, like the rest of the fake.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

from ._script import Message, as_dict, as_list


def agent_capabilities(sessions: object) -> Message:
    """`initialize`'s `agentCapabilities` for the `sessions` knob: `load` advertises
    `loadSession`, `resume` advertises `sessionCapabilities.resume`, `both` both."""
    capabilities: Message = {}
    if sessions in ("load", "both"):
        capabilities["loadSession"] = True
    if sessions in ("resume", "both"):
        capabilities["sessionCapabilities"] = {"resume": {}}
    return capabilities


def _text(kind: str, text: str) -> Message:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


class SessionBook:
    """The session the fake serves: its id, cwd, prompts and answers (kept when asked)."""

    def __init__(self, state_dir: object) -> None:
        self._dir = Path(state_dir) if isinstance(state_dir, str) and state_dir else None
        self.session_id = (
            "fake-session-1" if self._dir is None else f"fake-session-{uuid.uuid4().hex}"
        )
        """The id `session/new` answers unless the script names one (unique when kept)."""
        self.cwd: str | None = None
        self.prompts: list[str] = []
        self.answers: list[str] = []

    def start(self, session_id: str, cwd: str | None) -> None:
        """A new session (`session/new`)."""
        self.session_id, self.cwd, self.prompts, self.answers = session_id, cwd, [], []
        self._save()

    def open(self, session_id: object, cwd: object) -> bool:
        """Reopens a kept session (`session/load`, `session/resume`); False for one not kept."""
        if not isinstance(session_id, str):
            return False
        path = self._path(session_id)
        if path is None:
            return False
        try:
            kept = as_dict(json.loads(path.read_text("utf-8")))
        except (OSError, ValueError):
            return False
        if kept.get("id") != session_id:
            return False
        self.session_id = session_id
        self.cwd = cwd if isinstance(cwd, str) else None
        self.prompts = [str(prompt) for prompt in as_list(kept.get("prompts"))]
        self.answers = [str(answer) for answer in as_list(kept.get("answers"))]
        return True

    def prompt(self, text: str) -> None:
        """A turn begins: its prompt is kept (and its answer, as it is streamed: `said`)."""
        self.prompts.append(text)
        self.answers.append("")
        self._save()

    def said(self, text: str) -> None:
        """Text the fake streamed as the current turn's answer."""
        if self.answers:
            self.answers[-1] += text
            self._save()

    def replay(self) -> list[Message]:
        """The conversation as the updates `session/load` sends before it answers."""
        updates: list[Message] = []
        for prompt, answer in zip(self.prompts, self.answers, strict=False):
            updates.append(_text("user_message_chunk", prompt))
            if answer:
                updates.append(_text("agent_message_chunk", answer))
        return updates

    def _path(self, session_id: str) -> Path | None:
        if self._dir is None:
            return None
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self._dir / f"{digest[:32]}.json"

    def _save(self) -> None:
        path = self._path(self.session_id)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "id": self.session_id,
            "cwd": self.cwd,
            "prompts": self.prompts,
            "answers": self.answers,
        }
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data), "utf-8")
        os.replace(temporary, path)
