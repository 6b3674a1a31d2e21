"""`python -m model_agent.testing --script FILE.json [--port N]`: serve a scripted model."""

import sys

from . import main

sys.exit(main())
