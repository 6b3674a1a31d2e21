"""Spawning an ACP child and opening the SDK connection over its pipes.

A cold child is spawned by the kit (`ChildSession`) from `ACPChild.command()`, its `stderr`
and `ACPConfig.teardown`; the warm pool (`_pool`) spawns with the same three here, so a
pre-spawned child is the same child a cold run would have started. Both paths open the SDK
connection and advertise the client capabilities through this module.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

from acp.schema import ClientCapabilities
from subagent_core.kit import ChildPipes, ManagedProcess, open_managed_process

from ._bridge import Session, client_capabilities
from ._config import ACPConfig


def open_child(config: ACPConfig, cwd: Path) -> AbstractAsyncContextManager[ManagedProcess]:
    """Spawns the agent for `cwd` with piped stdio and `config`'s disposal graces.

    The warm pool's spawn, with what the kit spawns a cold child with, so a pre-spawned child
    is the same child a cold run would have started. Its stderr is drained for the child's whole
    life as `config.child_stderr` says (a bounded log, or dropped), never inherited.
    """
    return open_managed_process(
        config.child_command(cwd), stderr=config.child_stderr, teardown=config.teardown
    )


def open_session(proc: ManagedProcess, config: ACPConfig) -> Session:
    """The SDK connection over a freshly spawned child's pipes."""
    return Session(ChildPipes.of(proc, config))


def capabilities_for(config: ACPConfig) -> ClientCapabilities:
    """The client capabilities `initialize` advertises for `config` (fixed at spawn)."""
    return client_capabilities(
        read=config.fs != "none", write=config.fs == "read-write", terminal=config.terminal
    )
