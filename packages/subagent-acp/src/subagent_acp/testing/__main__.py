"""`python -m subagent_acp.testing`: the scripted fake ACP child."""

from subagent_acp.testing import main

raise SystemExit(main())
