"""attnscale.recommend: the scales against independent routes, the CLI, and the
book's recommendation (advice) and the introduction's box."""

from __future__ import annotations

import math
import re
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest

from attnscale import exact
from attnscale.optimum import alpha_star_normal
from attnscale.optimum import alpha_star_cosine
from attnscale.recommend import advice, decoder_best_scale, decoder_share, main, recommend, report

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


def test_cosine_scales():
    rows = _by_name(recommend(512, 128, "cosine"))
    assert set(rows) == {"mean_field", "ninety"}
    assert exact.expected_half_l1(512, rows["ninety"].alpha, 128) / exact.near_tie_limit(512, 128) == pytest.approx(0.9, rel=1e-9)
    assert rows["mean_field"].factor == rows["mean_field"].alpha  # the scale multiplies the cosine itself


@pytest.mark.parametrize(
    "kwargs, word",
    [({"n": 1, "d": 64}, "n"), ({"n": float("nan"), "d": 64}, "n"), ({"n": 1e16, "d": 64}, "n"), ({"n": 512, "d": 0}, "d"),
     ({"n": 512, "d": 2, "scores": "cosine"}, "d"), ({"n": 512, "d": 64, "scores": "bilinear"}, "scores"), ({"n": 512, "d": 2.5}, "d")],
)
def test_bad_input_names_the_argument(kwargs, word):
    with pytest.raises((ValueError, TypeError), match=word):
        recommend(**kwargs)


