"""Assertions several test files share."""

from __future__ import annotations

import pytest


def raises_exactly(exc: type[BaseException], message: str, fn, *args, **kwargs) -> None:
    """``fn(*args, **kwargs)`` raises ``exc`` whose text is exactly ``message``."""
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert str(info.value) == message
