"""The library's bracketed root finder: regula falsi with a modified kept end.

:func:`regula_falsi` refines many brackets at once (:func:`attnscale.optimum.alpha_star_cosine`
solves a whole grid of ``(n, d)`` with it); :func:`bracketed_root` is the same loop for one
scalar function, which the solvers on the path of ``python -m attnscale recommend`` use
instead of ``scipy.optimize.brentq`` (importing ``scipy.optimize`` took about half of the
command's start).

Each step puts the secant point of the bracket's ends inside the bracket (the midpoint
where rounding would put it outside) and keeps the sign change. Plain regula falsi keeps
one end for ever; the remedy is to shrink the value kept at an end that survives twice in
a row, so that both ends move and convergence is superlinear: by half (the Illinois
method), or by ``1 - f(new) / f(previous new)`` when that is positive (Anderson and
Björck's method, which also moves a point closer to an end than half the tolerance out to
that distance, so the bracket closes as soon as the root is pinned, and bisects a bracket
that three steps did not halve, so even a jump is found in a bounded number of steps). A
bracket is done when its width is at most ``max(xtol, rtol |x_hi|)``, or when a step lands
on an exact zero.

On the library's scalar problems (the exact quadratures of :mod:`attnscale.exact`, where an
evaluation costs milliseconds) Anderson and Björck's method needs about as many
evaluations as Brent's method did (tests/test_roots.py holds it to at most 1.25 times
``scipy.optimize.brentq``'s count plus 2 on smooth functions), and the Illinois method 15-30% more; the grid of
:func:`~attnscale.optimum.alpha_star_cosine` keeps the Illinois method it has always used,
so its values are unchanged to the bit.
"""

from __future__ import annotations

import math
from typing import Callable, Literal

import numpy as np
from numpy.typing import NDArray

from . import _validate as v

Values = Callable[[NDArray[np.float64], NDArray[np.intp]], NDArray[np.float64]]


def regula_falsi(f: Values, x_lo: NDArray[np.float64], x_hi: NDArray[np.float64], f_lo: NDArray[np.float64],
             f_hi: NDArray[np.float64], *, xtol: float, rtol: float, iterations: int,
             method: Literal["illinois", "anderson-bjorck"] = "illinois",
             ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """Refine the brackets ``[x_lo, x_hi]`` (1-d arrays, ``f_lo < 0 < f_hi`` at their ends)
    of the roots of ``f``, which is called as ``f(x, idx)``: the values at the points ``x`` for
    the brackets numbered ``idx``. At most ``iterations`` steps of ``method`` (see the module
    docstring). Returns the final ends and the numbers of the brackets not done within
    ``iterations`` (empty when all are). Refused, by a ``ValueError`` that begins with the
    argument's name: ends that are not finite or not ``x_lo < x_hi``, values at the ends
    without ``f_lo < 0 < f_hi``, a negative or non-finite ``xtol`` or ``rtol``, and a NaN
    from ``f`` at a step (the message says where)."""
    xtol, rtol = _tolerances(xtol, rtol)
    iterations = v.integer_at_least(iterations, "iterations", 0)
    x_lo, x_hi, f_lo, f_hi = (np.array(a, dtype=float) for a in (x_lo, x_hi, f_lo, f_hi))
    for name, ends in (("x_lo", x_lo), ("x_hi", x_hi)):
        v.finite(ends, name)
    if not np.all(x_lo < x_hi):
        raise ValueError(f"x_lo must be < x_hi, got {v._show(x_lo)} and {v._show(x_hi)}")
    if not np.all((f_lo < 0) & (f_hi > 0)):
        raise ValueError(f"f_lo and f_hi must hold f_lo < 0 < f_hi, got {v._show(f_lo)} and {v._show(f_hi)}")
    side = np.zeros(x_lo.size, dtype=int)  # which end the last step replaced: 1 high, -1 low
    widths = np.full((3, x_lo.size), np.inf)  # the widths of the bracket 1, 2 and 3 steps ago
    active = np.arange(x_lo.size)
    for _ in range(iterations):
        if active.size == 0:
            break
        xl, xh, fl, fh = x_lo[active], x_hi[active], f_lo[active], f_hi[active]
        x_new = _secant_point(xl, xh, fl, fh, xtol, rtol, method)
        if method == "anderson-bjorck":  # bisect a bracket that three steps did not halve
            x_new = np.where(_width(xl, xh) > 0.5 * widths[2, active], _middle(xl, xh), x_new)
            widths[:, active] = np.vstack([_width(xl, xh), widths[:2, active]])
        f_new = np.asarray(f(x_new, active), dtype=float)
        if np.isnan(f_new).any():
            bad = np.flatnonzero(np.isnan(f_new))[0]
            raise ValueError(f"f is NaN at x = {float(x_new[bad])!r} (bracket {int(active[bad])}, between {float(xl[bad])!r} and {float(xh[bad])!r})")
        right = f_new > 0
        x_hi[active] = np.where(right, x_new, xh)
        f_hi[active] = np.where(right, f_new, fh)
        x_lo[active] = np.where(right, xl, x_new)
        f_lo[active] = np.where(right, fl, f_new)
        # the end that survives twice in a row has its value shrunk
        keep_lo, keep_hi = right & (side[active] == 1), ~right & (side[active] == -1)
        shrink_lo, shrink_hi = _shrinking(f_new, fh, fl, method)
        f_lo[active] = np.where(keep_lo, shrink_lo * f_lo[active], f_lo[active])
        f_hi[active] = np.where(keep_hi, shrink_hi * f_hi[active], f_hi[active])
        side[active] = np.where(right, 1, -1)
        hit = f_new == 0
        done = (_width(x_lo[active], x_hi[active]) <= np.maximum(xtol, rtol * np.abs(x_hi[active]))) | hit
        x_lo[active[hit]] = x_new[hit]
        x_hi[active[hit]] = x_new[hit]
        active = active[~done]
    return x_lo, x_hi, active


def _tolerances(xtol: object, rtol: object) -> tuple[float, float]:
    """``xtol`` and ``rtol`` as finite floats >= 0 (refused by name otherwise)."""
    out = []
    for name, tol in (("xtol", xtol), ("rtol", rtol)):
        value = v.real_number(tol, name)
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value!r}")
        out.append(value)
    return out[0], out[1]


