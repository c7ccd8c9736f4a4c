"""attnscale.recommend: the scales against independent routes, the CLI, and the
book's recommendation (advice) and the introduction's box.
"""

from __future__ import annotations

from pathlib import Path
import math
import re
import subprocess
import sys

from scipy.optimize import minimize_scalar
from scipy.special import lambertw
import mpmath as mp
import numpy as np
import pytest

from attnscale import exact, exact as E, recommend as R
from attnscale.optimum import alpha_star_cosine, alpha_star_normal
from attnscale.recommend import advice, decoder_share, main, recommend, report
from expect import refuses


INTRO = Path(__file__).resolve().parents[1] / "intro.md"


def _by_name(rows):
    return {r.name: r for r in rows}


@pytest.mark.parametrize("n", [64, 512, 4096, 1e6])
def test_dot_scales_against_independent_routes(n):
    rows = _by_name(recommend(n, 64))
    with mp.workdps(30):
        lambert = mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * n / 2) - mp.mpf(1) / 2)  # the closed form of chapter 5
    assert rows["mean_field"].alpha == pytest.approx(float(lambert), rel=1e-13)
    assert rows["freezing"].alpha == pytest.approx(math.sqrt(2 * math.log(n)), rel=1e-15)
    assert rows["usual"].alpha == 1.0 and rows["usual"].factor == pytest.approx(1 / 8)
    limit = exact.near_tie_limit(n)
    assert exact.expected_half_l1(n, rows["ninety"].alpha) / limit == pytest.approx(0.9, rel=1e-9)
    for r in rows.values():
        assert r.share == pytest.approx(r.gradient / limit, rel=1e-14)
    # the order the book states: usual < mean field < freezing, and the gradient rises with alpha
    assert rows["usual"].alpha < rows["mean_field"].alpha < rows["freezing"].alpha
    ordered = sorted(rows.values(), key=lambda r: r.alpha)
    assert all(a.gradient < b.gradient for a, b in zip(ordered, ordered[1:]))


