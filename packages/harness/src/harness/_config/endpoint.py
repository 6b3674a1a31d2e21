"""Which model endpoint a command talks to: flags over environment over harness.toml."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from harness._console.exit_codes import UsageError

from .settings import API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL, MODEL_ENV, ModelSettings


class MissingKeyError(UsageError):
    """The real DeepSeek endpoint was chosen but `DEEPSEEK_API_KEY` is not set."""

    def __init__(self) -> None:
        super().__init__(
            f"{API_KEY_ENV} is not set. Set it to your DeepSeek API key "
            f"(export {API_KEY_ENV}=sk-...), or point --base-url (or {BASE_URL_ENV}) at an "
            "OpenAI-compatible server that needs no key."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedEndpoint:
    """A concrete endpoint; converted to model-agent's `ModelEndpoint` only when a run starts."""

    base_url: str
    model: str
    api_key: str | None
    max_tokens: int | None = None
    retry_statuses: tuple[int, ...] = ()

    def __repr__(self) -> str:
        # Never show the key, even in a debug print.
        return f"ResolvedEndpoint(base_url={self.base_url!r}, model={self.model!r})"


def resolve_endpoint(
    settings: ModelSettings,
    *,
    base_url: str | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
    require_key: bool = True,
) -> ResolvedEndpoint:
    """Flags win, then `DEEPSEEK_BASE_URL` / `DEEPSEEK_MODEL`, then the file.

    `require_key=False` returns the endpoint even without a key (`api_key` is then None):
    `harness acp-agent` starts that way and asks its client to authenticate.

    Raises:
        MissingKeyError: the endpoint is the real DeepSeek API, no key is set and
            `require_key` is true. Other endpoints (a local server, the scripted model) may
            run without a key.
        UsageError: the base URL is not an http(s) URL with a host.
    """
    env = os.environ if environ is None else environ
    url = base_url or env.get(BASE_URL_ENV) or settings.base_url
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UsageError(f"the base URL must be an http:// or https:// URL with a host: {url!r}")
    name = model or env.get(MODEL_ENV) or settings.model
    key = env.get(API_KEY_ENV) or None
    if require_key and key is None and url.rstrip("/") == DEFAULT_BASE_URL:
        raise MissingKeyError
    return ResolvedEndpoint(
        base_url=url,
        model=name,
        api_key=key,
        max_tokens=settings.max_tokens,
        retry_statuses=settings.retry_statuses,
    )