def _width(xl: NDArray, xh: NDArray) -> NDArray:
    """The widths ``xh - xl`` (inf where they overflow, between ends near either largest float)."""
    with np.errstate(over="ignore"):
        return xh - xl


def _middle(xl: NDArray, xh: NDArray) -> NDArray:
    """The midpoints ``(xl + xh) / 2``, halved before adding where the sum overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        mid = 0.5 * (xl + xh)
    return np.where(np.isfinite(mid), mid, 0.5 * xl + 0.5 * xh)


def _secant_point(xl: NDArray, xh: NDArray, fl: NDArray, fh: NDArray, xtol: float, rtol: float, method: str) -> NDArray:
    """Where the line through the ends crosses zero (the midpoint if rounding puts it outside);
    Anderson and Björck's method keeps it at least half the tolerance from either end."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x_new = xh - fh * (xh - xl) / (fh - fl)
    x_new = np.where((x_new > xl) & (x_new < xh), x_new, _middle(xl, xh))
    if method == "anderson-bjorck":
        step = 0.5 * np.maximum(xtol, rtol * np.abs(x_new))
        x_new = np.where(_width(xl, xh) > 2.0 * step, np.clip(x_new, xl + step, xh - step), x_new)
    return x_new


def _shrinking(f_new: NDArray, fh: NDArray, fl: NDArray, method: str) -> tuple[NDArray | float, NDArray | float]:
    """The factors for the value kept at the low end (the high end was replaced twice in a
    row, last with value ``fh``) and at the high end (the low end was, last with ``fl``)."""
    if method == "illinois":
        return 0.5, 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = 1.0 - f_new / fh, 1.0 - f_new / fl
    return np.where(lo > 0, lo, 0.5), np.where(hi > 0, hi, 0.5)


def bracketed_root(f: Callable[[float], float], lo: float, hi: float, *, xtol: float, rtol: float,
                   iterations: int = 100) -> float:
    """A root of the scalar function ``f`` in ``[lo, hi]`` (``lo < hi``), where ``f(lo)`` and
    ``f(hi)`` differ in sign or one is zero (that end is returned as it is), by Anderson and
    Björck's method: the midpoint of a bracket of a sign change of ``f`` of width at most
    ``max(xtol, rtol |x|)``, so within half that of it. ``ValueError`` without a sign change,
    ``RuntimeError`` if ``iterations`` steps do not get there. Refused, by a ``ValueError`` or
    ``TypeError`` that begins with the argument's name: ``lo`` or ``hi`` not finite, ``lo >= hi``,
    ``xtol`` or ``rtol`` negative or not finite; a NaN value of ``f`` at an end or inside the
    bracket raises a ``ValueError`` that begins with ``f`` and says where."""
    xtol, rtol = _tolerances(xtol, rtol)
    iterations = v.integer_at_least(iterations, "iterations", 1)
    lo_value, hi_value = v.real_number(lo, "lo"), v.real_number(hi, "hi")
    if not lo_value < hi_value:
        raise ValueError(f"lo must be < hi, got lo = {lo!r} and hi = {hi!r}")
    f_lo, f_hi = float(f(lo)), float(f(hi))
    for end, x, value in (("lo", lo, f_lo), ("hi", hi, f_hi)):
        if math.isnan(value):
            raise ValueError(f"f is NaN at the end {end} = {x!r}")
    if f_lo == 0:
        return float(lo)
    if f_hi == 0:
        return float(hi)
    if not (f_lo < 0 < f_hi or f_hi < 0 < f_lo):
        raise ValueError(f"f must change sign on [{lo!r}, {hi!r}], got f = {f_lo!r} and {f_hi!r} at its ends")
    sign = 1.0 if f_hi > 0 else -1.0

    def values(x: NDArray[np.float64], idx: NDArray[np.intp]) -> NDArray[np.float64]:
        value = float(f(float(x[0])))
        if math.isnan(value):
            raise ValueError(f"f is NaN at x = {float(x[0])!r}, inside the bracket [{lo!r}, {hi!r}]")
        return np.array([sign * value])

    x_lo, x_hi, left = regula_falsi(values, np.array([lo]), np.array([hi]), np.array([sign * f_lo]), np.array([sign * f_hi]),
                                xtol=xtol, rtol=rtol, iterations=iterations, method="anderson-bjorck")
    if left.size:
        raise RuntimeError(f"no bracket of width {max(xtol, rtol * abs(x_hi[0])):g} after {iterations} steps: [{x_lo[0]!r}, {x_hi[0]!r}]")
    return float(_middle(x_lo, x_hi)[0])
