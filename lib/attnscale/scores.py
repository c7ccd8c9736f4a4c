"""Distributions of attention scores: standard normal and cosine.

The cosine ``s`` between two independent uniformly random directions in
``R^d`` has density ``p(s) = (1 - s^2)^((d-3)/2) / B(1/2, (d-1)/2)`` on
``[-1, 1]`` (equivalently ``(1 + s)/2 ~ Beta((d-1)/2, (d-1)/2)``), mean 0,
variance ``1/d``, and moment generating function
``M(alpha) = E[exp(alpha s)] = Gamma(d/2) (2/alpha)^(d/2-1) I_(d/2-1)(alpha)
= 0F1(; d/2; alpha^2/4)``.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v
from ._elementary import gammaln
from .special import _log_hyp0f1, _log_ive, _ratio_and_complement

__all__ = [
    "cosine_logpdf",
    "cosine_kernel_mass",
    "cosine_cdf",
    "sample_vector_cosines",
    "sample_cosines",
    "sample_dot_products",
    "log_mgf_cosine",
    "dlog_mgf_cosine",
    "log_mgf_normal",
]


# Largest d for the Bessel-function quantities (the moment generating function and what
# is built on it): attnscale.special keeps its documented accuracy up to the order
# nu = d/2 - 1 = 32767 and loses it roughly in proportion to nu beyond.
D_MAX = 65536


def _dims(d: ArrayLike, name: str = "d") -> NDArray[np.float64]:
    arr = v.finite(d, name)
    bad = arr < 2
    if bad.any():
        raise ValueError(f"{name} must be >= 2 (cosines need at least two dimensions), got {v._show(arr[bad][0])}")
    return arr


def _bessel_dims(d: ArrayLike) -> NDArray[np.float64]:
    """``d`` for the Bessel-function quantities: ``2 <= d <= D_MAX``."""
    arr = _dims(d)
    bad = arr > D_MAX
    if bad.any():
        raise ValueError(f"d must be <= {D_MAX} (the supported maximum for the moment generating function), got {v._show(arr[bad][0])}")
    return arr


def cosine_logpdf(s: ArrayLike, d: ArrayLike) -> NDArray[np.float64] | float:
    """``log p(s)`` for the cosine of two random directions in ``R^d``:
    ``((d-3)/2) log(1 - s^2) - log B(1/2, (d-1)/2)``, for ``-1 < s < 1``."""
    s_ = v.finite(s, "s")
    if (np.abs(s_) >= 1).any():
        raise ValueError(f"s must lie in (-1, 1), got {v._show(s_[np.abs(s_) >= 1][0])}")
    d_ = _dims(d)
    from scipy.special import betaln  # here, not at the top: importing scipy.special is slow

    return v.scalar_or_array(0.5 * (d_ - 3.0) * np.log1p(-s_ * s_) - betaln(0.5, 0.5 * (d_ - 1.0)))


def cosine_kernel_mass(d: ArrayLike, exponent: ArrayLike) -> NDArray[np.float64] | float:
    """``int_{-1}^{1} (1 - s^2)^exponent ds / B(1/2, (d-1)/2)``: the total mass of the kernel
    ``(1 - s^2)^exponent`` under the cosine law's normalising constant, in closed form
    ``B(1/2, exponent + 1) / B(1/2, (d-1)/2)``. It is 1 for the right exponent ``(d-3)/2``;
    the appended notes' density uses ``(d-2)/2``, whose mass is not 1.
    ``exponent > -1`` (the integral converges); ``d >= 2``."""
    d_ = _dims(d)
    e = v.finite(exponent, "exponent")
    if (e <= -1).any():
        raise ValueError(f"exponent must be > -1 (the integral diverges), got {v._show(e[e <= -1][0])}")
    from scipy.special import betaln  # here, not at the top: importing scipy.special is slow

    return v.scalar_or_array(np.exp(betaln(0.5, e + 1.0) - betaln(0.5, 0.5 * (d_ - 1.0))))


def cosine_cdf(s: ArrayLike, d: ArrayLike) -> NDArray[np.float64] | float:
    """``P(S <= s)`` for the cosine ``S`` of two random directions in ``R^d``: the regularised
    incomplete beta function ``I_{(1+s)/2}((d-1)/2, (d-1)/2)``, for ``-1 <= s <= 1``."""
    s_ = v.finite(s, "s")
    if (np.abs(s_) > 1).any():
        raise ValueError(f"s must lie in [-1, 1], got {v._show(s_[np.abs(s_) > 1][0])}")
    half = 0.5 * (_dims(d) - 1.0)
    from scipy.special import betainc  # here, not at the top: importing scipy.special is slow

    return v.scalar_or_array(betainc(half, half, 0.5 * (1.0 + s_)))


def sample_vector_cosines(rng: np.random.Generator, size: int, d: int) -> NDArray[np.float64]:
    """Cosines of ``size`` pairs of independent standard-normal vectors in ``R^d``, formed from
    the vectors themselves (``q.k / (|q| |k|)``): the geometric definition, a route independent
    of :func:`sample_cosines`' Beta draws, at a cost of ``2 size d`` normal numbers."""
    v.generator(rng)
    size_ = v.integer_at_least(size, "size", 0)
    d_ = v.integer_at_least(d, "d", 2)
    q, k = rng.standard_normal((2, size_, d_))
    return np.einsum("ij,ij->i", q, k) / (np.linalg.norm(q, axis=1) * np.linalg.norm(k, axis=1))


