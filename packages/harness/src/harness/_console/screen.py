"""Child- or model-written text made safe for a terminal.

Every view that prints what a child or the model wrote (the delegate view, `harness run`'s
stream, the terminal question) strips it here first, so such text cannot drive the terminal.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def screen_text(text: str) -> str:
    """Child-written text made safe to print: no escape sequences or other control codes."""
    return _CONTROL.sub("", text)
