"""``python -m attnscale.training``: run the Part IV experiment (see :mod:`attnscale.training.runner`)."""

import sys

from .runner import main

sys.exit(main())
