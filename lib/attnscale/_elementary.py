"""Four special functions without SciPy: ``gammaln``, ``expit``, ``log_expit`` and ``ndtri``
(and the coefficients of Stirling's series).

Importing ``scipy.special`` costs about 0.3 s (it loads SciPy's array-API layer, which
loads ``numpy.f2py`` and ``numpy.testing``), three times the whole computation of
``python -m attnscale recommend``. The exact expectations behind that command need
only these four functions, which the standard library and NumPy give to full double
precision:

- ``gammaln``: ``math.lgamma`` (the C library's, accurate to a few units in the last
  place of ``max(1, |log Gamma|)``: near its zeros at 1 and 2 the error is absolute, not
  relative), element by element;
- ``expit`` and ``log_expit``: the logistic function and its log, each branch chosen so
  that nothing overflows or cancels;
- ``ndtri``: the normal quantile of ``statistics.NormalDist``, Wichura's algorithm AS 241
  (relative error about ``1e-16``), element by element.

They are private: the library calls them with arguments already checked (``gammaln``
with positive arguments, ``ndtri`` with probabilities in ``[0, 1]``); their accuracy
against SciPy and ``mpmath`` is tested in ``tests/test_elementary.py``.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

# Stirling's series for log Gamma: log Gamma(z) = (z - 1/2) log z - z + log(2 pi)/2
# + sum_k STIRLING[k-1] z^(1-2k), the coefficients B_2k / (2k (2k - 1)).
STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400]

_STANDARD = NormalDist()


def _log_gamma(x: float) -> float:
    try:
        return math.lgamma(x)
    except OverflowError:  # x above about 2.6e305, where log Gamma(x) exceeds the largest float
        return math.inf


_lgamma = np.frompyfunc(_log_gamma, 1, 1)


def gammaln(x: ArrayLike) -> NDArray[np.float64]:
    """``log |Gamma(x)|`` for ``x > 0`` (as ``scipy.special.gammaln``)."""
    with np.errstate(over="ignore"):  # the C library flags the overflow that _log_gamma maps to inf
        return np.asarray(_lgamma(np.asarray(x, dtype=float)), dtype=float)[()]


def expit(x: ArrayLike) -> NDArray[np.float64]:
    """The logistic function ``1 / (1 + e^-x)``."""
    x_ = np.asarray(x, dtype=float)
    e = np.exp(-np.abs(x_))  # in (0, 1]: never overflows
    return np.where(x_ >= 0, 1.0 / (1.0 + e), e / (1.0 + e))[()]


def log_expit(x: ArrayLike) -> NDArray[np.float64]:
    """``log(1 / (1 + e^-x)) = -log(1 + e^-x)``, without overflow for either sign of ``x``."""
    x_ = np.asarray(x, dtype=float)
    return (np.minimum(x_, 0.0) - np.log1p(np.exp(-np.abs(x_))))[()]


def _quantile(p: float) -> float:
    if math.isnan(p):
        return math.nan
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return _STANDARD.inv_cdf(p)


_quantiles = np.frompyfunc(_quantile, 1, 1)


def ndtri(p: ArrayLike) -> NDArray[np.float64]:
    """The standard normal quantile ``Phi^-1(p)`` for ``0 <= p <= 1`` (``-inf`` at 0, ``inf`` at 1)."""
    return np.asarray(_quantiles(np.asarray(p, dtype=float)), dtype=float)[()]