def test_the_command_imports_neither_scipy_nor_sympy():
    """The command's start (make bench: at most half a second) is mostly imports: in a new
    interpreter, ``python -m attnscale recommend`` loads no part of SciPy (its root finder and
    special functions are the library's own; importing ``scipy.special`` alone takes 0.3 s)
    and not SymPy."""
    code = ("import runpy, sys\n"
            "sys.argv = ['attnscale', 'recommend', '--n', '4096', '--d', '128']\n"
            "try:\n    runpy.run_module('attnscale', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'sympy')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "90% of the exact gradient limit" in done.stdout


def test_advice_is_the_usual_scale_for_dot_scores_and_the_cosine_scale_fixed_or_as_a_learned_start():
    lines = advice(4096, 128)
    assert [a.situation for a in lines] == ["dot-product attention", "cosine (QK-norm) attention",
                                            "rows longer than in training", "comparing widths (muP), queries aligned with keys"]
    assert lines[0].alpha == 1.0 and "1/sqrt(d)" not in lines[0].use and "0.08839" in lines[0].use
    assert lines[1].alpha == pytest.approx(float(alpha_star_cosine(4096, 128)), rel=1e-12)
    assert "fixed or as the start of a learned" in lines[1].use and "rather than sqrt(d) = 11.3" in lines[1].use
    assert all(math.isnan(a.alpha) for a in lines[2:])


def test_advice_puts_the_asked_score_model_first_and_drops_cosine_below_three_dimensions():
    assert advice(512, 64, "cosine")[0].situation.startswith("cosine")
    assert [a.situation for a in advice(512, 2)][:2] == ["dot-product attention", "rows longer than in training"]


def test_every_advice_line_points_at_a_section_of_the_book():
    sources = [p.read_text(encoding="utf-8") for p in (INTRO.parent / "chapters").glob("*.ipynb")]
    for item in advice(4096, 64):
        assert any(f"({item.evidence})=" in t or f":label: {item.evidence}" in t
                   for t in sources), f"no section labelled {item.evidence}"


def test_report_prints_the_recommendation_first():
    text = report(4096, 64)
    assert text.startswith("Recommendation for n = 4096 keys, d = 64")
    assert text.index("* dot-product attention: alpha = 1") < text.index("The scales behind it:")


def test_the_introduction_opens_with_the_box_of_the_four_situations():
    text = INTRO.read_text(encoding="utf-8")
    box = text[text.index("(sec-recommendation)="):text.index("## ")]
    for words in ("Dot-product attention: keep $\\alpha = 1$", "Cosine (QK-norm) attention: use $\\alpha^*_{\\cos}(n, d)$",
                  "Longer rows than in training: keep the training scale", "Comparing widths (μP)"):
        assert words in box
    prose = re.sub(r"\{[a-z:]+\}`[^`]*`|\$[^$]*\$", "", box)
    assert len(prose.split()) <= 200


@pytest.mark.parametrize(
    "n, share, d",
    [(512, 0.9, None), (64, 0.5, None), (4096, 0.6, 128), (1e6, 0.99, None), (512, 0.1, None), (64, 0.05, None), (512, 0.1, 3), (16, 0.9, 3)],
)
def test_scale_at_share(n, share, d):
    """Small and large shares, normal and cosine scores down to the smallest d = 3."""
    a = R.scale_at_share(n, share, d)
    assert float(exact.expected_half_l1(n, a, d)) == pytest.approx(share * float(exact.near_tie_limit(n, d)), rel=1e-9)
    # monotone in the share
    assert R.scale_at_share(n, share * 0.9, d) < a


def test_decoder_share_is_one_at_the_optimum_of_each_position():
    """No position keeps more than its own optimum, and alpha*(t) keeps all of it at t."""
    for T in (16, 512):
        for t in (2, 7, T):
            share = decoder_share(float(alpha_star_normal(t)), T)
            assert share.shape == (T - 1,)
            assert abs(share[t - 2] - 1.0) < 1e-12
            assert share.max() <= 1.0 + 1e-12 and share.min() >= 0.0


@pytest.mark.parametrize("n, d, scores", [(2, 64, "dot"), (4096, 64, "dot"), (1e6, 64, "dot"), (512, 16, "cosine"), (4096, 128, "cosine")])
def test_mean_field_check_against_independent_routes(n, d, scores):
    """For dot scores the mean field's value from the 30-digit Lambert-W optimum, and the
    10% limit as the *first* crossing: the ratio is 1.1 there and inside the band on a grid
    below it. At n = 2 the exact E sum p^2 from its own closed form, 1/2 + E tanh^2(alpha D/2)/2
    with D = s_1 - s_2 ~ N(0, 2), by mpmath quadrature."""
    from attnscale.recommend import mean_field_check

    c = mean_field_check(n, d, scores)
    if scores == "dot":
        with mp.workdps(30):
            a = mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * n / 2) - mp.mpf(1) / 2)
            assert c["mean_field"] == pytest.approx(float(mp.exp(a * a) / n), rel=1e-12)
            if n == 2:
                half = mp.quad(lambda x: mp.tanh(a * x / 2) ** 2 * mp.exp(-x * x / 4) / mp.sqrt(4 * mp.pi), [-mp.inf, 0, mp.inf])
                assert c["exact"] == pytest.approx(float(mp.mpf(1) / 2 + half / 2), rel=1e-10)
        assert float(exact.mean_field_ratio(n, c["limit"])) == pytest.approx(1.1, rel=1e-9)
        below = np.asarray(exact.mean_field_ratio(n, np.linspace(1e-3, c["limit"] * (1 - 1e-6), 200)))
        assert np.all((below < 1.1) & (below > 1 / 1.1))
        assert c["limit"] < c["alpha"]
    else:
        assert math.isnan(c["limit"])
    assert c["ratio"] == pytest.approx(c["mean_field"] / c["exact"], rel=1e-14)
    # the mean field overestimates E sum p^2 at its optimum by more than 10%: never valid there
    assert c["ratio"] > 1.1 and c["valid"] == 0.0


