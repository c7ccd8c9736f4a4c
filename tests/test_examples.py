"""The examples in the library's docstrings run and show what they say (doctest)."""

import doctest
import importlib

import pytest

MODULES = ["attnscale.optimum", "attnscale.softmax", "attnscale.exact.bulk", "attnscale.lengthrules", "attnscale.recommend", "attnscale.training.loop"]


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
