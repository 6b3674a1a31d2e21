"""Daemonises by the book (fork, setsid, fork), prints the daemon's pid and exits.

argv[1] == "close": the daemon closes stdout after printing; "hold": it keeps stdout open.
argv[2] == "clear-env": first re-executes itself with an empty environment (`env -i`).
"""

import os
import signal
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "hold"
if len(sys.argv) > 2 and sys.argv[2] == "clear-env":
    os.execve("/usr/bin/env", ["env", "-i", sys.executable, __file__, mode, "env-cleared"], {})
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        sys.stdout.write(f"{os.getpid()} {len(os.environ)}\n")
        sys.stdout.flush()
        if mode == "close":
            os.close(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        while True:
            signal.pause()
    os._exit(0)
os.wait()
os._exit(0)
