"""The environment a child process gets: the parent's, minus anything credential-shaped."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

_CREDENTIAL_SHAPED = re.compile(r"KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def is_scrubbed_name(name: str) -> bool:
    """True for names a child never inherits: credential-shaped ones and `DSH_*`.

    Cached: every spawn checks the same few dozen names.
    """
    return bool(_CREDENTIAL_SHAPED.search(name)) or name.upper().startswith("DSH_")


def child_env(
    explicit: Mapping[str, str | None],
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Builds a child's environment.

    Inherited names matching `KEY|PASSWORD|SECRET|TOKEN` (any case, anywhere) or starting with
    `DSH_` are dropped, so the parent's own secrets never leak by accident. Explicit entries are
    laid over the rest and always win, even credential-shaped ones: that is how a child is given
    its own key. An explicit `None` removes an inherited entry.
    """
    # A plain copy of os.environ first: it decodes each entry once, faster than iterating it.
    source = dict(os.environ) if parent is None else parent
    env = {name: value for name, value in source.items() if not is_scrubbed_name(name)}
    for name, value in explicit.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