def test_length_rules_hold_their_quantities():
    """Each rule against the quantity it keeps, recomputed at n and at n_train = 512 with alpha = 1."""
    from attnscale.recommend import length_rules

    n = 4096.0
    r = length_rules(n)
    assert r["fixed"] == 1.0
    assert float(exact.expected_entropy(n, r["entropy"])) == pytest.approx(float(exact.expected_entropy(512.0, 1.0)), rel=1e-9)
    assert float(exact.needle_weight(n, r["needle"], 5.0)) == pytest.approx(float(exact.needle_weight(512.0, 1.0, 5.0)), rel=1e-9)
    assert r["log_ratio"] == pytest.approx(math.log(4096) / math.log(512), rel=1e-15)
    assert 1.0 < r["log_ratio"] < r["needle"] < r["entropy"]
    r2 = length_rules(n, 1024.0)  # a longer training length asks for less sharpening
    assert r2["entropy"] < r["entropy"] and r2["log_ratio"] == pytest.approx(12 / 10)
    a0 = 2.405  # trained at the mean-field optimum: the targets are the values at (512, a0)
    r3 = length_rules(n, 512.0, a0)
    assert r3["fixed"] == a0 and r3["log_ratio"] == pytest.approx(a0 * 12 / 9, rel=1e-15)
    assert float(exact.expected_entropy(n, r3["entropy"])) == pytest.approx(float(exact.expected_entropy(512.0, a0)), rel=1e-9)
    assert float(exact.needle_weight(n, r3["needle"], 5.0)) == pytest.approx(float(exact.needle_weight(512.0, a0, 5.0)), rel=1e-9)
    assert r3["entropy"] / a0 < r["entropy"]  # a sharper start needs a smaller relative increase


def test_length_rules_needle_out_of_reach():
    """At n = 1e15 no scale keeps a key at score 5 at its weight at n = 512: the weight's
    maximum over a wide grid of alpha lies below that target, and the rule says NaN."""
    from attnscale.recommend import length_rules

    target = float(exact.needle_weight(512.0, 1.0, 5.0))
    grid = np.exp(np.linspace(-2.0, 4.0, 400))
    assert float(np.max(exact.needle_weight(1e15, grid, 5.0))) < target
    assert math.isnan(length_rules(1e15)["needle"])


def test_command_line_training_length(capsys):
    assert main(["recommend", "--n", "4096", "--d", "64", "--n-train", "1024", "--alpha-train", "1.5"]) == 0
    assert capsys.readouterr().out.strip() == report(4096, 64, "dot", 1024, 1.5).strip()


def test_mean_field_is_off_by_more_than_ten_percent_at_its_optimum_for_every_n():
    """From n = 2 to 1e9 (25 lengths, log-spaced), the mean field
    overestimates E sum p^2 at its own optimum by more than 10%, and by more as n grows."""
    from attnscale.recommend import mean_field_check

    ratios = [mean_field_check(float(n), 64)["ratio"] for n in np.geomspace(2, 1e9, 25)]
    assert min(ratios) > 1.1 and all(b > a for a, b in zip(ratios, ratios[1:]))


NEEDLE = 5.0


def _row(label: str, alpha: float, n: float) -> str:
    """A row of the length table from attnscale.exact at a given scale and length."""
    h = float(E.expected_entropy(n, alpha))
    gradient = alpha * (1.0 - float(E.expected_sum_p2(n, alpha)))
    weight = float(E.needle_weight(n, alpha, NEEDLE))
    return f"{label:34s}{alpha:9.3f} {h:8.3f} {h / math.log(n):10.3f} {gradient:9.3f} {weight:11.4g}"


