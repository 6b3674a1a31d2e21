"""Tokens and cost as `harness delegate` and `harness run` show them, and as `--json` carries them.

One rendering for every command, so a person comparing runs reads the same words and a script
reads the same keys. Only numbers and the three-letter currency code appear (no child text).
"""

from __future__ import annotations

from typing import Any

from subagent_core import Cost, Usage


def usage_summary(usage: Usage | None) -> str | None:
    """`tokens: 630 in (157 cached), 63 out; cost: 0.0123 USD`, or None when nothing was reported.

    A field the provider did not report is left out (never shown as 0).
    """
    if usage is None:
        return None
    parts: list[str] = []
    if usage.input_tokens is not None:
        cached = (
            "" if usage.cached_input_tokens is None else f" ({usage.cached_input_tokens} cached)"
        )
        parts.append(f"{usage.input_tokens} in{cached}")
    elif usage.cached_input_tokens is not None:
        parts.append(f"{usage.cached_input_tokens} cached in")
    if usage.output_tokens is not None:
        parts.append(f"{usage.output_tokens} out")
    text = f"tokens: {', '.join(parts)}" if parts else ""
    if usage.cost is not None:
        cost = f"cost: {cost_text(usage.cost)}"
        text = f"{text}; {cost}" if text else cost
    return text or None


def cost_text(cost: Cost) -> str:
    """`0.0123 USD`: up to six significant decimals, never in exponent form."""
    amount = f"{cost.amount:.6f}".rstrip("0").rstrip(".")
    return f"{amount or '0'} {cost.currency}"


def usage_record(usage: Usage | None) -> dict[str, Any] | None:
    """The `usage` value of a `--json` result: counts (int or null) and `cost` (or null)."""
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cost": cost_record(usage.cost),
    }


def cost_record(cost: Cost | None) -> dict[str, Any] | None:
    """`{"amount": 0.0123, "currency": "USD"}` or None."""
    return None if cost is None else {"amount": cost.amount, "currency": cost.currency}
