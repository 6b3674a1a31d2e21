"""Starts a `setsid` grandchild that ignores SIGTERM and holds stdout, prints its pid, exits."""

import os
import signal
import sys

if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stdout.write(f"{os.getpid()}\n")
    sys.stdout.flush()
    while True:
        signal.pause()
os._exit(3)
