"""Starts a grandchild that inherits stdout (optionally in its own session), then exits on EOF.

argv[1] == "setsid": the grandchild calls setsid, leaving the process group.
"""

import os
import subprocess
import sys

setsid = len(sys.argv) > 1 and sys.argv[1] == "setsid"
grandchild = subprocess.Popen(
    [
        sys.executable,
        "-c",
        "import signal, threading; signal.signal(signal.SIGTERM, signal.SIG_IGN); threading.Event().wait()",
    ],
    start_new_session=setsid,
)
sys.stdout.write(f"{grandchild.pid}\n")
sys.stdout.flush()
sys.stdin.read()
os._exit(0)
