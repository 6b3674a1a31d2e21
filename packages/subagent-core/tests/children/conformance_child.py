"""The fake child of the conformance suite's own tests: the shared knobs over a line protocol.

Knobs come as JSON in CONFORMANCE_KNOBS. The parent writes `hello`, the child answers `ready`
(the handshake). Each turn: the parent writes `prompt` (or `prompt <JSON text>`), the child
streams `thought` lines, `tokens N` (the turn's usage: the answer's length), one `chunk` line
with the JSON-encoded answer (`text`, or with `echo_prompt` the prompt), then `done`. With
`hang_at` = `turn` the first turn answers `interrupt` with `aborted` instead of finishing;
later turns finish. An `interrupt` between turns is ignored. Stdin EOF ends it unless
`ignore_eof`.
"""

import json
import os
import signal
import subprocess
import sys
import threading

knobs = json.loads(os.environ.get("CONFORMANCE_KNOBS", "{}"))
if knobs.get("trap_term"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
SLEEPER = [sys.executable, "-c", "import threading; threading.Event().wait()"]


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def at_eof() -> None:
    if knobs.get("ignore_eof"):
        threading.Event().wait()
    os._exit(0)


def lines():
    while True:
        line = sys.stdin.readline()
        if not line:
            at_eof()
        yield line.strip()


incoming = lines()
next(incoming)  # hello
if knobs.get("exit_code") is not None:
    os._exit(int(knobs["exit_code"]))
if knobs.get("hang_at") == "handshake":
    for _ in incoming:
        pass
say("ready")
turn = 0
for line in incoming:
    if not line.startswith("prompt"):
        continue  # a late `interrupt`
    turn += 1
    if turn == 1 and knobs.get("grandchild_holds_stdout"):
        subprocess.Popen(SLEEPER, stdin=subprocess.DEVNULL)
    if turn == 1 and knobs.get("setsid_escapee"):
        subprocess.Popen(
            SLEEPER, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
        )
    for _ in range(int(knobs.get("flood", 0))):
        say("thought x")
    answer = knobs.get("text", "")
    if knobs.get("echo_prompt") and line.startswith("prompt "):
        answer = json.loads(line[7:])
    say(f"tokens {len(answer)}")
    say("chunk " + json.dumps(answer))
    if turn == 1 and knobs.get("hang_at") == "turn":
        for waiting in incoming:
            if waiting == "interrupt":
                say("aborted")
                break
        continue
    say("done")
