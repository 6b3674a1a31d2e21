"""The `harness` command line.

Every command lives in its own module under `_commands/` and imports its heavy dependencies
(`acp`, `httpx`, model-agent, the providers) inside its body, so `harness --help` stays fast.
Exit codes: 0 success, 1 a run that did not complete, 2 a usage or configuration error.
"""

from __future__ import annotations

import typer

from ._commands import (
    acp_agent,
    delegate,
    demo,
    e2e,
    fakes,
    providers,
    run,
    sdk_runtime,
)

app = typer.Typer(
    name="harness",
    help=(
        "Run the direct-model agent, delegate work to child agents over ACP, the SDK protocol "
        "or in-process, and serve the agent to other hosts.\n\n"
        "Start with `harness demo` (no API key needed). Exit codes: 0 success, 1 a run that "
        "did not complete, 2 a usage or configuration error."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)

app.command("demo")(demo.demo)
app.command("run")(run.run)
app.command("delegate")(delegate.delegate)
app.command("acp-agent")(acp_agent.acp_agent)
app.command("sdk-runtime")(sdk_runtime.sdk_runtime)
app.command("fake-acp-child", context_settings=fakes.PASSTHROUGH_SETTINGS)(fakes.fake_acp_child)
app.command("fake-sdk-runtime", context_settings=fakes.PASSTHROUGH_SETTINGS)(fakes.fake_sdk_runtime)
app.command("fake-model", context_settings=fakes.PASSTHROUGH_SETTINGS)(fakes.fake_model)
app.command("e2e")(e2e.e2e)
app.command("providers")(providers.providers)


def main() -> None:
    """Console-script entry point."""
    app()
