"""`python -m subagent_codex.testing [app-server …]`: the fake app-server (arguments ignored)."""

import sys

from ._fake import serve_scenario

sys.exit(serve_scenario())
