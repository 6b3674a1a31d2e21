"""Writes "ready", then floods stdout forever; ignores stdin EOF (SIGTERM ends it)."""

import sys

out = sys.stdout.buffer
out.write(b"ready\n")
out.flush()
chunk = b"x" * 65536
while True:
    out.write(chunk)
    out.flush()
