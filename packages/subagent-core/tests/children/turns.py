"""A line-protocol child for the lifecycle tests: a handshake, then one turn per prompt line.

stdin: `hello` → `ready`; `P <text>` → `chunk <text>` then `done`; `P hang` → nothing until
`interrupt`, then `interrupted`; `P die` → exit 7 mid-turn; `P usage…` → `tokens 5`, then
`chunk …` and `done` (`P usage then hang`: `tokens 5`, then nothing until `interrupt`).
argv: `exit-at-hello N` exits with N instead of answering the handshake; `silent` never answers it.
With `TURNS_SESSION_ID_FILE` naming a file, the handshake answer is `ready <its text>` (a
child-chosen session id, hostile as the file makes it).
"""

import os
import sys

args = sys.argv[1:]


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


for raw in sys.stdin:
    line = raw.rstrip("\n")
    if line == "hello":
        if args[:1] == ["exit-at-hello"]:
            sys.exit(int(args[1]))
        if args[:1] == ["silent"]:
            continue
        path = os.environ.get("TURNS_SESSION_ID_FILE")
        if path is None:
            say("ready")
        else:
            with open(path, encoding="utf-8") as file:
                say("ready " + file.read())
    elif line == "interrupt":
        say("interrupted")
    elif line.startswith("P "):
        text = line[2:]
        if text == "hang":
            continue
        if text == "die":
            say("chunk dying")
            sys.exit(7)
        if text.startswith("usage"):
            say("tokens 5")
            if text == "usage then hang":
                continue
        say(f"chunk {text}")
        say("done")
