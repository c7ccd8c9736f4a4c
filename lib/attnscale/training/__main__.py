"""``python -m attnscale.training``: run the Part IV sweep for one optimiser."""

import sys

from .sweep import main

sys.exit(main())
