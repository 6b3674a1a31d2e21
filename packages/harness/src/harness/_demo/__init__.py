"""The demo and end-to-end scenario catalogue, kept apart from the servers and commands.

Imports point one way: `scenario` (what a row is) ← `kit` (this harness as a child, one run,
side-effect checks) ← `bodies`, `keyed` ← `catalogue` (the lists `harness demo` and
`harness e2e` run); `runner` builds only on `scenario`. Nothing here is imported by the
package's top level, so `harness --help` never loads a provider.
"""