def test_command_line(capsys):
    assert main(["recommend", "--n", "512", "--d", "64"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == report(512, 64).strip()
    assert "2.008" in out and "3.532" in out
    with pytest.raises(SystemExit) as err:
        main(["recommend", "--n", "1", "--d", "64"])
    assert err.value.code == 2
    assert "n must be" in capsys.readouterr().err


def test_advice_is_the_usual_scale_for_dot_scores_and_the_cosine_scale_as_a_learned_start():
    lines = advice(4096, 128)
    assert [a.situation for a in lines] == ["dot-product attention", "cosine (QK-norm) attention",
                                            "rows longer than in training", "comparing widths (muP), queries aligned with keys"]
    assert lines[0].alpha == 1.0 and "1/sqrt(d)" not in lines[0].use and "0.08839" in lines[0].use
    assert lines[1].alpha == pytest.approx(float(alpha_star_cosine(4096, 128)), rel=1e-12)
    assert "learn the scale" in lines[1].use and "never fixed at sqrt(d) = 11.3" in lines[1].use
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
    for words in ("Dot-product attention: keep $\\alpha = 1$", "Cosine (QK-norm) attention: learn the scale",
                  "Longer rows than in training: keep the training scale", "Comparing widths (μP)"):
        assert words in box
    prose = re.sub(r"\{[a-z:]+\}`[^`]*`|\$[^$]*\$", "", box)
    assert len(prose.split()) <= 200


@pytest.mark.parametrize("n, share, d", [(512, 0.9, None), (64, 0.5, None), (4096, 0.6, 128), (1e6, 0.99, None)])
def test_scale_at_share(n, share, d):
    from attnscale.recommend import scale_at_share

    a = scale_at_share(n, share, d)
    assert exact.expected_half_l1(n, a, d) == pytest.approx(share * exact.near_tie_limit(n, d), rel=1e-9)
    # monotone in the share
    assert scale_at_share(n, share * 0.9, d) < a


def test_decoder_share_is_one_at_the_optimum_of_each_position():
    """No position keeps more than its own optimum, and alpha*(t) keeps all of it at t."""
    for T in (16, 512):
        for t in (2, 7, T):
            share = decoder_share(float(alpha_star_normal(t)), T)
            assert share.shape == (T - 1,)
            assert abs(share[t - 2] - 1.0) < 1e-12
            assert share.max() <= 1.0 + 1e-12 and share.min() >= 0.0


def test_decoder_best_scale_against_a_grid_on_the_closed_form():
    """Brent's optimum against a grid search whose per-position optimum comes from mpmath's
    Lambert W (alpha*(t) = sqrt(W0(t sqrt(e)/2) - 1/2)), not from the library."""
    T = 256
    ts = list(range(2, T + 1))
    best_t = []
    for t in ts:
        a = float(mp.sqrt(mp.lambertw(t * mp.sqrt(mp.e) / 2).real - mp.mpf(1) / 2))
        best_t.append(a * -math.expm1(a * a - math.log(t)))

    def mean_share(a):
        return sum(max(0.0, a * -math.expm1(a * a - math.log(t))) / b for t, b in zip(ts, best_t)) / len(ts)

    grid = [0.2 + 0.001 * i for i in range(3801)]
    values = [mean_share(a) for a in grid]
    k = max(range(len(grid)), key=values.__getitem__)
    alpha, share = decoder_best_scale(T)
    assert abs(alpha - grid[k]) <= 1e-3 and abs(share - values[k]) < 1e-6


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


def test_mean_field_check_valid_flag_follows_the_ratio(monkeypatch):
    """With the exact side replaced by the mean field's own value, the ratio is 1 and the
    check must call the mean field valid; 5% off is valid, 15% off is not."""
    from attnscale import recommend as R

    for factor, valid in ((1.0, 1.0), (1.05, 1.0), (1 / 1.05, 1.0), (1.15, 0.0), (1 / 1.15, 0.0)):
        monkeypatch.setattr(R.exact, "expected_sum_p2", lambda n, a, d=None, f=factor: math.exp(a * a) / n / f)
        c = R.mean_field_check(4096, 64)
        assert c["ratio"] == pytest.approx(factor, rel=1e-12) and c["valid"] == valid


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


def test_length_rules_refuse_n_not_beyond_training():
    from attnscale.recommend import length_rules

    with pytest.raises(ValueError, match="n must exceed n_train"):
        length_rules(512, 512)
    with pytest.raises(ValueError, match="n_train must be at least 2"):
        length_rules(512, 1.5)


def test_report_states_validity_and_the_length_rules():
    """The printed rows against the library: each rule's scale, and the exact entropy and
    key weight it gives, recomputed here from attnscale.exact (not through lengthrules)."""
    from attnscale.recommend import length_rules, mean_field_check

    text = report(4096, 128)
    c, r = mean_field_check(4096, 128), length_rules(4096)
    flat = " ".join(text.split())
    assert f"a ratio of {c['ratio']:.3g}, so the mean field is not valid there" in flat
    assert f"within a factor 1.1 up to alpha = {c['limit']:.3f}" in flat
    assert "trained on n0 = 512 keys at alpha0 = 1, run on n = 4096 keys" in flat
    for label, key in (("fixed scale", "fixed"), ("constant entropy", "entropy"), ("constant key weight", "needle")):
        a = r[key]
        row = f"{label} {a:.3f} {float(exact.expected_entropy(4096.0, a)):.3f}"
        assert row in flat, row
        assert f"{float(exact.needle_weight(4096.0, a, 5.0)):.4g}" in flat
    # the constant-entropy row shows the training entropy, the constant-key row the training weight
    assert flat.count(f"{float(exact.expected_entropy(512.0, 1.0)):.3f}") == 2
    assert flat.count(f"{float(exact.needle_weight(512.0, 1.0, 5.0)):.4g}") == 2
    assert "no rule applies" in report(256, 64) and "no scale keeps the key's weight" in report(1e15, 64)
    assert "does not compute them for cosine scores" in " ".join(report(4096, 128, "cosine").split())
    assert "at alpha0 = 2.405" in report(4096, 64, "dot", 512, 2.405)


def test_command_line_training_length(capsys):
    assert main(["recommend", "--n", "4096", "--d", "64", "--n-train", "1024", "--alpha-train", "1.5"]) == 0
    assert capsys.readouterr().out.strip() == report(4096, 64, "dot", 1024, 1.5).strip()


def test_mean_field_is_off_by_more_than_ten_percent_at_its_optimum_for_every_n():
    """From n = 2 to 1e9 (25 lengths, log-spaced), the mean field
    overestimates E sum p^2 at its own optimum by more than 10%, and by more as n grows."""
    from attnscale.recommend import mean_field_check

    ratios = [mean_field_check(float(n), 64)["ratio"] for n in np.geomspace(2, 1e9, 25)]
    assert min(ratios) > 1.1 and all(b > a for a, b in zip(ratios, ratios[1:]))


def test_no_scale_keeps_a_key_at_score_four_or_less_at_two_to_the_twenty():
    """Trained on 512 keys at alpha = 1 and run on 2^20: no scale reaches the training weight
    of a key at score 3 or 4, while one at score 5 can be kept."""
    from attnscale.lengthrules import alpha_constant_needle

    grid = np.exp(np.linspace(np.log(0.05), np.log(200.0), 600))
    for gap, reachable in ((3.0, False), (4.0, False), (5.0, True)):
        target = float(exact.needle_weight(512.0, 1.0, gap))
        assert (float(np.max(exact.needle_weight(2.0**20, grid, gap))) >= target) == reachable
        if reachable:
            assert alpha_constant_needle(2.0**20, gap) > 0
        else:
            with pytest.raises(ValueError):
                alpha_constant_needle(2.0**20, gap)
