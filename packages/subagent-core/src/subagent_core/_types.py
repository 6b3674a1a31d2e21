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
    sessions: bool = False
    """Several turns on one live child (`SubagentRegistry.open_session`)."""
    resume: bool = False
    """A session continued by handle in a fresh child (`SubagentRegistry.resume_session`)."""


NO_CAPABILITIES = Capabilities()
"""What every out-of-process provider advertises: nothing it cannot enforce from outside."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """The most a run or a session may consume, as its child reports it.

    When reported usage crosses a limit the turn is interrupted and settles `error` with
    `category: budget`; a session's budget counts every turn, resumed ones included.
    `max_tokens` counts input plus output tokens; `max_cost` compares amounts in its own
    currency (a cost reported in another currency is not counted against it).

    Raises:
        ValueError: `max_tokens` is not a positive int, or `max_cost` is not a `Cost`.
    """

    max_tokens: int | None = None
    max_cost: Cost | None = None

    def __post_init__(self) -> None:
        tokens = cast(object, self.max_tokens)
        if tokens is not None and (
            isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1
        ):
            raise ValueError("Budget.max_tokens must be a positive int or None")
        if self.max_cost is not None and not isinstance(cast(object, self.max_cost), Cost):
            raise ValueError("Budget.max_cost must be a Cost or None")

    def crossed_by(self, usage: Usage | None) -> bool:
        """True when `usage` is past either limit."""
        if usage is None:
            return False
        if self.max_tokens is not None:
            tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0)
            if tokens > self.max_tokens:
                return True
        limit, cost = self.max_cost, usage.cost
        return (
            limit is not None
            and cost is not None
            and cost.currency == limit.currency
            and cost.amount > limit.amount
        )


def add_usage(first: Usage | None, second: Usage | None) -> Usage | None:
    """The sum of two usages; a field either side did not report stays as the other says.

    Costs add up in one currency; costs in two currencies cannot, and the sum reports none.
    """
    if first is None or second is None:
        return second if first is None else first

    def plus(a: int | None, b: int | None) -> int | None:
        return b if a is None else a if b is None else a + b

    cost: Cost | None
    if first.cost is None or second.cost is None:
        cost = first.cost or second.cost
    elif first.cost.currency == second.cost.currency:
        cost = Cost(first.cost.amount + second.cost.amount, first.cost.currency)
    else:
        cost = None
    return Usage(
        input_tokens=plus(first.input_tokens, second.input_tokens),
        output_tokens=plus(first.output_tokens, second.output_tokens),
        cached_input_tokens=plus(first.cached_input_tokens, second.cached_input_tokens),
        cost=cost,
    )


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
    budget: Budget | None = None
    """The most this run may consume (`None`: no limit)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mcp_servers", check_mcp_servers(self.mcp_servers))


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRequest:
    """A child kept for several turns: everything a `SubagentRequest` carries but the prompt.

    The cancel signal aborts the start (each turn has its own). `state_dir` is where a
    resumable session keeps its record and the child's own per-handle state
    (`state_dir/<handle>/`); without it the session lives only as long as its process and its
    handle cannot be resumed.
    """

    cwd: Path | None = None
    cancel: CancelSignal = field(default_factory=CancelSignal)
    label: str | None = None
    max_depth: int | None = None
    tool_filter: tuple[str, ...] | None = None
    persona: str | None = None
    allow_writes: bool = False
    mcp_servers: tuple[MCPServerSpec, ...] = ()
    budget: Budget | None = None
    """The most the whole session may consume, over every turn and resume."""
    state_dir: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mcp_servers", check_mcp_servers(self.mcp_servers))

    @classmethod
    def of(cls, request: SubagentRequest, *, state_dir: Path | None = None) -> SessionRequest:
        """The session a one-shot request would be, kept under `state_dir` (its prompt is
        the first turn's; its output schema goes with each turn)."""
        return cls(
            cwd=request.cwd,
            cancel=request.cancel,
            label=request.label,
            max_depth=request.max_depth,
            tool_filter=request.tool_filter,
            persona=request.persona,
            allow_writes=request.allow_writes,
            mcp_servers=request.mcp_servers,
            budget=request.budget,
            state_dir=state_dir,
        )

    def turn_request(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> SubagentRequest:
        """The request of one turn (what a provider checks a turn against)."""
        return SubagentRequest(
            prompt=prompt,
            cwd=self.cwd,
            cancel=cancel or CancelSignal(),
            label=self.label,
            output_schema=output_schema,
            max_depth=self.max_depth,
            tool_filter=self.tool_filter,
            persona=self.persona,
            allow_writes=self.allow_writes,
            mcp_servers=self.mcp_servers,
            budget=self.budget,
        )


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
