"""The public surface: `__all__` lists exactly the public names, sorted."""

from __future__ import annotations

import subagent_sdk
import subagent_sdk.testing
import subagent_sdk.wire


def test_all_lists_exactly_the_public_names() -> None:
    for module in (subagent_sdk, subagent_sdk.wire, subagent_sdk.testing):
        exported = list(module.__all__)
        public = {name for name in vars(module) if not name.startswith("_")}
        # Submodules and `annotations` from `from __future__` are not API.
        public -= {"annotations", "wire", "testing", "sys"}
        assert set(exported) == public, module.__name__


def test_error_tree() -> None:
    for error in (
        subagent_sdk.JSONRPCError,
        subagent_sdk.SDKProtocolError,
        subagent_sdk.TransportClosedError,
        subagent_sdk.RequestTimeoutError,
    ):
        assert issubclass(error, subagent_sdk.SDKError)
    error = subagent_sdk.JSONRPCError(-32603, "m", {"d": 1})
    assert (error.code, error.message, error.data) == (-32603, "m", {"d": 1})
