"""Token usage: read from a stream's usage chunk, and summed over a run's requests and children.

A run's `Usage` is the total of every model request it made (answer rounds, summaries, schema
retries) and of every child it delegated to, so a host sees what the whole task cost. A field
stays `None` until some request reported it; a cost is kept only while every reported cost is
in one currency (a sum across currencies would be a made-up number).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from subagent_core import Cost, Usage

UsageObserver = Callable[[Usage], None]
"""Told a run's usage total so far each time a request or a delegated child reports some."""


def stream_usage(raw: Mapping[str, Any]) -> Usage:
    """The `usage` object of a chat-completions stream as a `Usage`.

    Cached input tokens come from `prompt_tokens_details.cached_tokens` (the OpenAI shape) or
    `prompt_cache_hit_tokens` (DeepSeek's); values that are not non-negative integers are
    treated as not reported.
    """
    details = raw.get("prompt_tokens_details")
    cached = (
        _count(cast(Mapping[str, Any], details).get("cached_tokens"))
        if isinstance(details, Mapping)
        else None
    )
    if cached is None:
        cached = _count(raw.get("prompt_cache_hit_tokens"))
    return Usage(
        input_tokens=_count(raw.get("prompt_tokens")),
        output_tokens=_count(raw.get("completion_tokens")),
        cached_input_tokens=cached,
    )


def add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    """`total` plus `more`, field by field (`None` + n = n; `None` when neither reported)."""
    if more is None:
        return total
    if total is None:
        return more
    return Usage(
        input_tokens=_add(total.input_tokens, more.input_tokens),
        output_tokens=_add(total.output_tokens, more.output_tokens),
        cached_input_tokens=_add(total.cached_input_tokens, more.cached_input_tokens),
        cost=_add_cost(total.cost, more.cost),
    )


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _add(left: int | None, right: int | None) -> int | None:
    if left is None:
        return right
    if right is None:
        return left
    return left + right


def _add_cost(left: Cost | None, right: Cost | None) -> Cost | None:
    if left is None:
        return right
    if right is None:
        return left
    if left.currency != right.currency:
        return None
    return Cost(left.amount + right.amount, left.currency)
