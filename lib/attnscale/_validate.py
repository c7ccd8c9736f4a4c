"""Argument checks shared by the library's public functions.

Every public function of :mod:`attnscale` validates its inputs with these
helpers, so that bad input raises a ``ValueError`` or ``TypeError`` naming
the argument and the offending value instead of returning a silent NaN.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: the largest float64, where scales and lengths computed in floats must stop
LARGEST_FLOAT = float(np.finfo(float).max)


def _show(value: object) -> str:
    """A short, stable rendering of a bad value for an error message."""
    arr = np.asarray(value) if not isinstance(value, str) else None
    if arr is not None and arr.ndim > 0:
        flat = arr.ravel()
        head = ", ".join(repr(v.item()) if hasattr(v, "item") else repr(v) for v in flat[:4])
        more = ", ..." if flat.size > 4 else ""
        return f"array of shape {arr.shape} [{head}{more}]"
    return repr(value.item() if hasattr(value, "item") else value)


def as_float_array(value: ArrayLike, name: str) -> NDArray[np.float64]:
    """Convert ``value`` to a float64 array, rejecting non-numeric input."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a real number or array of real numbers, got {value!r}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - numpy's own message is kept
        raise TypeError(f"{name} must be array-like, got {type(value).__name__}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def finite(value: ArrayLike, name: str) -> NDArray[np.float64]:
    """A float64 array whose every entry is finite."""
    arr = as_float_array(value, name)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} must be finite, got {_show(arr[bad][0])} in {_show(arr)}")
    return arr


def positive(value: ArrayLike, name: str) -> NDArray[np.float64]:
    """A float64 array whose every entry is finite and strictly positive."""
    arr = finite(value, name)
    bad = arr <= 0
    if bad.any():
        raise ValueError(f"{name} must be > 0, got {_show(arr[bad][0])}")
    return arr


def at_least_1d(arr: NDArray[np.float64], name: str) -> NDArray[np.float64]:
    """Reject scalars where a vector (or batch of vectors) is needed."""
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one axis, got a scalar {_show(arr)}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must have at least one entry along its last axis, got shape {arr.shape}")
    return arr


def probabilities(value: ArrayLike, name: str = "p", atol: float = 1e-9) -> NDArray[np.float64]:
    """Probability vectors along the last axis: finite, >= 0, summing to 1."""
    arr = at_least_1d(finite(value, name), name)
    if (arr < 0).any():
        raise ValueError(f"{name} must be >= 0, got {_show(arr[arr < 0][0])}")
    sums = arr.sum(axis=-1)
    off = np.abs(sums - 1.0) > atol * max(1, arr.shape[-1])
    if off.any():
        raise ValueError(f"{name} must sum to 1 along its last axis, got a sum of {_show(sums[off][0])}")
    return arr


def lengths(value: ArrayLike, name: str = "n") -> NDArray[np.float64]:
    """Sequence lengths: finite reals > 1 (a softmax over one key has no gradient)."""
    arr = finite(value, name)
    bad = ~(arr > 1)
    if bad.any():
        raise ValueError(f"{name} must be > 1 (a softmax over n <= 1 keys has no gradient), got {_show(arr[bad][0])}")
    return arr


def integer_at_least(value: object, name: str, minimum: int) -> int:
    """A Python int >= ``minimum`` (bools and non-integral floats are rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def real_number(value: object, name: str) -> float:
    """A finite real Python float (bools, strings, None and complex numbers are rejected)."""
    if isinstance(value, (bool, str, bytes)) or value is None or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def real_above(value: object, name: str, bound: float = 0.0) -> float:
    """A finite real Python float strictly greater than ``bound``."""
    x = real_number(value, name)
    if not x > bound:
        raise ValueError(f"{name} must be > {bound:g}, got {x!r}")
    return x


def text(value: object, name: str) -> str:
    """A string argument (a label or a name)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r}")
    return value


def generator(value: object, name: str = "rng") -> np.random.Generator:
    """A NumPy random Generator (``np.random.default_rng(seed)``)."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"{name} must be a numpy Generator (np.random.default_rng(seed)), got {type(value).__name__}")
    return value


def mapping(value: object, name: str, keys: tuple[str, ...] = ()) -> dict:
    """A dict holding at least ``keys``."""
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    missing = [key for key in keys if key not in value]
    if missing:
        raise ValueError(f"{name} lacks the entries {missing}")
    return value


def axis_index(axis: object, ndim: int, name: str = "axis") -> int:
    """A valid axis index for an array of ``ndim`` dimensions."""
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {axis!r}")
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"{name} must be in [{-ndim}, {ndim - 1}] for an array with {ndim} axes, got {axis}")
    return int(axis) % ndim


def scalar_or_array(out: ArrayLike, shape: tuple[int, ...] | None = None) -> NDArray[np.float64] | float:
    """A result as the library returns it: an array (reshaped to ``shape`` when
    given), or a Python float when it has no dimensions, so that scalar
    arguments give a scalar."""
    arr = np.asarray(out, dtype=float)
    if shape is not None:
        arr = arr.reshape(shape)
    return arr if arr.ndim else float(arr)
