"""The `harness` command line.

Every command lives in its own module under `_commands/` and imports its heavy dependencies
(`acp`, `httpx`, model-agent, the providers) inside its body, so `harness --help` stays fast.
Exit codes: 0 success, 1 a run that did not complete, 2 a usage or configuration error,
130 interrupted (Ctrl-C). Usage errors print one `harness: …` line, never a traceback.
"""

from __future__ import annotations

import sys

import typer

from ._commands import (
    acp_agent,
    agents,
    delegate,
    demo,
    e2e,
    fakes,
    fanout,
    mcp,
    providers,
    run,
    sdk_runtime,
    sessions,
)
from ._commands._options import VersionOption, print_version
from ._console.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE
from ._console.telemetry import start_telemetry

PROG_NAME = "harness"

app = typer.Typer(
    name=PROG_NAME,
    help=(
        "Run the direct-model agent, delegate work to child agents over ACP, the SDK protocol "
        "or in-process, and serve the agent to other hosts.\n\n"
        "Start with `harness demo` (no API key needed). Exit codes: 0 success, 1 a run that "
        "did not complete, 2 a usage or configuration error, 130 interrupted."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(version: VersionOption = False) -> None:
    """Options before the command name."""


app.command("demo")(demo.demo)
app.command("run")(run.run)
app.command("delegate")(delegate.delegate)
app.add_typer(fanout.fanout_app)
app.command("acp-agent")(acp_agent.acp_agent)
app.command("sdk-runtime")(sdk_runtime.sdk_runtime)
app.command("mcp")(mcp.mcp)
app.command("fake-acp-child", context_settings=fakes.PASSTHROUGH_SETTINGS)(fakes.fake_acp_child)
app.command("fake-sdk-runtime", context_settings=fakes.PASSTHROUGH_SETTINGS)(fakes.fake_sdk_runtime)
app.command("fake-model", context_settings=fakes.PASSTHROUGH_SETTINGS)(fakes.fake_model)
app.command("e2e")(e2e.e2e)
app.command("providers")(providers.providers)
app.command("agents")(agents.agents)
app.add_typer(sessions.sessions_app)


def _asks_version(args: list[str]) -> bool:
    """`--version` given anywhere before a `--` (every subcommand, the fakes included)."""
    head = args[: args.index("--")] if "--" in args else args
    return "--version" in head


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: maps every outcome to the README's exit codes."""
    args = (sys.argv[1:] if argv is None else argv) or ["--help"]
    stop_telemetry = start_telemetry()
    try:
        if _asks_version(args):
            print_version(True)
        code = app(args=args, prog_name=PROG_NAME, standalone_mode=False)
    except typer.Exit as exit_:
        code = exit_.exit_code
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write(f"{PROG_NAME}: interrupted\n")
        code = EXIT_INTERRUPTED
    except Exception as error:
        # A usage error from the parser (bad option, bad choice): one line, then where to look.
        show = getattr(error, "format_message", None)
        if not callable(show):
            raise
        # typer words a bad choice as "Value error, 'x' is not one of …": keep the plain part.
        message = str(show()).replace("Value error, ", "")
        sys.stderr.write(f"{PROG_NAME}: {message}\n")
        ctx = getattr(error, "ctx", None)
        path = getattr(ctx, "command_path", PROG_NAME)
        sys.stderr.write(f"Try '{path} --help' for help.\n")
        code = EXIT_USAGE
    finally:
        if stop_telemetry is not None:
            stop_telemetry()
    sys.exit(code if isinstance(code, int) else 0)
