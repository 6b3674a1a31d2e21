"""What `harness mcp`'s tools answer: structured content (per the output schemas) and its text.

Only three things a child wrote ever leave here: its answer (`output`, bounded), the answer
parsed as JSON when an output schema held, and nothing else. Diagnostics are core's safe
lines, the rest closed words, names from the config and numbers. Every result is bounded in
bytes: an answer past `OUTPUT_MAX_BYTES` is cut with a marker, a fan-out child's past
`FANOUT_OUTPUT_MAX_BYTES`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, Final

from subagent_core import Cost, SessionRecord, SubagentResult, Usage, foreground_text
from subagent_core.kit import BoundedText

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config
from harness._console.exit_codes import UsageError
from harness._registry.agent_listing import agent_rows
from harness._registry.build import provider_settings
from harness.fanout import FanoutResult

from .mcp_options import ServeOptions, ToolError
from .mcp_runs import BackgroundRun, RunOutcome

OUTPUT_MAX_BYTES: Final = 64 * 1024
"""The most of a child's answer a result carries (it is there twice: text and `output`)."""
FANOUT_OUTPUT_MAX_BYTES: Final = 8 * 1024
"""The most of each fan-out child's answer the comparison carries."""
SESSIONS_SHOWN: Final = 200
"""The most recently used sessions `sessions` lists (the rest are counted in its text)."""


def _bounded(text: str, max_bytes: int) -> str:
    kept = BoundedText(max_bytes)
    kept.add(text)
    return kept.text


def usage_fields(usage: Usage | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """`usage` (counts) and `cost` as the results carry them."""
    if usage is None:
        return None, None
    counts = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
    }
    return counts, _cost(usage.cost)


def _cost(cost: Cost | None) -> dict[str, Any] | None:
    return None if cost is None else {"amount": cost.amount, "currency": cost.currency}


def delegate_result(outcome: RunOutcome) -> tuple[dict[str, Any], str, bool]:
    """`(structured content, text, is_error)` of a settled run: the text is the answer, or
    for a run that did not complete the standard words, its diagnostic and partial answer."""
    result = outcome.result
    output = _bounded(result.output, OUTPUT_MAX_BYTES)
    structured_output = result.structured_output
    if len(json.dumps(structured_output, ensure_ascii=False).encode()) > OUTPUT_MAX_BYTES:
        structured_output = None  # too big to carry whole; the (cut) answer still is there
    usage, cost = usage_fields(result.usage)
    session = None
    if outcome.session is not None:
        session = {"name": outcome.session[0], "turn": outcome.session[1]}
    structured = {
        "output": output,
        "structured_output": structured_output,
        "stop_reason": result.stop_reason,
        "diagnostic": result.diagnostic,
        "usage": usage,
        "cost": cost,
        "session": session,
        "files_changed": outcome.files_changed,
        "timed_out": outcome.timed_out,
    }
    completed = result.stop_reason == "completed"
    shown = SubagentResult(
        stop_reason=result.stop_reason, output=output, diagnostic=result.diagnostic
    )
    text = output if completed else foreground_text(shown).text
    if outcome.timed_out:
        text += "\n(the call's timeout_seconds stopped it)"
    return structured, text, not completed


def status_result(record: BackgroundRun) -> dict[str, Any]:
    """`delegate_status` / `delegate_cancel`: the run's closed facts."""
    stop_reason = None
    if record.outcome is not None:
        stop_reason = record.outcome.result.stop_reason
    elif record.refused is not None:
        stop_reason = "error"
    return {"run_id": record.run_id, **record.activity.status(), "stop_reason": stop_reason}


def status_text(status: dict[str, Any]) -> str:
    return f"{status['run_id']}: {status['state']}" + (
        f" ({status['stop_reason']})" if status["stop_reason"] else ""
    )


def result_of(record: BackgroundRun) -> tuple[dict[str, Any], str, bool]:
    """`delegate_result`: the run's facts, with its result once settled.

    Raises:
        ToolError: the run could not go on once it had its slot (its refusal, as for delegate).
    """
    if record.refused is not None:
        raise ToolError(record.refused)
    facts = {"run_id": record.run_id, **record.activity.status()}
    if record.outcome is None:
        pending = {
            "output": "",
            "structured_output": None,
            "stop_reason": None,
            "diagnostic": None,
            "usage": None,
            "cost": None,
            "session": None,
            "files_changed": None,
            "timed_out": False,
        }
        text = f"{record.run_id} is still {facts['state']}: {record.activity.message()}"
        return {**facts, **pending}, text, False
    structured, text, is_error = delegate_result(record.outcome)
    return {**facts, **structured}, text, is_error


