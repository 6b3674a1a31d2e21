"""Each face's `__all__` is exactly its public names (httpx's `test_exported_members` way).

Every name in `__all__` is an attribute, and every attribute without a leading `_` that is not
a submodule (nor `annotations` from `from __future__`) is in `__all__`: a name added to a face
without being exported, or exported without existing, fails here rather than in a user's
import.
"""

from __future__ import annotations

import types

import pytest
import subagent_sdk
import subagent_sdk.client
import subagent_sdk.testing
import subagent_sdk.wire

FACES = (subagent_sdk, subagent_sdk.client, subagent_sdk.wire, subagent_sdk.testing)


@pytest.mark.parametrize("module", FACES, ids=lambda module: module.__name__)
def test_all_is_exactly_the_public_names(module: types.ModuleType) -> None:
    exported = list(module.__all__)
    assert len(exported) == len(set(exported))
    for name in exported:
        assert hasattr(module, name), name
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    assert public == set(exported)


def test_the_provider_face_holds_no_client_names() -> None:
    assert not set(subagent_sdk.__all__) & set(subagent_sdk.client.__all__)


def test_error_tree() -> None:
    client = subagent_sdk.client
    for error in (
        client.JSONRPCError,
        client.SDKProtocolError,
        client.TransportClosedError,
        client.RequestTimeoutError,
    ):
        assert issubclass(error, client.SDKError)
    error = client.JSONRPCError(-32603, "m", {"d": 1})
    assert (error.code, error.message, error.data) == (-32603, "m", {"d": 1})
