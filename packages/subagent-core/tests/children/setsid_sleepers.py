"""Starts N `setsid` sleepers (default 50), prints their pids on one line, then exits."""

import os
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 50
pids = [
    os.posix_spawn("/bin/sleep", ["sleep", "1000"], dict(os.environ), setsid=True)
    for _ in range(count)
]
sys.stdout.write(" ".join(map(str, pids)) + "\n")
sys.stdout.flush()
os._exit(0)