def sample_cosines(rng: np.random.Generator, size: int | tuple[int, ...], d: float) -> NDArray[np.float64]:
    """Draw cosines of random direction pairs in ``R^d`` as ``2 B - 1`` with
    ``B ~ Beta((d-1)/2, (d-1)/2)`` (no ``d``-dimensional vectors needed)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    d_ = float(_dims(d))
    shape = (size,) if isinstance(size, numbers.Integral) and not isinstance(size, bool) else size
    if not (isinstance(shape, tuple) and all(isinstance(k, numbers.Integral) and not isinstance(k, bool) and k >= 0 for k in shape)):
        raise TypeError(f"size must be an integer >= 0 or a tuple of them, got {size!r}")
    half = 0.5 * (d_ - 1.0)
    return 2.0 * rng.beta(half, half, size=size) - 1.0


def sample_dot_products(rng: np.random.Generator, size: int, d: int, *, rho: float = 0.0, chunk: int = 2000) -> NDArray[np.float64]:
    """Draw ``size`` dot products ``q . k`` of vectors in ``R^d`` with standard-normal
    coordinates, the pairs ``(q_l, k_l)`` having correlation ``rho`` (``k = rho q +
    sqrt(1 - rho^2) z``). Mean ``rho d``, variance ``d (1 + rho^2)``. The vectors are
    formed ``chunk`` pairs at a time, so memory stays at ``2 chunk d`` numbers."""
    v.generator(rng)
    size_ = v.integer_at_least(size, "size", 0)
    d_ = v.integer_at_least(d, "d", 1)
    chunk_ = v.integer_at_least(chunk, "chunk", 1)
    rho_ = v.real_number(rho, "rho")
    if not -1.0 <= rho_ <= 1.0:
        raise ValueError(f"rho must lie in [-1, 1], got {rho_!r}")
    out = np.empty(size_)
    for start in range(0, size_, chunk_):
        m = min(chunk_, size_ - start)
        q = rng.standard_normal((m, d_))
        k = rho_ * q + np.sqrt(1.0 - rho_ * rho_) * rng.standard_normal((m, d_))
        out[start : start + m] = np.einsum("ij,ij->i", q, k)
    return out


def _alpha_d(alpha: ArrayLike, d: ArrayLike) -> tuple[NDArray, NDArray, tuple[int, ...]]:
    a = v.positive(alpha, "alpha")
    d_ = _bessel_dims(d)
    a, d_ = np.broadcast_arrays(a, d_)
    return a.ravel().copy(), d_.ravel().copy(), a.shape


def _log_mgf_minus_alpha(alpha: NDArray, d: NDArray) -> NDArray:
    """``log M(alpha) - alpha`` (flat arrays): stays moderate for huge alpha."""
    nu = 0.5 * d - 1.0
    return gammaln(nu + 1.0) + nu * np.log(2.0 / alpha) + _log_ive(nu, alpha)


def log_mgf_cosine(alpha: ArrayLike, d: ArrayLike) -> NDArray[np.float64] | float:
    """``log E[exp(alpha s)]`` for cosine scores in ``R^d`` (broadcasting)."""
    a, d_, shape = _alpha_d(alpha, d)
    # M(alpha) = 0F1(; d/2; alpha^2/4): the series directly where it applies (no cancellation)
    series_value, series = _log_hyp0f1(0.5 * d_ - 1.0, a)
    return v.scalar_or_array(np.where(series, series_value, _log_mgf_minus_alpha(a, d_) + a), shape)


def dlog_mgf_cosine(alpha: ArrayLike, d: ArrayLike) -> NDArray[np.float64] | float:
    """``d/dalpha log M(alpha) = I_(d/2)(alpha) / I_(d/2-1)(alpha)``: the mean of
    ``s`` under the tilted density ``exp(alpha s) p(s) / M(alpha)``."""
    a, d_, shape = _alpha_d(alpha, d)
    return v.scalar_or_array(_ratio_and_complement(0.5 * d_ - 1.0, a)[0], shape)


def log_mgf_normal(alpha: ArrayLike) -> NDArray[np.float64] | float:
    """``log E[exp(alpha s)] = alpha^2 / 2`` for standard normal scores."""
    a = v.finite(alpha, "alpha")
    return v.scalar_or_array(0.5 * a * a)
