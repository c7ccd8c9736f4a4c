"""Where the library finds the book's data: the register (``chapters/claims.yml``), the
stored training results and the corpus (``chapters/data/``).

The data belong to the book, not to the package: they are read from a checkout of the
book. :func:`book_root` is that checkout: the folder named by the environment variable
``ATTNSCALE_BOOK`` when it is set, else the checkout this package is installed from
(``pip install -e .``, as ``make`` does), found as the nearest folder above this file
that holds the book's ``_toc.yml``. A non-editable install that needs the data sets
``ATTNSCALE_BOOK``; without the data, every module still imports and everything that
does not read them (``python -m attnscale recommend`` among them) works.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENVIRONMENT", "book_root", "in_book"]

#: the environment variable that names the book's checkout
ENVIRONMENT = "ATTNSCALE_BOOK"


def book_root() -> Path:
    """The book's checkout (see the module docstring). Raises ``FileNotFoundError`` naming
    ``ATTNSCALE_BOOK`` when the variable names no folder, or when it is unset and no folder
    above the package holds ``_toc.yml``."""
    named = os.environ.get(ENVIRONMENT)
    if named:
        root = Path(named).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(f"{ENVIRONMENT} must name the book's checkout, a folder; got {named!r}")
        return root.resolve()
    here = Path(__file__).resolve()
    for folder in here.parents:
        if (folder / "_toc.yml").is_file() and (folder / "chapters").is_dir():
            return folder
    raise FileNotFoundError(f"{ENVIRONMENT} is not set and no checkout of the book lies above {here.parent}: "
                            f"set {ENVIRONMENT} to the folder that holds _toc.yml and chapters/")


def in_book(relative: str) -> Path:
    """The path ``relative`` inside :func:`book_root`, for a module constant that must not
    fail at import: when no checkout is found it is ``$ATTNSCALE_BOOK/relative`` literally,
    so that reading it fails with a ``FileNotFoundError`` whose path says what to set."""
    try:
        return book_root() / relative
    except FileNotFoundError:
        return Path(f"${ENVIRONMENT}") / relative
