"""The fake child of the conformance suite's own tests: the shared knobs over a line protocol.

Knobs come as JSON in CONFORMANCE_KNOBS. The parent writes `hello`, the child answers `ready`
(the handshake); the parent writes `prompt`, the child streams `thought` lines, one `chunk` line
with the JSON-encoded text, then `done` (the turn). With `hang_at` = `turn` it answers
`interrupt` with `aborted` instead of finishing. Stdin EOF ends it unless `ignore_eof`.
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
next(incoming)  # prompt
if knobs.get("grandchild_holds_stdout"):
    subprocess.Popen(SLEEPER, stdin=subprocess.DEVNULL)
if knobs.get("setsid_escapee"):
    subprocess.Popen(
        SLEEPER, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
for _ in range(int(knobs.get("flood", 0))):
    say("thought x")
say("chunk " + json.dumps(knobs.get("text", "")))
if knobs.get("hang_at") == "turn":
    for line in incoming:
        if line == "interrupt":
            say("aborted")
say("done")
for _ in incoming:
    pass
