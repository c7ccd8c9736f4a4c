"""attnscale._validate: the argument checks every public function uses.

Each message template is checked once here: it begins with the argument's name and shows
the offending value (or type, shape or sum), so that a caller can see what was refused.
Elsewhere tests pin only the name at the start of a message (tests/test_refusals.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnscale import _validate as v
from expect import named


def test_validators_reject_bools_and_pass_valid_values_through():
    with pytest.raises(TypeError, match=named('x')):
        v.real_number(True, "x")
    assert v.real_number(2, "x") == 2.0
    g = np.random.default_rng(0)
    assert v.generator(g) is g


def test_probability_sums_are_allowed_atol_times_the_row_length_and_no_more():
    """A row may miss 1 by atol * max(1, n): exactly that much is accepted (binary fractions, so the
    comparison is exact), a little more is not, for n = 1, 2 and 4."""
    np.testing.assert_array_equal(v.probabilities([0.5, 0.75], atol=0.125), [0.5, 0.75])  # off by 0.25 = 2 x 0.125
    with pytest.raises(ValueError, match=named('p')):
        v.probabilities([0.5, 0.8125], atol=0.125)
    assert v.probabilities([0.25, 0.25, 0.25, 0.25 + 3e-9]).shape == (4,)  # within 4 x 1e-9
    with pytest.raises(ValueError, match=named('q')):
        v.probabilities([1.0 + 1.5e-9], name="q")  # one entry: within 1e-9 only


def test_results_are_floats_even_when_computed_from_integers():
    """scalar_or_array hands back float arrays (or a Python float), whatever the computation's
    dtype."""
    out = v.scalar_or_array(np.array([1, 2, 3]))
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert type(v.scalar_or_array(np.int64(4))) is float


def test_integer_at_least():
    assert v.integer_at_least(5, "n", 2) == 5
    assert v.integer_at_least(np.int64(3), "n", 2) == 3
    assert v.integer_at_least(4.0, "n", 2) == 4
    assert v.integer_at_least(2, "n", 2) == 2  # the minimum itself is accepted
    with pytest.raises(TypeError, match="n must be an integer"):
        v.integer_at_least(2.5, "n", 2)
    with pytest.raises(TypeError, match="n must be an integer"):
        v.integer_at_least(True, "n", 0)


TEMPLATES = [
    # (check, exception, argument's name, what the message must show)
    (lambda: v.as_float_array("a", "x"), TypeError, "x", "'a'"),
    (lambda: v.as_float_array(None, "x"), TypeError, "x", "None"),
    (lambda: v.as_float_array(np.array([object()]), "x"), TypeError, "x", "dtype object"),
    (lambda: v.as_float_array([1j], "x"), TypeError, "x", "complex"),
    (lambda: v.finite([1.0, np.nan], "x"), ValueError, "x", "nan in array of shape (2,)"),
    (lambda: v.positive([2.0, -1.0], "x"), ValueError, "x", "got -1.0"),
    (lambda: v.at_least_1d(np.float64(3.0), "s"), ValueError, "s", "3.0"),
    (lambda: v.at_least_1d(np.zeros((2, 0)), "s"), ValueError, "s", "(2, 0)"),
    (lambda: v.probabilities([0.0, -0.5, 1.5]), ValueError, "p", "-0.5"),
    (lambda: v.probabilities([0.5, 0.8125], name="q"), ValueError, "q", "1.3125"),
    (lambda: v.probabilities([0.3, 0.3], name="q"), ValueError, "q", "0.6"),  # a sum below 1 too
    (lambda: v.lengths([4.0, 1.0]), ValueError, "n", "1.0"),
    (lambda: v.integer_at_least("3", "k", 1), TypeError, "k", "'3'"),
    (lambda: v.integer_at_least(0, "k", 1), ValueError, "k", ">= 1, got 0"),
    (lambda: v.real_number("a", "x"), TypeError, "x", "'a'"),
    (lambda: v.real_number(np.inf, "x"), ValueError, "x", "inf"),
    (lambda: v.real_above(-1.5, "x"), ValueError, "x", "-1.5"),
    (lambda: v.text(3, "s"), TypeError, "s", "3"),
    (lambda: v.generator(5), TypeError, "rng", "int"),
    (lambda: v.mapping([], "cfg"), TypeError, "cfg", "list"),
    (lambda: v.mapping({"a": 1}, "cfg", ("a", "b")), ValueError, "cfg", "'b'"),
    (lambda: v.axis_index(1.5, 2), TypeError, "axis", "1.5"),
    (lambda: v.axis_index(2, 2), ValueError, "axis", "[-2, 1]"),  # axis == ndim: out of range, not wrapped to 0
]


@pytest.mark.parametrize(("check", "error", "name", "shown"), TEMPLATES, ids=[f"{i}-{t[2]}" for i, t in enumerate(TEMPLATES)])
def test_each_message_template_begins_with_the_name_and_shows_what_was_refused(check, error, name, shown):
    with pytest.raises(error, match=named(name)) as info:
        check()
    assert shown in str(info.value)
