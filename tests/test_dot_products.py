"""Sampled dot products of Gaussian vectors (scores.sample_dot_products) against their moments."""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.scores import sample_dot_products


@pytest.mark.parametrize("d, rho", [(1, 0.0), (16, 0.0), (64, 0.5), (8, -0.8)])
def test_mean_and_variance(d, rho):
    x = sample_dot_products(np.random.default_rng(3), 40_000, d, rho=rho)
    var = x.var(ddof=1)
    se_mean = np.sqrt(var / x.size)
    se_var = np.sqrt((np.mean((x - x.mean()) ** 4) - var**2) / x.size)
    assert abs(x.mean() - rho * d) < 4 * se_mean
    assert abs(var - (1 + rho**2) * d) < 4 * se_var


def test_fully_correlated_keys_are_squared_norms():
    rng = np.random.default_rng(5)
    q = rng.standard_normal((3, 6))
    x = sample_dot_products(np.random.default_rng(5), 3, 6, rho=1.0)
    np.testing.assert_allclose(x, np.sum(q * q, axis=1), rtol=1e-14)
    assert np.all(sample_dot_products(np.random.default_rng(5), 3, 6, rho=-1.0) < 0)


def test_chunks_fill_every_entry_and_seed_reproduces():
    a = sample_dot_products(np.random.default_rng(9), 1001, 4, chunk=100)
    b = sample_dot_products(np.random.default_rng(9), 1001, 4, chunk=100)
    assert a.shape == (1001,) and np.array_equal(a, b) and np.all(np.isfinite(a))
    assert sample_dot_products(np.random.default_rng(9), 0, 4).shape == (0,)
    # one chunk or many: the same draws when a chunk holds the whole sample
    np.testing.assert_array_equal(sample_dot_products(np.random.default_rng(1), 50, 4, chunk=50), sample_dot_products(np.random.default_rng(1), 50, 4, chunk=80))