TABLE_4096 = """\
Length scaling (ch-entropy): trained on n0 = 512 keys at alpha_train = 1, run on n = 4096 keys;
exact expectations over independent normal scores, a planted key at score 5:
                                      alpha      E H  E H/log n  gradient  key weight
at training (n0, alpha_train)         1.000    5.742      0.920     0.995      0.1501
fixed scale                           1.000    7.818      0.940     0.999     0.02152
constant entropy                      2.314    5.742      0.690     2.263       0.643
constant key weight                   1.560    7.107      0.854     1.555      0.1501
log ratio alpha_train ln n / ln n0    1.333    7.431      0.893     1.331     0.07319
dynamic YaRN                          1.459    7.257      0.872     1.456      0.1106
The log ratio is Su's rule and, relative to training, also Qwen's, LongRoPE's,
Scalable-Softmax's and Chiang and Cholak's; YaRN's s is read as n / n0.
"""


TABLE_1E15 = """\
Length scaling (ch-entropy): trained on n0 = 512 keys at alpha_train = 1, run on n = 1e+15 keys;
exact expectations over independent normal scores, a planted key at score 5:
                                      alpha      E H  E H/log n  gradient  key weight
at training (n0, alpha_train)         1.000    5.742      0.920     0.995      0.1501
fixed scale                           1.000   34.039      0.986     1.000   9.002e-14
constant entropy                      8.564    5.742      0.166     7.539    1.32e-12
constant key weight                    none  (no scale keeps the key's weight at this n)
log ratio alpha_train ln n / ln n0    5.537   19.221      0.557     5.535   2.325e-10
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
    rows, r = TABLE_4096.splitlines(), R.length_rules(4096)
    assert rows[3] == _row("at training (n0, alpha_train)", 1.0, 512.0)
    assert rows[4] == _row("fixed scale", 1.0, 4096.0)
    assert rows[5] == _row("constant entropy", r["entropy"], 4096.0)
    assert rows[6] == _row("constant key weight", r["needle"], 4096.0)
    assert rows[7] == _row("log ratio alpha_train ln n / ln n0", 12 / 9, 4096.0)


def test_report_rows_follow_the_training_scale():
    """At alpha_train = 1.5 the fixed rule keeps 1.5 and the note's rule gives 1.5 * 12/9 = 2."""
    lines = R.report(4096, 64, "dot", 512, 1.5).splitlines()
    top = lines.index("Length scaling (ch-entropy): trained on n0 = 512 keys at alpha_train = 1.5, run on n = 4096 keys;")
    assert lines[top + 3] == _row("at training (n0, alpha_train)", 1.5, 512.0)
    assert lines[top + 4] == _row("fixed scale", 1.5, 4096.0)
    assert lines[top + 7] == _row("log ratio alpha_train ln n / ln n0", 2.0, 4096.0)
    assert lines[top + 8] == _row("dynamic YaRN", 1.5 * (0.1 * math.log(8) + 1) ** 2, 4096.0)


def test_report_marks_a_rule_without_a_scale_and_goes_on():
    """At n = 1e15 no scale keeps the key's weight: that row says so, and the note's rule
    (ln 1e15 / ln 512 = 5.537) is still printed after it."""
    text = R.report(1e15, 64)
    assert text.endswith(TABLE_1E15.rstrip("\n"))
    assert TABLE_1E15.splitlines()[7] == _row("log ratio alpha_train ln n / ln n0", math.log(1e15) / math.log(512), 1e15)


def test_no_rule_sentence_wraps_at_88_columns():
    """The sentence for n <= n0 is wrapped at 88 columns like the rest of the prose; with
    n0 = 1e6 the first line is 84 characters and "(set" would make it 89."""
    lines = R.report(512, 64, "dot", 1e6).splitlines()
    assert lines[-2:] == ["Length scaling: n does not exceed the training length n0 = 1e+06, so no rule applies",
                          "(set n_train, --n-train)."]


