"""The registry: settings become providers here, and only here are provider packages imported.

```
_config: HarnessConfig, ProviderSettings (each carrying its provider's config)
   │
   ▼
build ────────── builtin_providers, provider_settings, find_provider / require_provider (-a NAME)
   │  build_provider: the config + this command's facts ─▶ ACPProvider / SDKProvider /
   │     ClaudeProvider / CodexProvider / model_provider (model_agent_config: AgentConfig)
   │       placement: ssh remote or Ray cluster     child_stderr: one log dir per command
   │       overrides: --approve, --startup-timeout, --idle-timeout on the built config
   ▼
SubagentRegistry ──▶ _live (delegate, run), fanout, _demo

agent_listing (`harness agents`)     the agents by name and the tables: found, version, keys
provider_check (`harness providers`) start each provider once: initialize (+ session/new)
native: whether subagent-claude / subagent-codex can be imported (a trimmed install)
```

"Agent" means three things in this package; here it is an *agent by name* (a preset such as
`claude` or `gemini`, `_config.presets`), which `harness agents` lists. The *direct-model
agent* is model-agent's `Agent` (`model_agent_config` builds its config; `_live.model_run` runs
it), and an *ACP agent* is the server role of `harness acp-agent` (`_agent_servers`).
"""
