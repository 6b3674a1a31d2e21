"""Causes of missed targets, as found by profiling (`python bench/profile.py CASE`).

Keyed by the ratio's label in the report; quoted in results.md only when that target is missed
in the run being written.
"""

from __future__ import annotations

FINDINGS: dict[str, str] = {}