def test_training_length_two_and_training_scale_fifty_are_accepted():
    """n_train is a real >= 2 and alpha_train lies in (0, 50], both ends included."""
    r = R.length_rules(4096, 2)
    assert r["fixed"] == 1.0
    assert r["log_ratio"] == pytest.approx(12.0, rel=1e-15)  # log 4096 / log 2
    assert float(E.expected_entropy(4096.0, r["entropy"])) == pytest.approx(float(E.expected_entropy(2.0, 1.0)), rel=1e-9)
    assert "trained on n0 = 2 keys at alpha_train = 1," in R.report(16, 64, "dot", 2)
    # the report checks alpha_train even where no rule applies (n <= n_train): cheap to reach 50
    assert R.report(256, 64, "dot", 512, 50.0).endswith("no rule applies (set\nn_train, --n-train).")
    refuses(ValueError, 'alpha_train', R.report, 256, 64, "dot", 512, 50.5)
    refuses(ValueError, 'n_train', R.length_rules, 4096, 1.999)


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


@pytest.mark.parametrize(
    "ratio, valid", [(1.0, 1.0), (1.05, 1.0), (1 / 1.05, 1.0), (R.VALID, 1.0), (1.0 / R.VALID, 1.0), (1.15, 0.0), (1 / 1.15, 0.0)]
)
def test_mean_field_check_valid_flag_follows_the_ratio(monkeypatch, ratio, valid):
    """With the exact side faked to give each ratio: 5% off is valid, 15% off is not, and the
    band the report states, "a ratio between 1/1.1 and 1.1 counts as valid", includes both ends."""
    _exact_side_at_ratio(monkeypatch, ratio)
    c = R.mean_field_check(512, 64)  # at n = 512 some float lands on each end exactly
    assert c["ratio"] == ratio and c["valid"] == valid


def test_report_says_so_when_the_mean_field_is_valid(monkeypatch):
    _exact_side_at_ratio(monkeypatch, 1.0)
    flat = " ".join(R.report(512, 64).split())
    assert "a ratio of 1, so the mean field is valid there (a ratio between 1/1.1 and 1.1 counts as valid)." in flat


