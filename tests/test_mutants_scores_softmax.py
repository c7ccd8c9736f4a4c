"""Tests written for the mutants of scores and softmax that survived the rest of the suite
(make mutate on the core modules, session of 2026-11-26, code of commit 16825ff).

Every expected value comes from a route independent of the code under test: the error
message the house rule asks for (the argument named, the offending entry shown), the
documented construction of a sampler written out here with the same generator, a closed
form, or an eigenvalue of the dense Jacobian at 30 digits with mpmath.
"""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest

from attnscale.scores import cosine_cdf, cosine_kernel_mass, sample_dot_products, sample_vector_cosines
from attnscale.softmax import jacobian_spectral_norm, power_weights

EPS = np.finfo(float).eps


def _raises_exactly(kind, message, call):
    with pytest.raises(kind) as info:
        call()
    assert str(info.value) == message


# ---- scores: argument checks ---------------------------------------------------------


@pytest.mark.parametrize(
    "exponent, message",
    [
        (np.inf, "exponent must be finite, got inf in inf"),
        (-1.5, "exponent must be > -1 (the integral diverges), got -1.5"),
        # the entry shown is the first one <= -1, not the first entry (0.5 is a valid exponent)
        ([0.5, -2.0], "exponent must be > -1 (the integral diverges), got -2.0"),
    ],
    ids=["infinite", "below-minus-one", "array"],
)
def test_cosine_kernel_mass_errors_name_exponent_and_show_the_bad_entry(exponent, message):
    """House rule: bad input raises a ValueError naming the argument and the offending value (mutants 8, 14, 16)."""
    _raises_exactly(ValueError, message, lambda: cosine_kernel_mass(5, exponent))


@pytest.mark.parametrize(
    "s, message",
    [
        (np.nan, "s must be finite, got nan in nan"),
        (1.5, "s must lie in [-1, 1], got 1.5"),
        # s = 1 and s = -1 are allowed (the ends of the support): the entry shown is 1.5
        ([1.0, -1.0, 1.5], "s must lie in [-1, 1], got 1.5"),
    ],
    ids=["nan", "above-one", "array-with-both-ends"],
)
def test_cosine_cdf_errors_name_s_and_show_the_bad_entry(s, message):
    """House rule: the message names s, in lower case, and shows the entry outside [-1, 1] (mutants 3, 6, 7, 12, 14)."""
    _raises_exactly(ValueError, message, lambda: cosine_cdf(s, 5))


def test_sample_vector_cosines_errors_name_size_and_d():
    """House rule: the messages name size and d (mutants 9, 19)."""
    rng = np.random.default_rng(0)
    _raises_exactly(ValueError, "size must be an integer >= 0, got -1", lambda: sample_vector_cosines(rng, -1, 3))
    _raises_exactly(ValueError, "d must be an integer >= 2, got 1", lambda: sample_vector_cosines(rng, 3, 1))


def test_sample_vector_cosines_in_two_dimensions_and_of_size_zero_by_hand():
    """d = 2 is the smallest documented dimension and size = 0 an allowed sample size; the
    cosines are q.k / (|q| |k|) of the generator's next 2 size d normal numbers (mutants 11, 21)."""
    got = sample_vector_cosines(np.random.default_rng(11), 6, 2)
    q, k = np.random.default_rng(11).standard_normal((2, 6, 2))
    by_hand = (q[:, 0] * k[:, 0] + q[:, 1] * k[:, 1]) / np.sqrt((q * q).sum(axis=1) * (k * k).sum(axis=1))
    np.testing.assert_allclose(got, by_hand, rtol=8 * EPS, atol=8 * EPS)
    assert np.all(np.abs(got) <= 1.0)
    empty = sample_vector_cosines(np.random.default_rng(11), 0, 2)
    assert empty.shape == (0,)


@pytest.mark.parametrize(
    "kwargs, kind, message",
    [
        ({"size": -1}, ValueError, "size must be an integer >= 0, got -1"),
        ({"d": 0}, ValueError, "d must be an integer >= 1, got 0"),
        ({"chunk": 0}, ValueError, "chunk must be an integer >= 1, got 0"),
        ({"rho": "x"}, TypeError, "rho must be a real number, got 'x'"),
        ({"rho": np.nan}, ValueError, "rho must be finite, got nan"),
    ],
    ids=["size", "d", "chunk", "rho-not-a-number", "rho-nan"],
)
def test_sample_dot_products_errors_name_each_argument(kwargs, kind, message):
    """House rule: the message names the bad argument (mutants 11, 21, 31, 39)."""
    args = {"size": 3, "d": 2} | {key: val for key, val in kwargs.items() if key in ("size", "d")}
    options = {key: val for key, val in kwargs.items() if key in ("rho", "chunk")}
    _raises_exactly(kind, message, lambda: sample_dot_products(np.random.default_rng(0), args["size"], args["d"], **options))


