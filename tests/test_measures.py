"""Jacobian measures and entropies against independent references."""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnscale.entropy import collision, effective_number, renyi2, shannon
from attnscale.softmax import (
    jacobian_frobenius,
    jacobian_max_entry,
    jacobian_spectral_norm,
    softmax,
    softmax_jacobian,
)

prob_vectors = (
    arrays(np.float64, st.integers(1, 12), elements=st.floats(0.0, 1e3))
    .filter(lambda w: w.sum() > 0)
    .map(lambda w: w / w.sum())
)


@settings(max_examples=200, deadline=None)
@given(prob_vectors, st.floats(1e-2, 1e2))
def test_measures_match_the_dense_matrix(p, alpha):
    J = softmax_jacobian(p, alpha)
    np.testing.assert_allclose(jacobian_frobenius(p, alpha), np.linalg.norm(J), rtol=1e-9, atol=1e-14 * alpha)
    np.testing.assert_allclose(jacobian_max_entry(p, alpha), np.abs(J).max(), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(jacobian_spectral_norm(p, alpha), np.linalg.norm(J, 2), rtol=1e-9, atol=1e-13 * alpha)


def test_spectral_norm_batched_and_ties():
    rng = np.random.default_rng(0)
    p = softmax(rng.normal(size=(5, 7, 30)) * 2)
    ref = np.linalg.eigvalsh(softmax_jacobian(p, 1.5))[..., -1]
    np.testing.assert_allclose(jacobian_spectral_norm(p, 1.5), ref, rtol=1e-12)
    np.testing.assert_allclose(jacobian_spectral_norm([0.5, 0.5], 1.0), 0.5, rtol=1e-15)
    np.testing.assert_allclose(jacobian_spectral_norm([0.4, 0.4, 0.2], 1.0), np.linalg.eigvalsh(softmax_jacobian([0.4, 0.4, 0.2]))[-1], rtol=1e-12)
    assert jacobian_spectral_norm([1.0, 0.0, 0.0]) == pytest.approx(0.0, abs=1e-15)
    assert jacobian_spectral_norm([1.0]) == pytest.approx(0.0, abs=1e-15)


def test_entropies_against_mpmath():
    p = np.array([0.5, 0.25, 0.125, 0.125])
    with mp.workdps(40):
        ref_h = -mp.fsum(mp.mpf(x) * mp.log(mp.mpf(x)) for x in p)
    np.testing.assert_allclose(shannon(p), float(ref_h), rtol=1e-15)
    np.testing.assert_allclose(collision(p), 0.34375, rtol=1e-15)
    np.testing.assert_allclose(renyi2(p), float(-mp.log(mp.mpf("0.34375"))), rtol=1e-15)
    np.testing.assert_allclose(effective_number(p), 1 / 0.34375, rtol=1e-15)
    assert shannon([1.0, 0.0]) == 0.0


@settings(max_examples=200, deadline=None)
@given(prob_vectors)
def test_renyi2_never_exceeds_shannon_and_log_n(p):
    n = p.size
    assert renyi2(p) <= shannon(p) + 1e-12
    assert shannon(p) <= np.log(n) + 1e-12
    assert 1 - 1e-12 <= effective_number(p) <= n * (1 + 1e-12)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: shannon([0.5, 0.4]), "p must sum to 1"),
        (lambda: renyi2([np.nan, 1.0]), "p must be finite"),
        (lambda: collision([-0.1, 1.1]), "p must be >= 0"),
        (lambda: jacobian_spectral_norm([0.5, 0.5], iterations=0), "iterations must be an integer >= 1"),
        (lambda: jacobian_frobenius([0.5, 0.5], alpha=-1), "alpha must be > 0"),
        (lambda: jacobian_max_entry(0.5), "p must have at least one axis"),
    ],
)
def test_bad_input(call, words):
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_spectral_norm_in_saturated_rows():
    p = softmax(np.array([[30.0, 5.0, 4.0, 0.0], [10.0, -10.0, -12.0, -30.0]]))
    ref = np.linalg.eigvalsh(softmax_jacobian(p))[..., -1]
    np.testing.assert_allclose(jacobian_spectral_norm(p), ref, rtol=1e-9)


def test_spectral_norm_relative_accuracy_when_it_is_tiny():
    # p_(2) ~ 1e-17 next to p_(1) ~ 1: the root is ~2 p_(2); LAPACK on the accurate dense J is the reference
    p = softmax(np.array([40.0, 0.0, -6.0, -9.0]))
    np.testing.assert_allclose(jacobian_spectral_norm(p), np.linalg.eigvalsh(softmax_jacobian(p))[-1], rtol=1e-12)
    assert jacobian_spectral_norm(p) <= jacobian_frobenius(p)
