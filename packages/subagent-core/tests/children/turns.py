"""A line-protocol child for the lifecycle tests: a handshake, then one turn per prompt line.

stdin: `hello` → `ready`; `P <text>` → `chunk <text>` then `done`; `P hang` → nothing until
`interrupt`, then `interrupted`; `P die` → exit 7 mid-turn; `P usage` → `tokens 5` then `done`.
argv: `exit-at-hello N` exits with N instead of answering the handshake; `silent` never answers it.
"""

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
        say("ready")
    elif line == "interrupt":
        say("interrupted")
    elif line.startswith("P "):
        text = line[2:]
        if text == "hang":
            continue
        if text == "die":
            say("chunk dying")
            sys.exit(7)
        if text == "usage":
            say("tokens 5")
        say(f"chunk {text}")
        say("done")
