import mpmath as mp
import numpy as np
import pytest

from attnscale.entropy import alpha_for_mean_field_entropy, mean_field_entropy_cosine, mean_field_entropy_normal, shannon, softmax_entropy
from attnscale.softmax import softmax


def test_softmax_entropy_matches_shannon_and_handles_saturation_and_masks():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((50, 30))
    for a in (0.1, 1.0, 30.0, 1e4):
        np.testing.assert_allclose(softmax_entropy(s, a), shannon(softmax(s, a)), rtol=1e-10, atol=1e-13)
    assert softmax_entropy([0.0, -np.inf, 0.0]) == pytest.approx(np.log(2), rel=1e-15)
    assert softmax_entropy([1e300, 0.0]) == 0.0


def test_mean_field_entropies():
    np.testing.assert_allclose(mean_field_entropy_normal(1.0, 512), np.log(512) - 0.5)
    # cosine entropy approaches the normal one with alpha = sqrt(d) * a for large d
    d = 65536.0  # the largest d supported
    np.testing.assert_allclose(mean_field_entropy_cosine(np.sqrt(d) * 1.0, 512.0, d), np.log(512) - 0.5, rtol=1e-3)
    with pytest.raises(ValueError, match="n must be > 1"):
        mean_field_entropy_normal(1.0, 1.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        mean_field_entropy_cosine(0.0, 10.0, 16.0)


def _mp_cosine_entropy_d3(alpha, n):
    """The mean-field entropy for d = 3 in closed form (M(a) = sinh(a)/a), in mpmath at 400 digits
    (enough for a up to 1e308, where log(sinh a / a) and a coth a agree to 308 digits)."""
    with mp.workdps(400):
        a = mp.mpf(alpha)
        return mp.log(n) + a + mp.log(-mp.expm1(-2 * a)) - mp.log(2) - mp.log(a) - a / mp.tanh(a) + 1


@pytest.mark.parametrize("alpha", [30.0, 1e3, 1e6, 1e12, 1e18, 1e100, 6e307, 1.7e308])
def test_mean_field_entropy_cosine_keeps_its_accuracy_at_huge_scales(alpha):
    """log M and alpha (log M)' both grow like alpha; written as (log M - alpha) + alpha (1 - (log M)')
    the entropy keeps an absolute error below 1e-12 (measured: at most 6.3e-13, at alpha = 1e3, from
    the Bessel ratio's complement there), where subtracting the two lost every digit by alpha = 1e18."""
    got = mean_field_entropy_cosine(alpha, 512.0, 3)
    assert np.isfinite(got)
    assert abs(got - float(_mp_cosine_entropy_d3(alpha, 512))) <= 1e-12


@pytest.mark.parametrize("n", [1e10, 1e20, 1e150, 1e300])
def test_cosine_entropy_rule_for_huge_lengths(n):
    """For d = 3 and a large root, H = log n + 1 - log 2 - log alpha up to O(alpha e^-2alpha), so the
    scale that keeps the training entropy t is n e^(1 - t) / 2: the rule meets it to 1e-12 relative."""
    target = _mp_cosine_entropy_d3(1.0, 512)
    with mp.workdps(400):
        expected = float(mp.mpf(n) * mp.exp(1 - target) / 2)
    assert alpha_for_mean_field_entropy(n, 512, 1.0, d=3) == pytest.approx(expected, rel=1e-12, abs=0)


def test_cosine_entropy_rule_up_to_and_beyond_the_largest_float():
    """At huge scales (d = 3) alpha / n is what the entropy keeps, so doubling n doubles the scale:
    6e307 becomes 1.2e308; from 1e308 the doubled scale overflows and is refused with n named."""
    assert alpha_for_mean_field_entropy(1024.0, 512, 6e307, d=3) == pytest.approx(1.2e308, rel=1e-12)
    with pytest.raises(ValueError, match=r"^n = 1024\.0: .*beyond the largest float"):
        alpha_for_mean_field_entropy(1024.0, 512, 1e308, d=3)


@pytest.mark.parametrize("d", [None, 3, 4096])
def test_entropy_rule_at_the_training_length_is_the_training_scale(d):
    """At n = n_train the rule keeps the training scale, also when alpha_train is so small that the
    training entropy rounds to log n_train (it raised 'n must exceed e^H' there)."""
    for a0 in (1e-8, 0.3, 1.0):
        assert alpha_for_mean_field_entropy(512.0, 512, a0, d=d) == a0


def test_cosine_entropy_at_subnormal_scales_is_silent():
    """alpha below 1e-308 is in the series region; the large-alpha route is not evaluated there
    (its 2/alpha overflowed with a warning, though the result was discarded)."""
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # underflow of alpha^2 is harmless
        got = mean_field_entropy_cosine(1e-309, 512.0, 64)
    assert got == pytest.approx(np.log(512), abs=1e-15)