def _best_gradients(T: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions 2..T and each one's best mean-field gradient, at alpha*(t) =
    sqrt(W0(t sqrt(e)/2) - 1/2) from SciPy's Lambert W (not from the library)."""
    t = np.arange(2, T + 1, dtype=float)
    a_t = np.sqrt(lambertw(t * math.sqrt(math.e) / 2).real - 0.5)
    return t, a_t * -np.expm1(a_t**2 - np.log(t))


def _grid_best(T: int, points: int = 20001) -> tuple[float, float]:
    """The mean share's largest value on a grid of alpha over (0, sqrt(log T)] (beyond
    sqrt(log T) every position's mean-field gradient is negative, counted as 0): a lower
    bound on the true maximum."""
    t, best = _best_gradients(T)
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


def test_scale_at_share_near_the_largest_supported_alpha():
    """Roots up to exact's ALPHA_MAX = 1e4 are found. The two alpha0 are the last points
    of the doubling bracket (4 * 2^11 for dot scores, 4 sqrt(5) * 2^10 for cosine, d = 5),
    where the share is met exactly, so no Brent steps at these costly scales are needed."""
    for n, d, alpha0 in ((512.0, None, 4.0 * 2**11), (64.0, 5, 4.0 * math.sqrt(5) * 2**10)):
        assert alpha0 < E.ALPHA_MAX
        share = float(E.expected_half_l1(n, alpha0, d)) / float(E.near_tie_limit(n, d))
        assert 0.999 < share < 1
        assert R.scale_at_share(n, share, d) == pytest.approx(alpha0, rel=1e-12)


def _decoder_reference(T):
    """The mean share over positions 2..T, and its maximiser by a tight bounded search."""
    t, best = _best_gradients(T)

    def mean(a):
        return float(np.mean(np.maximum(a * -np.expm1(a * a - np.log(t)), 0.0) / best))

    r = minimize_scalar(lambda a: -mean(a), bounds=(0.3, 3.5), method="bounded", options={"xatol": 1e-12})
    return r.x, mean


@pytest.mark.parametrize("T", [16, 256])
def test_decoder_best_scale_to_its_stated_tolerance(T):
    """Brent's method to 1e-8 (docstring): against a reference maximiser found to 1e-12."""
    x, mean = _decoder_reference(T)
    alpha, share = R.decoder_best_scale(T)
    assert abs(alpha - x) < 5e-8
    assert share == pytest.approx(mean(x), rel=1e-12)


def test_decoder_at_the_longest_length():
    """T = DECODER_MAX = 1e6 is accepted; the best scale there lies above 3, inside [0.2, 4]."""
    T = R.DECODER_MAX
    share = R.decoder_share(1.0, T)
    assert share.shape == (T - 1,)
    alpha, mean_share = R.decoder_best_scale(T)
    x, mean = _decoder_reference(T)
    assert 3.0 < alpha < 4.0 and abs(alpha - x) < 5e-8
    assert mean_share == pytest.approx(mean(alpha), rel=1e-12)
    assert float(share.mean()) == pytest.approx(mean(1.0), rel=1e-12)


def test_decoder_share_at_the_shortest_length():
    a2 = math.sqrt(lambertw(math.sqrt(math.e)).real - 0.5)  # alpha*(2)
    np.testing.assert_allclose(R.decoder_share(a2, 2), [1.0], rtol=1e-12)


def test_decoder_names_the_bad_argument():
    refuses(ValueError, 'length', R.decoder_share, 1.0, 10**6 + 1)


CHAPTERS = {"usual": "ch-dot-products", "mean_field": "ch-gaussian", "freezing": "ch-beyond-mean-field",
            "ninety": "ch-beyond-mean-field"}


def test_recommend_names_the_chapter_of_each_scale():
    assert [(r.name, r.chapter) for r in R.recommend(512, 64)] == list(CHAPTERS.items())
    assert [(r.name, r.chapter) for r in R.recommend(512, 128, "cosine")] == [("mean_field", "ch-cosine"),
                                                                              ("ninety", "ch-cosine")]


@pytest.mark.parametrize("n, d", [(16.0, 3), (512.0, 128)])
def test_recommend_cosine_gradient_and_share(n, d):
    limit = float(E.near_tie_limit(n, d))
    for r in R.recommend(n, d, "cosine"):
        assert r.gradient == pytest.approx(float(E.expected_half_l1(n, r.alpha, d)), rel=1e-14)
        assert r.share == pytest.approx(r.gradient / limit, rel=1e-14)
        assert r.factor == r.alpha
    assert R.recommend(n, d, "cosine")[1].share == pytest.approx(0.9, rel=1e-9)


@pytest.mark.parametrize("d", [1, 2])
def test_recommend_small_dot_dimensions(d):
    """dot scores accept any d >= 1: the factor on q.k is alpha / sqrt(d)."""
    rows = {r.name: r for r in R.recommend(64, d)}
    with mp.workdps(30):
        lambert = float(mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * 64 / 2) - mp.mpf(1) / 2))
    assert rows["mean_field"].alpha == pytest.approx(lambert, rel=1e-13)
    assert rows["mean_field"].factor == pytest.approx(lambert / math.sqrt(d), rel=1e-13)
    assert rows["usual"].factor == pytest.approx(1 / math.sqrt(d), rel=1e-15)


def test_recommend_names_the_bad_argument():
    for d in (0, 1, 2):  # cosine scores need d >= 3, checked before any computation
        refuses(ValueError, 'd', R.recommend, 512, d, "cosine")
    refuses(TypeError, 'd', R.recommend, 512, 2.5, "cosine")


