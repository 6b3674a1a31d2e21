"""Ignores EOF and SIGTERM and starts a `setsid` sleeper and a double-forked daemon first.

Prints "<own pid> <sleeper pid> <daemon pid>" once all three exist.
"""

import os
import signal
import sys

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sleeper = os.posix_spawn("/bin/sleep", ["sleep", "1000"], dict(os.environ), setsid=True)
read_end, write_end = os.pipe()
if os.fork() == 0:
    os.setsid()
    daemon = os.fork()
    if daemon == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            signal.pause()
    os.write(write_end, f"{daemon}".encode())
    os._exit(0)
os.wait()
os.close(write_end)
daemon_pid = int(os.read(read_end, 64))
sys.stdout.write(f"{os.getpid()} {sleeper} {daemon_pid}\n")
sys.stdout.flush()
while True:
    signal.pause()
