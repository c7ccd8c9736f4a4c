"""Tests written to kill the mutants of attnscale.recommend that survived the library
suite together with tests/test_mutants_rules.py (second mutation session), and two that
showed a fault of ``decoder_best_scale`` (a search that raised for T = 2..15 and took a
local maximum for some longer T; replaced by the exact maximum since).

What they pin: the length-scaling table that ``report`` (and so ``python -m attnscale
recommend``) prints, in full, including its header, its row labels, the row of a rule
that has no scale and the rows after it; the training options' defaults and help; the
range of ``n_train`` and ``alpha_train`` and the names in their error messages; the
report's verdict sentence when the mean field is valid and the closed band
``1/VALID <= ratio <= VALID`` it states; the wrapping of the "no rule applies" sentence;
and that ``decoder_best_scale`` gives the largest mean share for every accepted length.

The references are independent of the code under test: hand-written expected text (the
printed table and sentences, the help text, exact error messages); the rows of fixed
scales recomputed here from :mod:`attnscale.exact` (not through ``lengthrules.evaluate``)
at ``alpha`` from closed forms (``alpha0`` and ``alpha0 log n / log n0``); a stand-in for
the exact ``E sum p^2`` where the real model never reaches a branch (the mean field is
never within 10% at its optimum); and, for the decoder, a dense grid over the whole range
where the mean share is positive, with each position's optimum from SciPy's Lambert W.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import lambertw

from attnscale import exact as E
from attnscale import recommend as R
from expect import raises_exactly

NEEDLE = 5.0


def _row(label: str, alpha: float, n: float) -> str:
    """A row of the length table from attnscale.exact at a given scale and length."""
    h = float(E.expected_entropy(n, alpha))
    gradient = alpha * (1.0 - float(E.expected_sum_p2(n, alpha)))
    weight = float(E.needle_weight(n, alpha, NEEDLE))
    return f"{label:34s}{alpha:9.3f} {h:8.3f} {h / math.log(n):10.3f} {gradient:9.3f} {weight:11.4g}"


# ---- the length-scaling table -------------------------------------------------------------

TABLE_4096 = """\
Length scaling (ch-entropy): trained on n0 = 512 keys at alpha0 = 1, run on n = 4096 keys;
exact expectations over independent normal scores, a planted key at score 5:
                                      alpha      E H  E H/log n  gradient  key weight
at training (n0, alpha0)              1.000    5.742      0.920     0.995      0.1501
fixed scale                           1.000    7.818      0.940     0.999     0.02152
constant entropy                      2.314    5.742      0.690     2.263       0.643
constant key weight                   1.560    7.107      0.854     1.555      0.1501
log ratio alpha0 ln n / ln n0         1.333    7.431      0.893     1.331     0.07319
dynamic YaRN                          1.459    7.257      0.872     1.456      0.1106
The log ratio is Su's rule and, relative to training, also Qwen's, LongRoPE's,
Scalable-Softmax's and Chiang and Cholak's; YaRN's s is read as n / n0.
"""

TABLE_1E15 = """\
Length scaling (ch-entropy): trained on n0 = 512 keys at alpha0 = 1, run on n = 1e+15 keys;
exact expectations over independent normal scores, a planted key at score 5:
                                      alpha      E H  E H/log n  gradient  key weight
