"""``claims.numbers_of`` on records written out by hand (survivors of the mutation run over
``attnscale.claims``, tests/MUTANTS.md): it collects, rounded to six significant digits,
every number of the four fields it names (and no boolean), and refuses a record that is not
a dict with a message naming it. References: the numbers written into each record."""

from attnscale.claims import numbers_of
from expect import raises_exactly


def test_every_field_it_names_is_read_and_no_other():
    rec = {"id": "x", "claimed": "1 < 2", "claimed_value": 0.123456789, "inputs": {"n": 512, "flag": True, "alphas": [1.5, 2.5]},
           "cells": [[3, 4.0]], "rtol": 0.01, "note": 7}
    assert numbers_of(rec) == {0.123457, 512.0, 1.5, 2.5, 3.0, 4.0}
    assert numbers_of({"claimed_value": [0.25]}) == {0.25}


def test_a_record_that_is_not_a_dict_is_refused_by_name():
    raises_exactly(TypeError, "rec must be a dict, got list", numbers_of, [1.0])
