"""`harness fake-acp-child`, `fake-sdk-runtime`, `fake-model`: the packages' scripted fakes."""

from __future__ import annotations

from typing import Any

import typer

_PASSTHROUGH: dict[str, Any] = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
}
"""Every argument but `--help`/`--version` goes to the fake unchanged."""


def fake_acp_child(ctx: typer.Context) -> None:
    """Run the scripted ACP fake child (subagent_acp.testing) on stdio.

    Every argument is passed to it unchanged; its scenario comes from its environment or a
    JSON script (see the subagent-acp README). Point your own ACP client at
    `harness fake-acp-child` to test how it handles misbehaving agents.
    """
    from subagent_acp.testing import main

    raise typer.Exit(main(list(ctx.args)) or 0)


def fake_sdk_runtime(ctx: typer.Context) -> None:
    """Run the scripted SDK fake runtime (subagent_sdk.testing) on stdio.

    Every argument is passed to it unchanged (see the subagent-sdk README for scenarios).
    """
    from subagent_sdk.testing import main

    raise typer.Exit(main(list(ctx.args)) or 0)


def fake_model(ctx: typer.Context) -> None:
    """Serve the scripted OpenAI-compatible model (model_agent.testing) on 127.0.0.1.

    Every argument is passed to it unchanged (see the model-agent README): it prints the base
    URL to use with `harness run --base-url` and serves until interrupted.
    """
    from model_agent.testing import main

    raise typer.Exit(main(list(ctx.args)) or 0)


PASSTHROUGH_SETTINGS = _PASSTHROUGH
