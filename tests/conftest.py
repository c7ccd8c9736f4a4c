import os
from pathlib import Path

import matplotlib
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]

#: The units of make test's pytest session that take 20 s or more on one worker (chapters under
#: nbval and test modules, by pytest --durations on two workers), longest first. Each unit goes
#: whole to one worker (--dist loadfile), in the session's order (--no-loadscope-reorder): these
#: go first so that no worker is left running a long one while the other has finished.
#: A unit missing from this list only starts later; a file named here that does not exist in its
#: folder stops the session.
LONGEST_FIRST = (
    "tests/training/test_sweep.py",
    "tests/exact/test_bulk.py",
    "tests/exact/test_needle.py",
    "chapters/10_training.ipynb",
    "tests/bytelm/test_model.py",
    "tests/bytelm/test_train.py",
    "chapters/14_real_attention.ipynb",
    "chapters/13_training_protocol.ipynb",
    "chapters/07_beyond_mean_field.ipynb",
    "chapters/04_l1_identity.ipynb",
    "chapters/06_cosine_scores.ipynb",
    "chapters/08_entropy_invariance.ipynb",
    "tests/test_notebooks.py",
    "chapters/02_dot_products.ipynb",
    "chapters/03_saturation.ipynb",
)


def pytest_collection_modifyitems(items):
    """The long units of LONGEST_FIRST first, in its order; then every other chapter, then the
    other test modules, each in collection order (the sort is stable)."""
    # (in a copy without a folder, for instance lib/ and tests/ alone, that folder's entries are not missed)
    missing = [path for path in LONGEST_FIRST if (ROOT / path).parent.is_dir() and not (ROOT / path).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py: LONGEST_FIRST names files that do not exist: {missing}")
    rank = {path: k for k, path in enumerate(LONGEST_FIRST)}

    def key(item):
        path = Path(str(item.path)).resolve()
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        return rank.get(name, len(rank) + (path.suffix != ".ipynb"))

    items.sort(key=key)
