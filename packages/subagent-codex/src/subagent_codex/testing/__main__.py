"""`python -m subagent_codex.testing [app-server …]`: the fake app-server (arguments ignored)."""

import sys

from ._fake_app_server import run_fake_app_server

sys.exit(run_fake_app_server())
