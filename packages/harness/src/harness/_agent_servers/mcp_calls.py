"""One `harness mcp` call made ready: its workspace inside the root, its providers, its request.

Everything a call can be refused for is decided here, before a slot is taken or a child
spawned: a workspace outside the server's root (`--workspace`), an unknown agent, a bad
`harness.toml`, a missing credential, a capability the agent lacks, a session of another
agent. The providers are built exactly as `harness delegate` builds them (`_registry`): the
same presets, config file and credential rules, so a child gets its preset's credential
variables and nothing credential-shaped besides. The config is the root's, read for every
call (edits apply without a restart); a `harness.toml` below the root is never read, so a
child that writes one cannot choose what the next call runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from subagent_core import (
    Budget,
    CancelSignal,
    Cost,
    SessionRecord,
    SubagentRegistry,
    SubagentRequest,
)

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config
from harness._config.paths import sessions_root
from harness._config.settings import ModelChildConfig, ProviderSettings
from harness._console.exit_codes import UsageError
from harness._live.kept_sessions import find_session
from harness._registry.build import build_provider, require_provider
from harness._registry.child_stderr import ChildStderrLogs
from harness._registry.overrides import ApproveChoice, ProviderOverrides

from .mcp_options import ServeOptions, ToolError
from .mcp_tools import DelegateArgs


@dataclass(slots=True, kw_only=True)
class Prepared:
    """A call ready to run: one registry (closed after the call) and the request it starts."""

    registry: SubagentRegistry
    agents: tuple[str, ...]
    workspace: Path
    request: SubagentRequest
    session: str | None = None
    kept: SessionRecord | None = None
    """The kept session the call continues (None: a new one, or no session)."""
    timeout_seconds: float | None = None
    cancel: CancelSignal = field(default_factory=CancelSignal)


def resolve_workspace(root: Path, given: str | None, default: Path | None = None) -> Path:
    """The call's workspace: `given` (relative to `root`, or absolute), else `default`, else
    `root`; resolved (symlinks followed) and inside `root`.

    Raises:
        ToolError: outside the root, or not a directory.
    """
    path = default or root
    if given is not None:
        candidate = Path(given).expanduser()
        path = candidate if candidate.is_absolute() else root / candidate
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError):
        raise ToolError("workspace is not a directory inside the server's root") from None
    if not resolved.is_relative_to(root):
        raise ToolError("workspace is outside the server's root (harness mcp --workspace)")
    if not resolved.is_dir():
        raise ToolError("workspace is not a directory inside the server's root")
    return resolved


def prepare_delegate(options: ServeOptions, logs: ChildStderrLogs, args: DelegateArgs) -> Prepared:
    """`delegate` / `delegate_start` made ready (a kept session's workspace by default).

    Raises:
        ToolError: anything the call could be refused for.
    """
    kept = None if args.session is None else find_session(sessions_root(), args.session)
    if kept is not None and kept.provider != args.agent:
        raise ToolError(f'session {args.session} belongs to agent "{kept.provider}"')
    default = Path(kept.cwd) if kept is not None and kept.cwd else None
    workspace = resolve_workspace(options.root, args.workspace, default)
    registry = build_call_registry(options, logs, [args.agent], workspace)
    provider = registry.get(args.agent)
    assert provider is not None
    capabilities = provider.capabilities
    if args.output_schema is not None and not capabilities.output_schema:
        raise ToolError(f'agent "{args.agent}" does not support output_schema')
    if args.session is not None and not (capabilities.sessions and capabilities.resume):
        raise ToolError(f'agent "{args.agent}" cannot keep a session')
    budget = None
    if args.budget_tokens is not None or args.budget_usd is not None:
        cost = None if args.budget_usd is None else Cost(args.budget_usd, "USD")
        budget = Budget(max_tokens=args.budget_tokens, max_cost=cost)
    cancel = CancelSignal()
    request = SubagentRequest(
        prompt=args.prompt,
        cwd=workspace,
        cancel=cancel,
        label=args.session or "mcp",
        output_schema=args.output_schema,
        # As for `delegate`: the parent (the host) may have the child write through us; the
        # provider's permission policy (`--approve`) still gates every write.
        allow_writes=True,
        budget=budget,
    )
    return Prepared(
        registry=registry,
        agents=(args.agent,),
        workspace=workspace,
        request=request,
        session=args.session,
        kept=kept,
        timeout_seconds=args.timeout_seconds,
        cancel=cancel,
    )


def build_call_registry(
    options: ServeOptions, logs: ChildStderrLogs, agents: Sequence[str], workspace: Path
) -> SubagentRegistry:
    """One registry holding `agents` as `harness delegate -a NAME` would build each, with the
    server's `--approve` as their permission.

    Raises:
        ToolError: a bad config, an unknown agent, a missing key or credential, or an agent
            that cannot be held to `--approve`.
    """
    try:
        config = load_config(options.config, workspace=options.root)
        try:
            endpoint: ResolvedEndpoint | None = resolve_endpoint(
                config.model, base_url=options.base_url, model=options.model
            )
        except MissingKeyError:
            endpoint = None
        registry = SubagentRegistry()
        for name in dict.fromkeys(agents):
            settings = require_provider(config, endpoint, name)
            overrides = _overrides(settings, options.approve)
            provider = build_provider(
                settings,
                endpoint=endpoint,
                workspace=workspace,
                overrides=overrides,
                child_stderr=logs,
            )
            registry.register(provider)
    except UsageError as error:
        raise ToolError(str(error)) from None
    except ValueError as error:
        raise ToolError(f"harness.toml: {error}") from None
    return registry


def _overrides(settings: ProviderSettings, approve: ApproveChoice) -> ProviderOverrides | None:
    """`--approve` as this provider's permission; a provider with no permission setting runs
    only when nothing needs gating (`all`, or the in-process agent in its `ask` mode).

    Raises:
        ToolError: the provider could act unasked beyond what `approve` allows.
    """
    config = settings.config
    if isinstance(config, ModelChildConfig):
        if approve == "all" or config.mode == "ask":
            return None
    elif hasattr(config, "permission"):
        return ProviderOverrides(approve=approve)
    elif approve == "all":
        return None
    raise ToolError(
        f'agent "{settings.name}" has no permission setting to hold it to --approve {approve}; '
        "serve with --approve all to use it"
    )
