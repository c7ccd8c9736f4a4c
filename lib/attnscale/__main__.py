"""``python -m attnscale recommend --n N --d D [--scores cosine]``: see :mod:`attnscale.recommend`."""

import sys

from .recommend import main

sys.exit(main())
