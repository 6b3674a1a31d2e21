"""The demo and end-to-end scenario catalogue, kept apart from the servers and commands.

```
scenario   what a row is: a body, its expectation, its context (workspace, model, graces)
   ▲
kit        this harness as a child (acp-agent, sdk-runtime, the fakes), one run, side effects
   ▲
bodies, keyed   each scenario's body (the keyless demo and failures; the real-model rows)
   ▲
catalogue  the lists `harness demo` / `harness e2e` run ─▶ runner (live progress, the table)
```

Imports point one way: `runner` builds only on `scenario`. Nothing here is imported by the
package's top level, so `harness --help` never loads a provider.
"""
