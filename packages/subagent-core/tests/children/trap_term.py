"""Ignores stdin EOF and SIGTERM; only SIGKILL ends it."""

import signal
import sys
import threading

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("ready\n")
sys.stdout.flush()
threading.Event().wait()
