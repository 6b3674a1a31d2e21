"""The config: `harness.toml`, the built-ins and the agents by name as typed, frozen settings.

```
--config PATH / <workspace>/harness.toml / user config dir ──▶ loading.load_config
    [model] ────────────────▶ settings.ModelSettings ──▶ endpoint.resolve_endpoint
                                 (flags over DEEPSEEK_* over the file; the key from the env)
    [providers.<name>] ─────▶ provider_tables ──▶ settings.ProviderSettings
        preset = "…" ──▶ presets (the agents by name)     where it runs ──▶ placement
        the provider's keys ──▶ its own frozen config (ACPConfig, SDKConfig, …), checked once
    [mcp.<name>] ───────────▶ settings.MCPServerSettings
    every refusal ──▶ toml_values.ConfigError "harness.toml: <table>.<key>: <problem>"

paths: the state directory (sessions/, child-stderr/, fanout/) and the workspace
```

Nothing here starts a process or builds a provider (`_registry` does); the provider packages'
configs are imported only when a table of their kind is read.
"""
