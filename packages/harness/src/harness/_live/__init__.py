"""Live runs: one run streamed to the terminal, `harness run` and `harness delegate`.

```
harness run PROMPT ──▶ model_run: the direct-model agent (model_agent.Agent) in this process
                         answer ─▶ stdout as it streams; tools, children, summary ─▶ stderr

harness delegate PROMPT -a NAME ──▶ delegation
    _registry.require_provider + build_registry ──▶ one child through the registry
    --session NAME ──▶ kept_sessions: open or cold-resume the kept session, one turn
    events ──▶ delegate_view (live / plain / NDJSON)      result ─▶ stdout, the rest ─▶ stderr

harness sessions [close | prune] ──▶ kept_sessions (+ kept_sessions_view: the table / NDJSON)
```

"Session" means three things in this package. Here it is a *kept session*: the child
conversation `delegate --session NAME` keeps between calls (core's `SubagentSession`, its
record under the state directory's `sessions/`). The agent servers' sessions are the protocol's
(ACP `session/new`, the SDK's sessions), persisted as *stored conversations*
(`_agent_servers.conversation_store`). And `harness run` is one *run* of the direct-model
agent (`model_run`), not a session at all.
"""
