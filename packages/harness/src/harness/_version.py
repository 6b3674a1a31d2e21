"""The harness version, reported by `acp-agent` and `sdk-runtime` in their handshakes."""

VERSION = "0.1.0"
