"""Tests from the second mutation run over attnscale.lengthrules: what the solved rules'
search does beyond the grid, how close to the needle's peak a target may lie, and
Qwen's LogN rule at the largest length.

What is pinned, and the independent reference of each:

- the search of the solved rules (``_solve``'s docstring, :data:`LOG_ALPHA_GRID`): the
  root is looked for on the grid ``e^-12 .. e^4`` first, and beyond it ``alpha`` doubles
  from ``e^4`` only while the function still rises. Evaluations near ``alpha = 1e4`` cost
  about a second each, so these tests record the scales at which :mod:`attnscale.exact`
  is called (the real functions, wrapped) and compare them with ``e^4`` and ``2 e^4``
  written by hand;
- a target just below the needle's largest weight is reached (the docstring: a
  ``ValueError`` only when the target is out of reach). The peak is located here by
  nested scans of :func:`attnscale.exact.needle_weight`, independent of the solver's
  bounded minimisation;
- ``qwen_logn`` is ``max(1, log_{n_train} n)`` (its docstring) for every length the
  library accepts, up to the largest float: against ``ln n / ln n_train`` from ``math``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale import exact as E
from attnscale import lengthrules as L


def _record_scales(monkeypatch, name):
    """Wrap ``attnscale.exact.<name>`` so that the largest ``alpha`` of every call is
    kept; the values returned are the real function's."""
    real = getattr(E, name)
    scales = []

    def wrapper(n, alpha, *args, **kwargs):
        scales.append(float(np.max(alpha)))
        return real(n, alpha, *args, **kwargs)

    monkeypatch.setattr(E, name, wrapper)
    return scales


def _needle_peak(n, gap, lo, hi, rounds=7, points=41):
    """``(log alpha, weight)`` at the needle weight's largest value in ``[lo, hi]`` (in
    ``log alpha``), by scans that each narrow the interval tenfold round the best point."""
    for _ in range(rounds):
        x = np.linspace(lo, hi, points)
        w = np.asarray(E.needle_weight(n, np.exp(x), gap))
        k = int(np.argmax(w))
        step = x[1] - x[0]
        lo, hi = x[k] - 2 * step, x[k] + 2 * step
    return float(x[k]), float(w[k])


# ---- the search: the grid first, then doubling while the function rises -----------------


@pytest.mark.parametrize("where", ["at the grid's top", "inside the grid"])
def test_solved_rule_with_its_root_on_the_grid_does_not_search_beyond_it(monkeypatch, where):
    """E H falls with alpha, so the entropy rule's f rises. A target met at alpha = e^4 (the
    grid's last point) or between grid points is found without evaluating E H beyond e^4;
    the first is returned as e^4 itself (an exact zero of f at the bracket's end)."""
    n = 4096.0
    top = math.exp(4.0)
    target = float(E.expected_entropy(n, top)) if where == "at the grid's top" else 0.2
    assert float(E.expected_entropy(n, top)) <= target  # the root lies on the grid
    scales = _record_scales(monkeypatch, "expected_entropy")
    a = L.alpha_constant_entropy(n, target=target)
    assert max(scales) == top
    if where == "at the grid's top":
        assert a == top
    else:
        assert 1.0 < a < top
        assert float(E.expected_entropy(n, a)) == pytest.approx(target, rel=1e-10)


@pytest.mark.parametrize("gap", [3.11, 3.112])
def test_constant_needle_stops_doubling_once_the_weight_falls(monkeypatch, gap):
    """n = 2048, gap 3.11 or 3.112: the weight peaks between e^4 and 2 e^4 and is lower
    at 2 e^4 than at e^4 (gap 3.112: lower than at e^4 but higher than at e^3.75). The
    search doubles once, to 2 e^4, sees the fall and refines the peak below it: no scale
    above 2 e^4 is evaluated. A target of 0.2 lies above the peak and is refused."""
    n = 2048.0
    w = [float(E.needle_weight(n, a, gap)) for a in (math.exp(3.75), math.exp(4.0), 2 * math.exp(4.0))]
    assert w[2] < w[1] and (w[0] < w[2] if gap == 3.112 else w[2] < w[0])
    scales = _record_scales(monkeypatch, "needle_weight")
    with pytest.raises(ValueError, match="the target exceeds the largest value, reached near alpha = "):
        L.alpha_constant_needle(n, gap, target=0.2)
    assert max(scales) == pytest.approx(2 * math.exp(4.0), rel=1e-12)


# ---- a target at the needle's peak ---------------------------------------------------------


def test_constant_needle_reaches_a_target_just_below_the_peak():
    """n = 65536, gap 3: the weight peaks near alpha = 3.13 (log alpha 1.1407, between the
    grid points 1.0 and 1.25) at 0.0014243. A target 1e-12 (relative) below the peak is in
    reach, so it is met on the rising side; one 1e-9 above it is refused."""
    n, gap = 65536.0, 3.0
    x, top = _needle_peak(n, gap, 0.5, 2.0)
    assert x == pytest.approx(1.1407, abs=1e-4) and top == pytest.approx(0.0014243, rel=1e-4)
    target = top * (1 - 1e-12)
    a = L.alpha_constant_needle(n, gap, target=target)
    assert float(E.needle_weight(n, a, gap)) == pytest.approx(target, rel=1e-10)
    assert math.exp(1.0) < a <= math.exp(x) * (1 + 1e-6)
    with pytest.raises(ValueError, match="exceeds the largest value"):
        L.alpha_constant_needle(n, gap, target=top * (1 + 1e-9))


# ---- Qwen's LogN at the largest length --------------------------------------------------------


@pytest.mark.parametrize("n_train", [1.5, 3.0, 7.0, 512.0])
def test_qwen_logn_at_the_largest_length(n_train):
    """n may be any finite real > 1, up to the largest float; log_{n_train} n is finite
    there (ln n = 709.78). LongRoPE gives the same numbers for n >= n_train."""
    n = float(np.finfo(float).max)
    expected = math.log(n) / math.log(n_train)
    assert L.qwen_logn(n, n_train=n_train) == pytest.approx(expected, rel=1e-14)
    assert L.longrope(n, n_train=n_train) == pytest.approx(expected, rel=1e-14)
