"""`python -m subagent_claude.testing`: the scripted fake Claude Code CLI."""

from subagent_claude.testing import main

raise SystemExit(main())
