"""The fake app-server's scenario: a JSON object of known knobs, read once when the fake starts.

A test writes the scenario (`scenario_env(scenario)` puts it in `CODEX_FAKE_SCENARIO`); the
fake's server loop (`_fake`) plays it. Its knobs:

- `account`: the `account/read` answer (default: no login needed);
- `initialize_error`: answer `initialize` with a JSON-RPC error of this code;
- `hang_at`: a request method never answered (the fake reads on until EOF);
- `exit_at`: `"initialize"` or `"thread"`: exit (code `exit_code`, default 3) at that request;
- `turn`: the actions played after `turn/start` is answered, in order, each an object whose
  first key names it: `delta` (text), `message` (text; with `phase`), `reasoning` (text),
  `command` (a commandExecution item, started and completed), `usage` ([input, cached,
  output]), `approval` (`"command"`, `"fileChange"`, `"permissions"`; with `count`, default 1:
  a storm sends them all before reading an answer), `request` (any method: a server request
  the client does not know), `error` (a `codexErrorInfo`; with `willRetry`), `complete`
  (`"completed"`, `"failed"`, `"interrupted"`; with `info`), `flood` (that many notifications
  of an unknown method), `garbage` (a line that is not JSON), `huge` (a line of that many
  bytes), `duplicate` (answer the last request again), `late` (answer an id never asked),
  `die` (write half a frame, then exit with that code), `exit` (exit with that code), `hang`
  (read and ignore stdin for ever), `until_interrupt` (silence until `turn/interrupt`),
  `escapee` (start a `setsid` grandchild that sleeps), `env_to` (write the environment as
  JSON to that path), `pid_to` (write the fake's pid to that path);
- `turns`: one action list per turn, for several turns on one process (the last one repeats);
- `echo_history`: each turn's final answer is `seen: <every prompt so far, ` | `-joined>`;
- `ignore_eof`: keep running after stdin ends, and ignore SIGTERM;
- `answers_to`: append every answer the client gave to a server request to that file (JSONL).

The shared knobs of the conformance suite (`subagent_core.testing.conformance`) read as:
`hang_at` `"handshake"` is `"initialize"`; `exit_code` without `exit_at` exits at
`initialize`; `trap_term` ignores SIGTERM; without `turn`, the turn is built from `text`
(default `"done"`; with `echo_prompt` the turn's prompt, and the thread's token totals grow by
`[len(prompt), 0, 1]`): `flood` reasoning deltas, then the final answer and `completed`, or
on the first turn with `hang_at` `"turn"` the text as a delta and silence until
`turn/interrupt` (or EOF); `grandchild_holds_stdout` and `setsid_escapee` start grandchildren
as each turn starts.

An unknown knob or action fails the fake at once, so a typo in a test cannot pass as a
scenario that silently does less. Standard library only, like the fake itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

SCENARIO_ENV: Final = "CODEX_FAKE_SCENARIO"
"""Environment variable holding the scenario as a JSON object."""

KNOBS: Final = frozenset(
    {
        "account",
        "initialize_error",
        "hang_at",
        "exit_at",
        "exit_code",
        "turn",
        "turns",
        "echo_history",
        "ignore_eof",
        "answers_to",
        "text",
        "echo_prompt",
        "trap_term",
        "grandchild_holds_stdout",
        "setsid_escapee",
        "flood",
    }
)
"""Every knob a scenario may set."""

ACTIONS: Final = frozenset(
    {
        "delta",
        "message",
        "reasoning",
        "command",
        "usage",
        "approval",
        "request",
        "error",
        "complete",
        "flood",
        "garbage",
        "huge",
        "duplicate",
        "late",
        "die",
        "exit",
        "hang",
        "until_interrupt",
        "escapee",
        "env_to",
        "pid_to",
    }
)
"""Every action a turn may play; an action is an object whose first key names it."""

Action = Mapping[str, Any]
"""One step of a turn, as the scenario writes it."""


class ScenarioError(ValueError):
    """The scenario is not a JSON object of known knobs whose turns play known actions."""


def load_scenario(environ: Mapping[str, str]) -> dict[str, Any]:
    """The scenario from `CODEX_FAKE_SCENARIO` (empty: every turn answers `done`), with the
    shared knobs of the conformance suite rewritten in this fake's own terms.

    Raises:
        ScenarioError: not a JSON object, an unknown knob, or a turn with an unknown action.
    """
    raw = environ.get(SCENARIO_ENV)
    try:
        value: object = json.loads(raw) if raw else {}
    except ValueError:
        raise ScenarioError("the scenario is not JSON") from None
    if not isinstance(value, dict):
        raise ScenarioError("the scenario must be a JSON object")
    unknown = sorted(str(knob) for knob in cast("dict[object, object]", value) if knob not in KNOBS)
    if unknown:
        raise ScenarioError(f"unknown knobs: {', '.join(unknown)}")
    scenario = cast("dict[str, Any]", value)
    if "turn" in scenario:
        _check_turn(scenario["turn"])
    turns: object = scenario.get("turns")
    if turns is not None:
        if not isinstance(turns, list):
            raise ScenarioError("turns must be a list of turns")
        for turn in cast("list[object]", turns):
            _check_turn(turn)
    if scenario.get("hang_at") == "handshake":
        scenario["hang_at"] = "initialize"
    if "exit_at" not in scenario and scenario.get("exit_code") is not None:
        scenario["exit_at"] = "initialize"
    if scenario.get("exit_at") is not None:
        scenario.setdefault("exit_code", 3)
    if scenario.get("ignore_eof"):
        scenario["trap_term"] = True
    return scenario


def _check_turn(turn: object) -> None:
    if not isinstance(turn, list):
        raise ScenarioError("a turn must be a list of actions")
    for action in cast("list[object]", turn):
        keys = list(cast("dict[object, object]", action)) if isinstance(action, dict) else []
        if not keys or keys[0] not in ACTIONS:
            raise ScenarioError(f"unknown action: {action!r}")


def shared_turn(
    scenario: Mapping[str, Any], *, prompt: str, totals: Sequence[int], silent: bool
) -> list[Action]:
    """The turn the shared knobs describe, for a scenario without `turn`.

    `flood` reasoning deltas; with `echo_prompt` the thread's `totals` as its usage and the
    prompt as the answer, else `text`; then the final answer and `completed`. A `silent` turn
    (the first under `hang_at` `"turn"`) streams the answer as a delta and plays nothing more.
    """
    text = prompt if scenario.get("echo_prompt") else str(scenario.get("text", "done"))
    actions: list[Action] = [{"reasoning": "x"} for _ in range(int(scenario.get("flood", 0)))]
    if scenario.get("echo_prompt"):
        actions.append({"usage": list(totals)})
    if silent:
        return [*actions, {"delta": text}]
    return [*actions, {"message": text, "phase": "final_answer"}, {"complete": "completed"}]


def echoed_totals(totals: Sequence[int], prompt: str) -> list[int]:
    """The thread's token totals (input, cached, output) after one more `echo_prompt` turn:
    its prompt's length in, one token out."""
    return [totals[0] + len(prompt), 0, totals[2] + 1]
