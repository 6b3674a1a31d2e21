"""The console: how every command talks to the person (or script) at the other end.

Nothing here knows a provider, a config file or a run; every other component builds on it.

```
argv, stdin ──▶ inputs: PROMPT (or `-`: stdin), --output-schema FILE ──▶ values or UsageError
Ctrl-C, SIGTERM ──▶ signals: a CancelSignal fired; 128 + N as the exit code
child / model text ──▶ screen (control codes stripped) ──▶ views, terminal_prompt "[y/N]"
run events, results ──▶ ndjson: one JSON object per line on stdout (`--json`)
Usage, Cost ──▶ usage: "tokens: … ; cost: …" and their JSON records
tables ──▶ consoles: rich, wrapped and coloured only on a terminal
SubagentStartError ──▶ start_failure: closed reason ──▶ a hint a person can act on
every command ──▶ exit_codes: 0 / 1 / 2 / 130, UsageError (one line, exit 2)
OTEL_* variables ──▶ telemetry: spans exported over OTLP (the [otel] extra), flushed at exit
```
"""
