"""The machine a run happened on: cores, memory, CPU, Python, load."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path


def _proc_field(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text("utf-8").splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key:
                return value.strip()
    except OSError:
        return None
    return None


def load_average() -> str:
    if sys.platform == "win32":
        return "unknown"  # a Unix figure: Windows keeps no load average
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min)"


def describe() -> list[tuple[str, str]]:
    memory = _proc_field("/proc/meminfo", "MemTotal")
    if memory is not None and memory.endswith(" kB"):
        memory = f"{int(memory[:-3]) / 1024 / 1024:.1f} GiB"
    return [
        ("CPU", _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown"),
        ("cores (os.cpu_count)", str(os.cpu_count())),
        ("memory", memory or "unknown"),
        ("OS", platform.platform()),
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
    ]
