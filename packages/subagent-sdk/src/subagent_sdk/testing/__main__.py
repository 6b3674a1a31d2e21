"""`python -m subagent_sdk.testing`: the scripted fake SDK runtime."""

from subagent_sdk.testing import main

raise SystemExit(main())
