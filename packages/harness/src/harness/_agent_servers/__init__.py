"""The agent servers: the harness's faces for other hosts, on stdio.

`harness acp-agent` and `harness sdk-runtime` serve the direct-model agent over ACP and the SDK
protocol (below). `harness mcp` serves delegation itself as MCP tools (`mcp_server`: the SDK's
lowlevel server over `mcp_stdio`; each call checked by `mcp_calls`, run in a slot by `mcp_runs`
with `_live`'s kept sessions and `fanout`'s `run_fanout`, reported by `mcp_activity` and
`mcp_results`), which is why this folder sits above `_live` and `fanout`.

`harness acp-agent` and `harness sdk-runtime` serve the same agent (`model_agent`) to a client
on stdio; each client session is a conversation that survives restarts. One prompt's path:

```
client ─stdin─▶ acp_stdio (SDK transport, bounded lines: stdin_lines)   sdk_server (wire)
                   │                                                         │
                   ▼                                                         ▼
               acp_server (sessions, modes, config, prompt) ──┐     SDKRuntime (sessions)
                   │  acp_mcp: the client's MCP servers        │         │
                   ▼                                           ▼         ▼
               conversation (one turn of the stored conversation: model_agent.Agent.run)
                   │ agent events                              │
                   ▼                                           ▼
               acp_tool_calls (events → tool calls, approvals)  sdk_server (events → wire)
               acp_updates (ordered, merged session/update queue)
                   │                                           │
client ◀─stdout────┘                                           └──stdout──▶ client
               conversation_store: stored conversations on disk under the state directory
               tool_views: what a tool call looks like (kind, title, paths, diff, bounds)
               host_logging: the servers' host logs and state directory (prepare_server)
```

Names: here an *agent* is the protocol role (ACP's "agent" is the server an editor drives);
what it runs is the *direct-model agent*. A *session* is the protocol's (`session/new`, the
SDK's sessions), and what a session keeps is its *stored conversation*
(`conversation_store.StoredSession`), unlike `delegate --session NAME`'s kept sessions
(`_live.kept_sessions`). `import acp` happens only when `harness acp-agent` runs (the CLI
imports these modules lazily).
"""
