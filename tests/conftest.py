import os

import matplotlib
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
matplotlib.use("Agg")


def pytest_collection_modifyitems(config, items):
    """The cells of a chapter run in order in one kernel: under pytest-xdist with
    ``--dist loadgroup`` (``make test``), each notebook's items form one group, kept on one
    worker, while the library tests are spread one by one."""
    for item in items:
        path = str(getattr(item, "path", item.fspath))
        if path.endswith(".ipynb"):
            item.add_marker(pytest.mark.xdist_group(path.rsplit("/", 1)[-1]))
