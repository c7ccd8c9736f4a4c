"""What a chapter may define in its code cells.

Every computation a reader might reuse lives in ``attnscale``. A chapter may still
define two kinds of function, listed here with the reason, and nothing else:

- an **independent route**: the second side of a check, written so that it shares
  no code with the library function it checks (mpmath, a series, a quadrature, a
  grid search, SymPy notation inside a derivation, a count by hand);
- a **display helper**: formatting only, at most three in the whole book.

A new ``def``, ``class`` or ``name = lambda`` in a chapter fails this test until it is
moved to the library or listed below with its reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INDEPENDENT = {
    ("01_softmax_jacobian", "secular_roots"): "eigenvalues of J from the secular equation, against numpy's eigvalsh",
    ("01_softmax_jacobian", "chi"): "the secular function inside secular_roots",
    ("05_gaussian_scores", "alpha_star_mp"): "the Lambert-W closed form in mpmath, against the library's Newton solver",
    ("05_gaussian_scores", "mean_share"): "a grid search for the best decoder scale, against recommend.decoder_best_scale (Brent)",
    ("06_cosine_scores", "log_mgf_series"): "the cosine MGF by its power series, against the Bessel-function route",
    ("06_cosine_scores", "log_foc"): "the first-order condition from the series, for the series optimum",
    ("06_cosine_scores", "optimum_series"): "the cosine optimum from the series, against optimum.alpha_star_cosine",
    ("07_beyond_mean_field", "third_order"): "the near-tie expansion's next term by quadrature",
    ("07_beyond_mean_field", "integrand"): "the integrand of that quadrature",
    ("08_entropy_invariance", "drop_by_quadrature"): "the mean-field entropy drop by direct quadrature, against the Bessel-function route",
    ("08_entropy_invariance", "w"): "the integrand inside drop_by_quadrature",
    ("09_why_softmax", "relu"): "SymPy notation for max(0, v) inside a derivation",
    ("10_training", "sign_test_by_hand"): "the sign test as a binomial sum, against training.paired_comparison",
    ("13_training_protocol", "dot_loss"): "the model's loss written in SymPy, for the reparametrisation identities",
    ("13_training_protocol", "adam"): "one Adam update in SymPy, for the epsilon identity",
    ("13_training_protocol", "norm"): "SymPy notation for a vector norm inside the cosine-gradient derivation",
    ("13_training_protocol", "recomputes"): "best rates and steps to target recomputed from the stored curves by hand",
    ("12_performance", "objective_mp"): "the cosine objective with mpmath's Bessel function, against the library optimum",
    ("12_performance", "M"): "the cosine MGF in mpmath inside objective_mp",
    ("00_use_it", "dot_attention"): "the page's code for a reader to copy, checked against the library's softmax",
    ("00_use_it", "cosine_attention"): "the page's code for a reader to copy, checked against the library's softmax",
}

DISPLAY = {
    ("05_gaussian_scores", "scale_label"): "a figure label naming a scale and the share it keeps",
    ("08_entropy_invariance", "has_value"): "where a rule has a value, so the figure draws it only there",
    ("10_training", "steps_or_never"): "steps to the target as text, 'never' for a run that does not reach it",
    ("13_training_protocol", "readable"): "a stored value as words for a check's name",
    ("12_performance", "spread"): "a stored timing as 'median (IQR) unit'",
    ("12_performance", "times"): "a speed-up with its range",
    ("12_performance", "verdict"): "who is faster, said plainly when the library loses",
}

_DEFINITION = re.compile(r"^\s*(?:def|class)\s+(\w+)|^\s*(\w+)\s*=\s*lambda\b", re.M)


def _definitions() -> set[tuple[str, str]]:
    found = set()
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                for m in _DEFINITION.finditer("".join(cell["source"])):
                    found.add((path.stem, m.group(1) or m.group(2)))
    return found


def test_chapters_define_only_listed_routes_and_display_helpers():
    found = _definitions()
    unlisted = sorted(found - set(INDEPENDENT) - set(DISPLAY))
    assert not unlisted, f"move these to attnscale, or list them here with the reason: {unlisted}"
    stale = sorted((set(INDEPENDENT) | set(DISPLAY)) - found)
    assert not stale, f"listed but no longer defined (remove from the lists): {stale}"


def test_at_most_seven_display_helpers():
    """Display helpers stay few, each used on its own page; one needed by two pages moves to
    attnscale.page (as the power-of-ten formatter did)."""
    assert len(DISPLAY) <= 7
    assert not set(DISPLAY) & set(INDEPENDENT)


def test_the_pattern_sees_every_kind_of_definition():
    text = "def f(x):\n    def g(y):\n        pass\nclass C:\n    pass\nh = lambda v: v\nw = lambda_value\n"
    assert [m.group(1) or m.group(2) for m in _DEFINITION.finditer(text)] == ["f", "g", "C", "h"]


_GLOBAL_PRECISION = re.compile(r"\bmp(?:math)?\.(?:mp\.)?(?:dps|prec)\s*=(?!=)")


def test_no_global_mpmath_precision():
    """Precision is raised locally (``with mpmath.workdps(k):``), never for the rest of a kernel or test session."""
    offenders = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code" and _GLOBAL_PRECISION.search("".join(cell["source"])):
                offenders.append(f"{path.name} cell {k}")
    for folder in ("lib", "tests", "bench", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name != Path(__file__).name and _GLOBAL_PRECISION.search(path.read_text()):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"global mpmath precision set in: {offenders}"
    assert _GLOBAL_PRECISION.search("mpmath.mp.dps = 50") and _GLOBAL_PRECISION.search("mp.mp.prec=200")
    assert not _GLOBAL_PRECISION.search("with mp.workdps(40):") and not _GLOBAL_PRECISION.search("mp.mp.dps == 15")