def _dot_products_by_hand(seed, size, d, rho, chunk):
    """The documented construction: chunk pairs at a time, q then z from the generator,
    k = rho q + sqrt(1 - rho^2) z; also returns sum |q_l k_l| per pair for the rounding bound."""
    rng = np.random.default_rng(seed)
    out, scale = [], []
    for start in range(0, size, chunk):
        m = min(chunk, size - start)
        q = rng.standard_normal((m, d))
        z = rng.standard_normal((m, d))
        k = rho * q + np.sqrt(1.0 - rho * rho) * z
        out.append((q * k).sum(axis=1))
        scale.append(np.abs(q * k).sum(axis=1))
    return np.concatenate(out), np.concatenate(scale)


@pytest.mark.parametrize(
    "size, d, options, rho, chunk",
    [
        # the defaults: rho = 0 and chunks of 2000 (chapter 2 draws 20 000 products with them
        # from a fixed seed, so its printed numbers depend on these exact draws)
        (2500, 3, {}, 0.0, 2000),
        (5, 4, {"rho": 0.6, "chunk": 1}, 0.6, 1),  # chunk = 1 is allowed
        (7, 2, {"rho": -0.3, "chunk": 3}, -0.3, 3),
    ],
    ids=["defaults", "chunk-of-one", "negative-rho"],
)
def test_sample_dot_products_follow_the_documented_construction_draw_for_draw(size, d, options, rho, chunk):
    """Pins the documented k = rho q + sqrt(1 - rho^2) z, the default rho = 0 and chunk = 2000,
    and chunk = 1, against the construction written out by hand (mutants 1, 2, 33, 66, 68)."""
    got = sample_dot_products(np.random.default_rng(21), size, d, **options)
    ref, scale = _dot_products_by_hand(21, size, d, rho, chunk)
    assert got.shape == (size,)
    # the two sums differ only in their order: |error| <= d eps sum |q_l k_l| for each
    assert np.all(np.abs(got - ref) <= 2 * d * EPS * scale)


# ---- softmax ----------------------------------------------------------------------------


def test_power_weights_default_scale_keeps_scores_near_the_float64_limit():
    """The default scale is 1, so finite scores up to 1e308 give weights without overflow:
    relu(s)^2 / sum relu(s)^2 = (4, 1) / 5 for s = (1e308, 5e307) (mutant 2). The logarithms
    are near 709, where an ulp is 1.1e-13; a few of them, doubled by m = 2, bound the error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = power_weights([1e308, 5e307])
    np.testing.assert_allclose(got, [0.8, 0.2], rtol=1e-12)


def _mp_spectral_norm(p):
    """Largest eigenvalue of diag(p) - p p^T at 30 digits (mpmath's symmetric eigensolver)."""
    with mp.workdps(30):
        n = len(p)
        J = mp.matrix(n, n)
        for i in range(n):
            for j in range(n):
                J[i, j] = (mp.mpf(p[i]) if i == j else 0) - mp.mpf(p[i]) * mp.mpf(p[j])
        return float(max(mp.eigsy(J, eigvals_only=True)))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_jacobian_spectral_norm_lies_in_the_kth_bisection_bracket(k):
    """After k halvings the answer lies in the bracket that bisection leaves around the
    eigenvalue: within a factor (p1/p2)^(2^-k) of it on a bracket [p2, p1] with p2 > 0, and in
    [0, p1 2^-k] on a one-hot row, whose eigenvalue is 0; a norm is never negative (mutant 72)."""
    alpha = 1.7
    for p in ([0.25, 0.75], [0.2, 0.3, 0.5], [0.1, 0.6, 0.05, 0.25]):
        got = float(jacobian_spectral_norm(p, alpha, iterations=k))
        mu = alpha * _mp_spectral_norm(p)
        top = sorted(p, reverse=True)
        r = (top[0] / top[1]) ** (2.0**-k) * (1 + 8 * EPS)
        assert mu / r <= got <= mu * r, (p, k, got, mu)
    for p in ([1.0, 0.0, 0.0], [0.0, 1.0], [1.0]):
        got = float(jacobian_spectral_norm(p, alpha, iterations=k))
        assert 0.0 <= got <= alpha * 2.0**-k, (p, k, got)


def test_jacobian_spectral_norm_with_many_iterations_is_silent_and_exact():
    """Any iteration count is allowed: after 1100 halvings the bracket [0, 1] of a one-hot row
    has shrunk to 0, its exact eigenvalue, and the masked 0/0 of its zero entries must not
    warn (mutants 74, 76); a two-key row keeps 2 p1 p2 = 0.375."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jacobian_spectral_norm(np.array([[1.0, 0.0, 0.0], [0.25, 0.75, 0.0]]), 1.0, iterations=1100)
    assert got[0] == 0.0
    assert got[1] == pytest.approx(0.375, rel=4 * EPS)
