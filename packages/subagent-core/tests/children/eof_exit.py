"""Exits 0 as soon as stdin reaches EOF."""

import sys

sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.read()
