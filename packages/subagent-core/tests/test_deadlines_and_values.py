"""Deadline settings and the idle deadline; costs and structured output checked into values."""

from __future__ import annotations

import math
import time

import anyio
import pytest
from subagent_core import Cost, Usage, UsageEvent
from subagent_core.kit import (
    IdleDeadline,
    StructuredOutputError,
    check_timeout,
    parse_structured_output,
    safe_cost,
)


@pytest.mark.parametrize("value", [None, 0.5, 60, 1800.0])
def test_valid_timeouts(value: object) -> None:
    assert check_timeout(value, owner="X", name="idle_timeout_seconds") == value


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, True, "60", [60]])
def test_invalid_timeouts_name_the_field(value: object) -> None:
    with pytest.raises(ValueError) as caught:
        check_timeout(value, owner="X", name="startup_timeout_seconds")
    assert str(caught.value) == (
        "X.startup_timeout_seconds must be None or a positive finite number of seconds"
    )


async def test_an_idle_deadline_expires_only_after_a_whole_silent_bound() -> None:
    deadline = IdleDeadline(0.2)
    touches = 0
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def keep_alive() -> None:
                nonlocal touches
                while True:
                    await anyio.sleep(0.05)
                    deadline.touch()
                    touches += 1

            tg.start_soon(keep_alive)
            with anyio.move_on_after(1.0) as scope:
                await deadline.expired()
            assert scope.cancelled_caught  # kept alive for the whole second
            tg.cancel_scope.cancel()
        started = anyio.current_time()
        await deadline.expired()
        assert anyio.current_time() - started >= 0.2 - 0.06
    assert touches > 5


async def test_a_disabled_idle_deadline_never_expires() -> None:
    deadline = IdleDeadline(None)
    deadline.touch()
    with anyio.move_on_after(0.2) as scope:
        await deadline.expired()
    assert scope.cancelled_caught


async def test_a_pause_stops_the_clock_and_its_end_restarts_the_bound() -> None:
    # A pause five bounds long (a human answering a permission question) is not silence; the
    # bound then runs again from the pause's end, in full.
    deadline = IdleDeadline(0.1)
    with anyio.fail_after(10):
        with deadline.paused(), deadline.paused():  # nested: concurrent questions
            with anyio.move_on_after(0.5) as scope:
                await deadline.expired()
            assert scope.cancelled_caught
        released = time.monotonic()
        await deadline.expired()
        assert time.monotonic() - released >= 0.1


def test_cost_and_usage_carry_the_new_fields() -> None:
    usage = Usage(input_tokens=10, output_tokens=2, cached_input_tokens=4, cost=Cost(0.25, "USD"))
    assert usage.cost == Cost(amount=0.25, currency="USD")
    event = UsageEvent(input_tokens=1, cached_input_tokens=2, cost=Cost(1, "EUR"))
    assert (event.cached_input_tokens, event.cost) == (2, Cost(1.0, "EUR"))
    assert UsageEvent(cost="1 USD", cached_input_tokens=-1).cost is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("amount", "currency"),
    [
        (1, "usd"),
        (1, "US"),
        (1, "USDX"),
        (-1, "USD"),
        (math.inf, "USD"),
        (True, "USD"),
        ("1", "USD"),
        (1, None),
    ],
)
def test_an_invalid_cost_is_dropped_never_raised(amount: object, currency: object) -> None:
    assert safe_cost(amount, currency) is None
    if isinstance(amount, int | float) and isinstance(currency, str):
        with pytest.raises(ValueError):
            Cost(amount, currency)


def test_a_valid_cost_is_kept() -> None:
    assert safe_cost(0.0123, "USD") == Cost(0.0123, "USD")


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_structured_output_that_validates_is_parsed() -> None:
    assert parse_structured_output(SCHEMA, '{"n": 3}') == {"n": 3}


@pytest.mark.parametrize("text", ["not json", "[1]", '"n"'])
def test_structured_output_errors_carry_no_child_text(text: str) -> None:
    with pytest.raises(StructuredOutputError) as caught:
        parse_structured_output(SCHEMA, text)
    assert text not in str(caught.value)