def agents_result(options: ServeOptions) -> tuple[dict[str, Any], str]:
    """`agents`: the presets and configured providers, and the built-ins (names, never values).

    Raises:
        ToolError: the config cannot be read.
    """
    try:
        config = load_config(options.config, workspace=options.root)
        try:
            endpoint: ResolvedEndpoint | None = resolve_endpoint(
                config.model, base_url=options.base_url, model=options.model
            )
        except MissingKeyError:
            endpoint = None
    except UsageError as error:
        raise ToolError(str(error)) from None
    agents: list[dict[str, Any]] = []
    for row in agent_rows(config, dict(os.environ)):
        settings = row.settings
        agents.append(
            {
                "name": settings.name,
                "kind": settings.kind,
                "preset": settings.preset,
                "configured": row.configured,
                "builtin": False,
                "found": row.found,
                "credentials": list(settings.credentials),
                "credentials_set": list(row.credentials_set),
                "needs_credential": row.lacks_credential,
                "install": None if row.found else row.install,
            }
        )
    listed = {agent["name"] for agent in agents}
    for settings in provider_settings(config, endpoint):
        if settings.name in listed:
            continue
        builtin = config.provider(settings.name) is None
        agents.append(
            {
                "name": settings.name,
                "kind": settings.kind,
                "preset": settings.preset,
                "configured": not builtin,
                "builtin": builtin,
                "found": True,
                "credentials": list(settings.credentials),
                "credentials_set": [n for n in settings.credentials if os.environ.get(n)],
                "needs_credential": False,
                "install": None,
            }
        )
    lines = [
        f"{agent['name']} ({agent['kind']}): "
        + ("found" if agent["found"] else f"not found; install: {agent['install'] or '?'}")
        + ("; needs a credential" if agent["needs_credential"] else "")
        for agent in agents
    ]
    return {"agents": agents}, "\n".join(lines)


def sessions_result(records: Sequence[SessionRecord]) -> tuple[dict[str, Any], str]:
    """`sessions`: name, agent, workspace and figures (never the child's own session id), the
    `SESSIONS_SHOWN` most recently used."""
    sessions: list[dict[str, Any]] = []
    for record in records[:SESSIONS_SHOWN]:
        usage, cost = usage_fields(record.usage)
        sessions.append(
            {
                "name": record.label or record.handle,
                "agent": record.provider,
                "workspace": record.cwd,
                "turns": record.turns,
                "usage": usage,
                "cost": cost,
                "last_used": record.last_used,
            }
        )
    lines = [f"{s['name']}: {s['agent']}, {s['turns']} turn(s)" for s in sessions]
    if len(records) > SESSIONS_SHOWN:
        lines.append(f"({len(records) - SESSIONS_SHOWN} older sessions not listed)")
    return {"sessions": sessions}, "\n".join(lines) or "no kept sessions"


def fanout_result(
    outcomes: Sequence[FanoutResult], isolation: str
) -> tuple[dict[str, Any], str, bool]:
    """`fanout`: one row per child in the order asked, its patch path, and a plain table."""
    children: list[dict[str, Any]] = []
    lines: list[str] = []
    for outcome in outcomes:
        result = outcome.result
        usage, cost = usage_fields(result.usage)
        verify = _verify_cell(outcome)
        patch = None if outcome.patch is None else str(outcome.patch)
        children.append(
            {
                "number": outcome.number,
                "agent": outcome.agent,
                "stop_reason": result.stop_reason,
                "output": _bounded(result.output, FANOUT_OUTPUT_MAX_BYTES),
                "diagnostic": result.diagnostic,
                "timed_out": outcome.timed_out,
                "wall_seconds": round(outcome.wall_seconds, 3),
                "usage": usage,
                "cost": cost,
                "files_changed": len(outcome.files),
                "lines_added": outcome.lines_added,
                "lines_deleted": outcome.lines_deleted,
                "patch": patch,
                "verify": verify,
                "rank": outcome.rank,
            }
        )
        line = (
            f"#{outcome.number} {outcome.agent}: {result.stop_reason}"
            f"{' (timed out)' if outcome.timed_out else ''}, {outcome.wall_seconds:.1f} s, "
            f"{len(outcome.files)} files +{outcome.lines_added} -{outcome.lines_deleted}"
        )
        if verify is not None:
            line += f", verify {verify}"
        if patch is not None:
            line += f", patch {patch}"
        lines.append(line)
    completed = sum(item.result.stop_reason == "completed" for item in outcomes)
    structured = {
        "isolation": isolation,
        "completed": completed,
        "total": len(outcomes),
        "children": children,
    }
    return structured, "\n".join(lines), completed == 0


def _verify_cell(outcome: FanoutResult) -> str | None:
    """The child's verify outcome in closed words (`pass`, `fail (exit 1)`, …), if it ran."""
    return None if outcome.verify is None else outcome.verify.cell
