from __future__ import annotations

import types

import harness


def test_all_lists_exactly_the_public_names() -> None:
    public = sorted(
        name
        for name, value in vars(harness).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    )
    assert harness.__all__ == sorted(harness.__all__)
    assert harness.__all__ == public
