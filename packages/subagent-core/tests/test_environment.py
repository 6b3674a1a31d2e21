"""child_env: credential-shaped and DSH_* names are never inherited; explicit entries win.
otel_env: a child gets this process's OTEL_* settings only when its config passes them."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from subagent_core import child_env
from subagent_core.kit import otel_env


@pytest.mark.parametrize(
    "name",
    [
        "API_KEY",
        "openai_api_key",
        "KEYRING_BACKEND",
        "MonKeY",
        "DB_PASSWORD",
        "password_file",
        "MySecret",
        "SECRET",
        "GITHUB_TOKEN",
        "tokenizer_path",
        "DSH_ENDPOINT",
        "dsh_mode",
        "Dsh_X",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
        "otel_exporter_otlp_metrics_headers",
    ],
)
def test_credential_shaped_and_dsh_names_are_dropped(name: str) -> None:
    assert child_env({}, {name: "value", "PATH": "/bin"}) == {"PATH": "/bin"}


SURVIVORS = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8",
    "LANGUAGE": "en",
    "HTTP_PROXY": "http://proxy:3128",
    "https_proxy": "http://proxy:3128",
    "ALL_PROXY": "socks5://proxy",
    "NO_PROXY": "localhost",
    "TERM": "xterm",
    "X_DSH_Y": "dsh not at the start",
    "DSHX": "no underscore",
}


def test_path_home_locale_and_proxy_survive() -> None:
    parent = {**SURVIVORS, "AWS_SECRET_ACCESS_KEY": "s", "DSH_API": "d"}
    assert child_env({}, parent) == SURVIVORS


def test_explicit_values_win_even_credential_shaped() -> None:
    parent = {"PATH": "/bin", "API_KEY": "parent", "DSH_URL": "parent", "LANG": "C"}
    explicit = {"API_KEY": "child", "DSH_URL": "http://child", "LANG": "C.UTF-8", "NEW": "1"}
    assert child_env(explicit, parent) == {
        "PATH": "/bin",
        "API_KEY": "child",
        "DSH_URL": "http://child",
        "LANG": "C.UTF-8",
        "NEW": "1",
    }


def test_explicit_none_removes_an_inherited_entry() -> None:
    parent = {"PATH": "/bin", "HOME": "/root", "LANG": "C"}
    assert child_env({"HOME": None, "ABSENT": None, "API_KEY": None}, parent) == {
        "PATH": "/bin",
        "LANG": "C",
    }


def test_the_parent_is_left_untouched() -> None:
    parent = {"PATH": "/bin", "TOKEN": "t"}
    child_env({"PATH": None}, parent)
    assert parent == {"PATH": "/bin", "TOKEN": "t"}


def test_the_default_parent_is_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBAGENT_CORE_TEST_TOKEN", "secret")
    monkeypatch.setenv("SUBAGENT_CORE_TEST_PLAIN", "plain")
    env = child_env({})
    assert "SUBAGENT_CORE_TEST_TOKEN" not in env
    assert env["SUBAGENT_CORE_TEST_PLAIN"] == "plain"
    assert env.get("PATH") == os.environ.get("PATH")


def test_the_default_parent_follows_every_change_to_os_environ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scrubbed copy is cached between spawns; a change through os.environ still shows."""
    monkeypatch.setenv("SUBAGENT_CORE_TEST_PLAIN", "one")
    first = child_env({})
    assert first["SUBAGENT_CORE_TEST_PLAIN"] == "one"
    first["SUBAGENT_CORE_TEST_ADDED"] = "mine"  # a caller's copy, never the cache
    monkeypatch.setenv("SUBAGENT_CORE_TEST_PLAIN", "two")
    second = child_env({})
    assert second["SUBAGENT_CORE_TEST_PLAIN"] == "two"
    assert "SUBAGENT_CORE_TEST_ADDED" not in second
    monkeypatch.delenv("SUBAGENT_CORE_TEST_PLAIN")
    assert "SUBAGENT_CORE_TEST_PLAIN" not in child_env({})


_WORDS = ("KEY", "PASSWORD", "SECRET", "TOKEN")
_names = st.text(alphabet="ABCDEKYPSWORTNabcdekypsortn_0123", min_size=1, max_size=16)
_scrubby = st.builds(
    lambda pre, word, post: pre + word + post,
    _names | st.just(""),
    st.sampled_from([*_WORDS, "key", "Password", "sEcReT", "token", "DSH_", "dsh_"]),
    _names | st.just(""),
)


def _credential_shaped(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in _WORDS) or upper.startswith("DSH_")


@given(
    st.dictionaries(_names | _scrubby, st.text(max_size=8), max_size=12),
    st.dictionaries(_names | _scrubby, st.none() | st.text(max_size=8), max_size=6),
)
def test_the_result_is_scrubbed_parent_overlaid_by_explicit(
    parent: dict[str, str], explicit: dict[str, str | None]
) -> None:
    env = child_env(explicit, parent)
    for name, value in explicit.items():
        if value is None:
            assert name not in env
        else:
            assert env[name] == value
    for name, value in env.items():
        if name not in explicit:
            assert not _credential_shaped(name)
            assert parent[name] == value
    for name, value in parent.items():
        if name not in explicit and not _credential_shaped(name):
            assert env[name] == value


OTEL = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
    "OTEL_SERVICE_NAME": "parent",
    "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer parent",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-api=parent",
    "OTEL_EXPORTER_OTLP_CLIENT_KEY": "/keys/client.pem",
}


def test_passed_through_otel_settings_leave_the_credential_shaped_ones_out() -> None:
    assert otel_env(True, parent={**OTEL, "PATH": "/bin"}) == {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
        "OTEL_SERVICE_NAME": "parent",
    }
    assert otel_env(True, remote=True, parent=OTEL) == otel_env(True, parent=OTEL)


def test_otel_settings_not_passed_are_removed_from_a_local_child_only() -> None:
    removed = otel_env(False, parent={**OTEL, "PATH": "/bin"})
    assert removed == dict.fromkeys(OTEL)
    assert child_env(removed, {**OTEL, "PATH": "/bin"}) == {"PATH": "/bin"}
    assert otel_env(False, remote=True, parent=OTEL) == {}


def test_an_explicit_header_variable_still_reaches_the_child() -> None:
    overlay = {**otel_env(True, parent=OTEL), "OTEL_EXPORTER_OTLP_HEADERS": "mine"}
    env = child_env(overlay, OTEL)
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == "mine"
    assert "OTEL_EXPORTER_OTLP_TRACES_HEADERS" not in env
