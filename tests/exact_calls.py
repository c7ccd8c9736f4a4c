"""The six public expectations of :mod:`attnscale.exact` by short name, with their documented
relative accuracies (docstrings of ``attnscale.exact.bulk`` and ``attnscale.exact.needle``);
shared by the tests that walk reference tables (not a test module)."""

from attnscale import exact as E

CALL = {
    "p2": E.expected_sum_p2,
    "hl1": E.expected_half_l1,
    "H": E.expected_entropy,
    "w": E.needle_weight,
    "np2": E.needle_sum_p2,
    "nH": E.needle_entropy,
}
RTOL = {"p2": 1e-12, "hl1": 1e-12, "H": 1e-11, "w": 1e-11, "np2": 1e-11, "nH": 1e-11}
