import numpy as np
import pytest

from attnscale.entropy import mean_field_entropy_cosine, mean_field_entropy_normal, shannon, softmax_entropy
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
    d = 1e5
    np.testing.assert_allclose(mean_field_entropy_cosine(np.sqrt(d) * 1.0, 512.0, d), np.log(512) - 0.5, rtol=1e-3)
    with pytest.raises(ValueError, match="n must be > 1"):
        mean_field_entropy_normal(1.0, 1.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        mean_field_entropy_cosine(0.0, 10.0, 16.0)
