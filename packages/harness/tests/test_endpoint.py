"""Which endpoint a command uses, and when the API key is required."""

from __future__ import annotations

import pytest
from harness import ModelSettings
from harness._config.endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from harness._console.exit_codes import UsageError


def test_the_real_api_needs_the_key() -> None:
    with pytest.raises(MissingKeyError) as caught:
        resolve_endpoint(ModelSettings(), environ={})
    assert "DEEPSEEK_API_KEY" in str(caught.value)


def test_without_require_key_the_real_api_resolves_keyless() -> None:
    """`harness acp-agent` starts without a key and asks its client to authenticate."""
    settings = ModelSettings(max_tokens=123)
    endpoint = resolve_endpoint(settings, model="m", environ={}, require_key=False)
    assert endpoint == ResolvedEndpoint(
        base_url=settings.base_url, model="m", api_key=None, max_tokens=123
    )
    with pytest.raises(UsageError):
        resolve_endpoint(settings, base_url="ftp://x", environ={}, require_key=False)


def test_flags_win_over_environment_over_file() -> None:
    settings = ModelSettings(base_url="http://file", model="file-model")
    env = {"DEEPSEEK_BASE_URL": "http://env", "DEEPSEEK_MODEL": "env-model"}
    assert resolve_endpoint(settings, environ=env) == ResolvedEndpoint(
        base_url="http://env", model="env-model", api_key=None
    )
    assert resolve_endpoint(
        settings, base_url="http://flag", model="flag-model", environ=env
    ) == ResolvedEndpoint(base_url="http://flag", model="flag-model", api_key=None)
    assert resolve_endpoint(settings, environ={}).base_url == "http://file"


def test_the_key_never_shows_in_repr() -> None:
    endpoint = resolve_endpoint(ModelSettings(), environ={"DEEPSEEK_API_KEY": "sk-secret"})
    assert endpoint.api_key == "sk-secret"
    assert "sk-secret" not in repr(endpoint)
