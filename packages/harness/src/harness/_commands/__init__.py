"""The commands: thin typer modules, each `options → one component call → exit code`.

```
cli.app ──▶ _commands/<command>.py
              @cli_errors                           (_support: UsageError ─▶ one line, exit 2)
              def command(options…):               (its signature and docstring are --help)
                  from <component> import <entry>  (imported here, so `--help` stays light)
                  raise typer.Exit(<entry>(option values))

demo, e2e ─────────────▶ _demo.catalogue        run, delegate, sessions ─▶ _live
fanout ────────────────▶ fanout._command        agents, providers ───────▶ _registry
acp-agent, sdk-runtime, mcp ▶ _agent_servers    fake-* ──▶ the packages' own testing mains
```

`_options` holds the option types several commands share; what a command reads besides its
options (the prompt, a schema file, the workspace) is read by the component it calls.
"""
