"""Assertions several test files share."""

from __future__ import annotations

import re
import tracemalloc

import pytest


def named(name: str) -> str:
    """A ``match=`` pattern for ``pytest.raises``: the message begins with ``name`` (the refused
    argument's name), followed by anything but another character of a name. The rest of the
    wording is free to change."""
    return "^" + re.escape(name) + r"(?![\w])"


def refuses(exc: type[BaseException], name: str, fn, *args, **kwargs) -> None:
    """``fn(*args, **kwargs)`` raises ``exc`` whose message begins with ``name``."""
    with pytest.raises(exc, match=named(name)):
        fn(*args, **kwargs)


def peak_bytes(fn, *args, **kwargs) -> int:
    """The peak of memory traced while ``fn(*args, **kwargs)`` runs, in bytes above what was
    held before it started (tracemalloc sees NumPy's arrays)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        if not was_tracing:
            tracemalloc.stop()
