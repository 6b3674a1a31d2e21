"""Prints its environment as sorted NAME lines, then exits."""

import os
import sys

sys.stdout.write("".join(f"{name}\n" for name in sorted(os.environ)))
