"""Assertions several test files share."""

from __future__ import annotations

import re
import tracemalloc

import pytest


def whole(message: str) -> str:
    """A ``match=`` pattern for ``pytest.raises`` that takes ``message`` whole, from its first
    character to its last (``match`` alone searches anywhere in the text)."""
    return "^" + re.escape(message) + "$"


def raises_exactly(exc: type[BaseException], message: str, fn, *args, **kwargs) -> None:
    """``fn(*args, **kwargs)`` raises ``exc`` whose text is exactly ``message``."""
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert str(info.value) == message


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
