"""Safe failure text: built only from closed vocabularies, configured names and numbers.

Consumers may show a diagnostic and test whether one is present; they never parse it.
"""

from __future__ import annotations

from typing import Final, Literal

FailureCategory = Literal[
    "authentication",
    "configuration",
    "transport",
    "protocol",
    "process-exit",
    "process-start",
    "remote-limit",
    "timeout",
    "upstream",
    "output-schema",
    "child-error",
    "child-disposed",
    "child-unknown",
    "missing-terminal",
    "budget",
    "session-busy",
    "resume-miss",
    "unknown",
]
"""The closed category vocabulary of failure lines, across every provider.

`timeout`: a startup or idle deadline expired. `upstream`: the child's own model service
failed (5xx, overload, connection). `output-schema`: the child could not produce output that
validates against the requested schema. `budget`: reported usage crossed the request's
`Budget` (the turn was interrupted). `session-busy`: another live session holds the handle.
`resume-miss`: the child no longer knows the session it was asked to continue.
"""

PermissionProtocol = Literal["ACP", "Claude", "Codex"]
"""The protocol label that opens a permission line."""

DIAGNOSTIC_MAX_BYTES: Final = 4096
"""The shared byte bound on every diagnostic and start error (UTF-8)."""

TRUNCATION_MARKER: Final = "\n[diagnostic truncated]"
_CUT_AT: Final = DIAGNOSTIC_MAX_BYTES - len(TRUNCATION_MARKER.encode())  # 4073

ACP_TOOL_KINDS: Final = frozenset(
    {
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "think",
        "fetch",
        "switch_mode",
        "other",
    }
)
"""The ACP closed set of tool kinds; anything else is reported as `other`."""


def failure_line(
    provider: str,
    stage: str,
    category: str,
    *,
    stop_reason: str | None = None,
    exit_code: int | None = None,
    signal: str | None = None,
) -> str:
    """Renders `Subagent failure (provider: …; stage: …; category: …[; …])`.

    Optional fields keep their fixed order and are left out when unknown; an exit code of 0 is
    a known value and is shown.
    """
    fields = [f"provider: {provider}", f"stage: {stage}", f"category: {category}"]
    if stop_reason is not None:
        fields.append(f"stop reason: {stop_reason}")
    if exit_code is not None:
        fields.append(f"exit code: {exit_code}")
    if signal is not None:
        fields.append(f"signal: {signal}")
    return f"Subagent failure ({'; '.join(fields)})"


def safe_tool_kind(kind: object) -> str:
    """Maps a child-supplied ACP tool kind into the closed set (`other` when unknown)."""
    value = getattr(kind, "value", kind)
    return value if isinstance(value, str) and value in ACP_TOOL_KINDS else "other"


def permission_line(
    protocol: PermissionProtocol, policy: str, tool_kind: str | None, decision: str | None
) -> str:
    """Renders `<Protocol> permission (policy: …; tool kind: …; decision: …)`.

    The tool kind is forced into the ACP closed set (every protocol's kinds are mapped onto
    it); fields that are `None` are left out, in the fixed order policy, tool kind, decision.
    """
    fields = [f"policy: {policy}"]
    if tool_kind is not None:
        fields.append(f"tool kind: {safe_tool_kind(tool_kind)}")
    if decision is not None:
        fields.append(f"decision: {decision}")
    return f"{protocol} permission ({'; '.join(fields)})"


def bound_diagnostic(text: str) -> str:
    """Bounds text to 4096 UTF-8 bytes without splitting a character.

    Text of at most 4096 bytes is returned unchanged. Longer text is cut at 4073 bytes, moved
    left to a character boundary, and `\\n[diagnostic truncated]` is appended. Lone surrogates
    (which have no UTF-8 form) become `?`, so the result always encodes.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates have no UTF-8 form; `?` keeps the result encodable and bounded.
        data = text.encode("utf-8", "replace")
        text = data.decode("utf-8")
    if len(data) <= DIAGNOSTIC_MAX_BYTES:
        return text
    cut = _CUT_AT
    # Continuation bytes look like 0b10xxxxxx: step left until the cut starts a character.
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut].decode("utf-8") + TRUNCATION_MARKER
