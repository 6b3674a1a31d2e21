"""Ignores stdin EOF; dies on SIGTERM as usual."""

import sys
import threading

sys.stdout.write("ready\n")
sys.stdout.flush()
threading.Event().wait()
