"""The harness's agent servers: the direct-model agent served over ACP and the SDK protocol.

`harness acp-agent` and `harness sdk-runtime` serve the same agent (`model_agent`) to a client
on stdio; sessions are conversations that survive restarts. One prompt's path:

```
client ─stdin─▶ acp_stdio (SDK transport, bounded lines: stdin_lines)   sdk_server (wire)
                   │                                                         │
                   ▼                                                         ▼
               acp_server (sessions, modes, config, prompt) ──┐     SDKRuntime (sessions)
                   │  acp_mcp: the client's MCP servers        │         │
                   ▼                                           ▼         ▼
               conversation (one turn of the stored history: model_agent.Agent.run)
                   │ agent events                              │
                   ▼                                           ▼
               acp_tool_calls (events → tool calls, approvals)  sdk_server (events → wire)
               acp_updates (ordered, merged session/update queue)
                   │                                           │
client ◀─stdout────┘                                           └──stdout──▶ client
               session_store: sessions on disk under the state directory
               tool_views: what a tool call looks like (kind, title, paths, diff, bounds)
               options, host_logging: the two commands' shared flags and host logs
```

`import acp` happens only when `harness acp-agent` runs (the CLI imports these modules lazily).
"""