DOT_512_64 = """\
n = 512 keys, d = 64, dot-product scores q.k/sqrt(d); model: independent scores (standard normal)
                                      alpha        x q.k  E[alpha(1 - sum p^2)]  of limit  derived in
usual scale (1/sqrt(d))               1.000        0.125                  0.995     32.7%  ch-dot-products
mean-field gradient optimum           2.008        0.251                  1.914     62.9%  ch-gaussian
freezing point sqrt(2 log n)          3.532       0.4415                  2.653     87.1%  ch-beyond-mean-field
90% of the exact gradient limit       3.936        0.492                  2.740     90.0%  ch-beyond-mean-field
The exact expected gradient rises with alpha to a limit and has no maximiser; larger
scales saturate more rows. In the book's training experiment (ch-training), with the
learning rate tuned per scale, scales above the usual one did not reach the target
sooner.
Mean field (ch-beyond-mean-field): at its optimum alpha = 2.008, e^(alpha^2)/n = 0.1103
against the exact E sum p^2 = 0.04712, a ratio of 2.34, so the mean field is not valid
there (a ratio between 1/1.1 and 1.1 counts as valid). At this n it stays within a
factor 1.1 up to alpha = 1.381.
Length scaling: n does not exceed the training length n0 = 512, so no rule applies (set
n_train, --n-train).
"""


COSINE_4096_128 = """\
n = 4096 keys, d = 128, cosine scores cos(q, k); model: independent scores (uniform directions in R^128)
                                      alpha  x cos(q, k)  E[alpha(1 - sum p^2)]  of limit  derived in
mean-field gradient optimum          29.700         29.7                 28.698     65.7%  ch-cosine
90% of the exact gradient limit      52.900         52.9                 39.297     90.0%  ch-cosine
The exact expected gradient rises with alpha to a limit and has no maximiser; larger
scales saturate more rows. In the book's training experiment (ch-training), with the
learning rate tuned per scale, scales above the usual one did not reach the target
sooner.
Mean field (ch-beyond-mean-field): at its optimum alpha = 29.700, the mean field's sum
p^2 = 0.08902 against the exact E sum p^2 = 0.03373, a ratio of 2.64, so the mean field
is not valid there (a ratio between 1/1.1 and 1.1 counts as valid).
Length scaling: chapter 8's rules are derived for normal scores; the book does not
compute them for cosine scores.
"""


def test_command_line_prints_the_dot_table(capsys):
    # the numbers: alpha* from Lambert W, sqrt(2 ln 512) = 3.532, factors alpha / 8
    with mp.workdps(30):
        a = mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * 256) - mp.mpf(1) / 2)
        assert f"{float(a):.3f}" == "2.008" and f"{float(mp.exp(a * a) / 512):.4g}" == "0.1103"
    assert f"{math.sqrt(2 * math.log(512)):.3f}" == "3.532" and f"{math.sqrt(2 * math.log(512)) / 8:.4g}" == "0.4415"
    for argv in (["recommend", "--n", "512", "--d", "64"], ["recommend", "--n", "512", "--d", "64", "--scores", "dot"]):
        assert R.main(argv) == 0
        assert capsys.readouterr().out.split("The scales behind it:\n", 1)[1] == DOT_512_64
    assert R.report(512, 64).split("The scales behind it:\n", 1)[1] + "\n" == DOT_512_64


def test_command_line_prints_the_cosine_table(capsys):
    assert R.main(["recommend", "--n", "4096", "--d", "128", "--scores", "cosine"]) == 0
    assert capsys.readouterr().out.split("The scales behind it:\n", 1)[1] == COSINE_4096_128
    assert R.report(4096, 128, "cosine").split("The scales behind it:\n", 1)[1] + "\n" == COSINE_4096_128
