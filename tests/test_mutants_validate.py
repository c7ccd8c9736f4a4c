"""Tests written for the mutants of attnscale._validate (and one of scores) that survived the
rest of the suite in the core-modules run of tools/mutate.sh (see tests/MUTANTS.md).

They pin what the house rule asks of a bad argument: the error names it (``p`` by default for
probability vectors), shows the offending entry, and the tolerance on a row's sum is the
documented ``atol`` times the row's length; and results are floats.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnscale import _validate as v
from attnscale.scores import log_mgf_cosine


def test_probability_errors_name_p_by_default_and_show_the_first_negative_entry():
    """The default name is p; the message shows the first negative entry, not a zero or a
    small positive one before it (mutants 1, 2, 17, 18)."""
    with pytest.raises(ValueError, match=r"^p must be >= 0, got -0\.5$"):
        v.probabilities([0.0, -0.5, 1.5])
    with pytest.raises(ValueError, match=r"^p must be >= 0, got -0\.25$"):
        v.probabilities([0.5, -0.25, 0.75])


def test_probability_sums_are_allowed_atol_times_the_row_length_and_no_more():
    """A row may miss 1 by atol * max(1, n): exactly that much is accepted (binary fractions, so the
    comparison is exact), a little more is not, for n = 1, 2 and 4 (mutants 28, 29, 34, 38)."""
    np.testing.assert_array_equal(v.probabilities([0.5, 0.75], atol=0.125), [0.5, 0.75])  # off by 0.25 = 2 x 0.125
    with pytest.raises(ValueError, match=r"^p must sum to 1 along its last axis, got a sum of 1\.3125$"):
        v.probabilities([0.5, 0.8125], atol=0.125)
    assert v.probabilities([0.25, 0.25, 0.25, 0.25 + 3e-9]).shape == (4,)  # within 4 x 1e-9
    with pytest.raises(ValueError, match=r"^q must sum to 1"):
        v.probabilities([1.0 + 1.5e-9], name="q")  # one entry: within 1e-9 only


def test_results_are_floats_even_when_computed_from_integers():
    """scalar_or_array hands back float arrays (or a Python float), whatever the computation's
    dtype (mutants 3, 5)."""
    out = v.scalar_or_array(np.array([1, 2, 3]))
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert type(v.scalar_or_array(np.int64(4))) is float


def test_cosine_dimension_error_shows_the_offending_entry():
    """d below 2 is refused with the first bad entry shown (scores._dims 12)."""
    with pytest.raises(ValueError, match=r"^d must be >= 2 .*got 1(\.0)?$"):
        log_mgf_cosine(1.0, [3.0, 1.0])
