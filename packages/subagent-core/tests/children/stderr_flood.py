"""Writes argv[1] bytes to stderr, then "done" to stdout, then exits on stdin EOF.

Without a reader on a piped stderr it blocks once the pipe buffer (about 64 KiB) is full.
"""

import sys

total = int(sys.argv[1])
err = sys.stderr.buffer
chunk = b"e" * 4096
sent = 0
while sent < total:
    piece = chunk[: total - sent]
    err.write(piece)
    sent += len(piece)
err.flush()
sys.stdout.write("done\n")
sys.stdout.flush()
sys.stdin.read()
