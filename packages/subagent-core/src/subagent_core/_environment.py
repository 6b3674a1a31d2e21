"""The environment a child process gets: the parent's, minus anything credential-shaped.

OpenTelemetry's own settings (`OTEL_*`) are a provider's choice on top (`otel_env`): a child
gets them only when its config passes them through.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import cast

_CREDENTIAL_SHAPED = re.compile(r"KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)
_OTLP_HEADERS = re.compile(r"OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?HEADERS", re.IGNORECASE)
"""`OTEL_EXPORTER_OTLP_HEADERS` and its per-signal forms: they carry the exporter's
credentials (an `authorization` or an API-key header)."""

OTEL_PREFIX = "OTEL_"
"""The OpenTelemetry SDKs' environment variables (the exporter's endpoint, protocol, …)."""


@functools.lru_cache(maxsize=4096)
def is_scrubbed_name(name: str) -> bool:
    """True for names a child never inherits: credential-shaped ones (the OTLP exporter's
    header variables among them) and `DSH_*`.

    Cached: every spawn checks the same few dozen names.
    """
    return (
        bool(_CREDENTIAL_SHAPED.search(name))
        or _OTLP_HEADERS.fullmatch(name) is not None
        or name.upper().startswith("DSH_")
    )


def otel_env(
    passthrough: bool, *, remote: bool = False, parent: Mapping[str, str] | None = None
) -> dict[str, str | None]:
    """This process's OpenTelemetry settings as a child's explicit environment, to lay under
    the config's own `env` (whose entries win).

    With `passthrough`, every `OTEL_*` variable of `parent` (default `os.environ`) that is not
    credential-shaped, so the child's own exporter sends where this process's does, on this
    host or through a placement; the OTLP header variables reach the child only when the
    config's `env` names them. Without it, a local child inherits none of them (each is
    removed), so it never exports to this process's backend by accident; a remote child's own
    environment is left alone.
    """
    source = os.environ if parent is None else parent
    names = [name for name in source if name.startswith(OTEL_PREFIX)]
    if passthrough:
        return {name: source[name] for name in names if not is_scrubbed_name(name)}
    if remote:
        return {}
    return dict.fromkeys(names)


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
    if parent is None:
        env = _inherited()
    else:
        env = {name: value for name, value in parent.items() if not is_scrubbed_name(name)}
    for name, value in explicit.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


_inherited_cache: tuple[dict[object, object], dict[str, str]] | None = None


def _inherited() -> dict[str, str]:
    """A fresh copy of os.environ without the scrubbed names, rebuilt only when it changed.

    Reading os.environ decodes every entry in Python, the largest part of preparing a spawn;
    CPython keeps the encoded entries in one plain dict (`_data`, behind every change made
    through os.environ), and comparing that with a snapshot runs in C.
    """
    global _inherited_cache
    store = cast("object", getattr(os.environ, "_data", None))
    if not isinstance(store, dict):
        return {name: value for name, value in os.environ.items() if not is_scrubbed_name(name)}
    entries = cast("dict[object, object]", store)
    cached = _inherited_cache
    if cached is not None and cached[0] == entries:
        return dict(cached[1])
    before = dict(entries)
    env = {name: value for name, value in os.environ.items() if not is_scrubbed_name(name)}
    if before == entries:  # no other thread changed it meanwhile
        _inherited_cache = (before, env)
    return dict(env)