at training (n0, alpha0)              1.000    5.742      0.920     0.995      0.1501
fixed scale                           1.000   34.039      0.986     1.000   9.002e-14
constant entropy                      8.564    5.742      0.166     7.539    1.32e-12
constant key weight                    none  (no scale keeps the key's weight at this n)
log ratio alpha0 ln n / ln n0         5.537   19.221      0.557     5.535   2.325e-10
dynamic YaRN                         14.669    1.563      0.045     7.948   9.613e-20
The log ratio is Su's rule and, relative to training, also Qwen's, LongRoPE's,
Scalable-Softmax's and Chiang and Cholak's; YaRN's s is read as n / n0.
"""


def test_command_line_prints_the_length_table_with_the_default_training(capsys):
    """Without --n-train and --alpha-train the rules start from (512, 1): the whole table,
    header and labels included, as printed; the rows at fixed scales agree with exact."""
    assert R.main(["recommend", "--n", "4096", "--d", "64"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("factor 1.1 up to alpha = 1.716.\n" + TABLE_4096)
    rows = TABLE_4096.splitlines()
    assert rows[3] == _row("at training (n0, alpha0)", 1.0, 512.0)
    assert rows[4] == _row("fixed scale", 1.0, 4096.0)
    assert rows[7] == _row("log ratio alpha0 ln n / ln n0", 12 / 9, 4096.0)


def test_report_rows_follow_the_training_scale():
    """At alpha0 = 1.5 the fixed rule keeps 1.5 and the note's rule gives 1.5 * 12/9 = 2."""
    lines = R.report(4096, 64, "dot", 512, 1.5).splitlines()
    top = lines.index("Length scaling (ch-entropy): trained on n0 = 512 keys at alpha0 = 1.5, run on n = 4096 keys;")
    assert lines[top + 3] == _row("at training (n0, alpha0)", 1.5, 512.0)
    assert lines[top + 4] == _row("fixed scale", 1.5, 4096.0)
    assert lines[top + 7] == _row("log ratio alpha0 ln n / ln n0", 2.0, 4096.0)
    assert lines[top + 8] == _row("dynamic YaRN", 1.5 * (0.1 * math.log(8) + 1) ** 2, 4096.0)


def test_report_marks_a_rule_without_a_scale_and_goes_on():
    """At n = 1e15 no scale keeps the key's weight: that row says so, and the note's rule
    (ln 1e15 / ln 512 = 5.537) is still printed after it."""
    text = R.report(1e15, 64)
    assert text.endswith(TABLE_1E15.rstrip("\n"))
    assert TABLE_1E15.splitlines()[7] == _row("log ratio alpha0 ln n / ln n0", math.log(1e15) / math.log(512), 1e15)


def test_no_rule_sentence_wraps_at_88_columns():
    """The sentence for n <= n0 is wrapped at 88 columns like the rest of the prose; with
    n0 = 1e6 the first line is 84 characters and "(set" would make it 89."""
    lines = R.report(512, 64, "dot", 1e6).splitlines()
    assert lines[-2:] == ["Length scaling: n does not exceed the training length n0 = 1e+06, so no rule applies",
                          "(set n_train, --n-train)."]


# ---- the training arguments ---------------------------------------------------------------


def test_training_length_two_and_training_scale_fifty_are_accepted():
    """n_train is a real >= 2 and alpha_train lies in (0, 50], both ends included."""
    r = R.length_rules(4096, 2)
    assert r["fixed"] == 1.0
    assert r["log_ratio"] == pytest.approx(12.0, rel=1e-15)  # log 4096 / log 2
    assert float(E.expected_entropy(4096.0, r["entropy"])) == pytest.approx(float(E.expected_entropy(2.0, 1.0)), rel=1e-9)
    assert "trained on n0 = 2 keys at alpha0 = 1," in R.report(16, 64, "dot", 2)
    # the report checks alpha_train even where no rule applies (n <= n_train): cheap to reach 50
    assert R.report(256, 64, "dot", 512, 50.0).endswith("no rule applies (set\nn_train, --n-train).")
    raises_exactly(ValueError, "alpha_train must be at most 50 (the exact theory's range), got 50.5", R.report, 256, 64, "dot", 512, 50.5)
    raises_exactly(ValueError, "n_train must be at least 2, got 1.999", R.length_rules, 4096, 1.999)


def test_length_rules_name_the_bad_argument():
    raises_exactly(ValueError, "n must be > 1 (a softmax over n <= 1 keys has no gradient), got 1.0", R.length_rules, 1)
    raises_exactly(TypeError, "n_train must be a real number, got 'x'", R.length_rules, 4096, "x")
    raises_exactly(TypeError, "alpha_train must be a real number, got 'x'", R.length_rules, 4096, 512, "x")
    raises_exactly(ValueError, "alpha_train must be > 0, got 0.0", R.length_rules, 4096, 512, 0.0)


def test_command_line_help_for_the_training_options(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit) as err:
        R.main(["recommend", "--help"])
    assert err.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.endswith(" --n-train N_TRAIN training length for the length rules (default 512)"
                         " --alpha-train ALPHA_TRAIN scale used in training, as a multiple of 1/sqrt(d) (default 1)")


# ---- the mean field's verdict -------------------------------------------------------------


def _exact_side_at_ratio(monkeypatch, ratio: float) -> None:
    """Replace exact.expected_sum_p2 (as mean_field_check sees it) by a value that makes
    the dot-score ratio ``exp(alpha^2)/n / exact`` come out as exactly ``ratio``."""

    def fake(n, a, d=None):
        mean_field = math.exp(a * a) / n
        value = mean_field / ratio
        for _ in range(8):  # step by ulps until the division lands on ratio
            if mean_field / value == ratio:
                return value
            value = np.nextafter(value, math.inf if mean_field / value > ratio else -math.inf)
        raise AssertionError(f"no float gives the ratio {ratio!r}")

    monkeypatch.setattr(R.exact, "expected_sum_p2", fake)


@pytest.mark.parametrize("ratio", [R.VALID, 1.0 / R.VALID])
def test_mean_field_check_band_includes_its_ends(monkeypatch, ratio):
    """The band the report states, "a ratio between 1/1.1 and 1.1 counts as valid", includes both ends."""
    _exact_side_at_ratio(monkeypatch, ratio)
    c = R.mean_field_check(512, 64)  # at n = 512 some float lands on each end exactly
    assert c["ratio"] == ratio and c["valid"] == 1.0


def test_report_says_so_when_the_mean_field_is_valid(monkeypatch):
    _exact_side_at_ratio(monkeypatch, 1.0)
    flat = " ".join(R.report(512, 64).split())
    assert "a ratio of 1, so the mean field is valid there (a ratio between 1/1.1 and 1.1 counts as valid)." in flat


# ---- the decoder's best scale: every accepted length, the largest mean share ---------------
# These two tests fail on the code of commit cc51867 (see the session's report): for
# T = 2..15 the bounded search's first probe, 0.2 + 0.382 * 3.8 = 1.65, lies where every
# position's share is 0 (beyond sqrt(log T)), the search drifts to an edge and the function
# raises "T too large"; and the mean share has a local maximum on many of the pieces
# between sqrt(log n) and sqrt(log(n + 1)), so for some T the search returns one of those.


def _grid_best(T: int, points: int = 20001) -> tuple[float, float]:
    """The mean share's largest value on a grid of alpha over (0, sqrt(log T)] (beyond
    sqrt(log T) every position's mean-field gradient is negative, counted as 0), with each
    position's best gradient from SciPy's Lambert W: a lower bound on the true maximum."""
    t = np.arange(2, T + 1, dtype=float)
    a_t = np.sqrt(lambertw(t * math.sqrt(math.e) / 2).real - 0.5)
    best = a_t * -np.expm1(a_t**2 - np.log(t))
    grid = np.linspace(0.0, math.sqrt(math.log(T)), points)[1:]
    mean = (np.maximum(grid[:, None] * -np.expm1(grid[:, None] ** 2 - np.log(t)), 0.0) / best).mean(axis=1)
    k = int(np.argmax(mean))
    return float(grid[k]), float(mean[k])


def test_decoder_best_scale_of_the_shortest_decoders():
    """T = 2 has one position: its own optimum alpha*(2) = sqrt(W0(sqrt e) - 1/2), which
    keeps all of its gradient. T = 3..15: the grid's best, found to the grid's spacing."""
    alpha, share = R.decoder_best_scale(2)
    assert alpha == pytest.approx(math.sqrt(lambertw(math.sqrt(math.e)).real - 0.5), rel=1e-9)
    assert share == pytest.approx(1.0, rel=1e-12)
    for T in range(3, 16):
        x, top = _grid_best(T)
        alpha, share = R.decoder_best_scale(T)
        assert share >= top - 1e-12 and share == pytest.approx(top, abs=1e-7), T
        assert abs(alpha - x) < 1e-3, T


@pytest.mark.parametrize("T", [73, 156, 278])
def test_decoder_best_scale_is_the_largest_mean_share_not_a_local_one(T):
    x, top = _grid_best(T)
    alpha, share = R.decoder_best_scale(T)
    assert share >= top - 1e-12 and abs(alpha - x) < 1e-3
    assert float(R.decoder_share(alpha, T).mean()) == pytest.approx(share, rel=1e-12)
