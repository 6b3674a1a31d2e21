"""Request, result and capability types shared by every provider."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from ._cancel import CancelSignal
from ._mcp_servers import MCPServerSpec, check_mcp_servers

StopReason = Literal["completed", "max-tokens", "refusal", "aborted", "error"]
"""Why a child stopped. Consumers treat any value they do not know as a failure."""


_CURRENCY = re.compile(r"[A-Z]{3}")


@dataclass(frozen=True, slots=True)
class Cost:
    """What a run cost, as the child's service reported it.

    Raises:
        ValueError: `amount` is not a finite non-negative number, or `currency` is not three
            upper-case ASCII letters (ISO 4217 shape). The message never echoes the value.
    """

    amount: float
    currency: str

    def __post_init__(self) -> None:
        amount = cast(object, self.amount)
        if (
            isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or not math.isfinite(amount)
            or amount < 0
        ):
            raise ValueError("Cost.amount must be a finite non-negative number")
        currency = cast(object, self.currency)
        if not isinstance(currency, str) or _CURRENCY.fullmatch(currency) is None:
            raise ValueError("Cost.currency must be three upper-case ASCII letters")
        object.__setattr__(self, "amount", float(amount))


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Totals for the whole run a provider could observe; `None` fields were not reported."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Input tokens served from the model service's prompt cache (part of `input_tokens`
    where the service counts them so; as reported otherwise)."""
    cost: Cost | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """Which gated request fields a provider can honour (one flag per field)."""

    output_schema: bool = False
    depth_limit: bool = False
    """Gates `SubagentRequest.max_depth`."""
    tool_filter: bool = False
    persona: bool = False


NO_CAPABILITIES = Capabilities()
"""What every out-of-process provider advertises: nothing it cannot enforce from outside."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentRequest:
    """One delegated task. A gated field is *requested* when it is not `None`."""

    prompt: str
    cwd: Path | None = None
    """The parent's workspace, absolute; a provider's own configured cwd may override it."""
    cancel: CancelSignal = field(default_factory=CancelSignal)
    """The single cancellation channel for this run."""
    label: str | None = None
    """A short human label for observers and logs; never sent to the child."""
    output_schema: dict[str, Any] | None = None
    max_depth: int | None = None
    tool_filter: tuple[str, ...] | None = None
    persona: str | None = None
    allow_writes: bool = False
    """Whether the parent lets the child change its workspace through the parent (for example
    an ACP client file system in read-write mode). An Ask-mode parent never sets it."""
    mcp_servers: tuple[MCPServerSpec, ...] = ()
    """MCP servers the parent hands to the child (names unique; any sequence is stored as a
    tuple). Empty, the default, hands none. A provider that cannot pass them on refuses a
    non-empty tuple at start rather than dropping it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mcp_servers", check_mcp_servers(self.mcp_servers))


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentResult:
    """How a child run ended. Never raised: child-level failure is a value."""

    stop_reason: StopReason
    output: str = ""
    """The child's answer text; partial when the run did not complete."""
    diagnostic: str | None = None
    """Safe fixed-vocabulary text of at most 4096 UTF-8 bytes, or `None`."""
    usage: Usage | None = None
    structured_output: object = None
    """The parsed JSON value of `output` when the request's `output_schema` was honoured and the
    run completed with output that validates against it; `None` otherwise."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What registry observers learn about a run."""

    id: str
    provider: str
    label: str | None
