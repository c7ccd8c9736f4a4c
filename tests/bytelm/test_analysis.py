"""The chapter's summaries of the byte-model sweep (attnscale.bytelm.analysis): paired
comparisons against alpha = 1, the confirmation on fresh seeds, the rate-scale exponent,
pooled rows and the most a raw scalar can move under Adam."""

import numpy as np
import pytest
from scipy import stats

from attnscale.bytelm import analysis as an


def _group(name, kind, mode, rows):
    return {"name": name, "kind": kind, "mode": mode, "members": [{"label": lab, "seed": s, "rate": r, "scale": sc, "val_bpb": v} for lab, s, r, sc, v in rows]}


def test_paired_comparisons_are_student_t_on_the_differences_with_holm():
    ref = np.array([3.0, 3.1, 2.9, 3.05])
    table = {1.0: {"best": ref, "seeds": [0, 1, 2, 3]}, 2.0: {"best": ref + [0.02, 0.05, 0.03, 0.04], "seeds": [0, 1, 2, 3]},
             0.5: {"best": ref + [0.01, -0.02, 0.0, 0.015], "seeds": [0, 1, 2, 3]}}
    out = an.paired_against_one(table)
    for a in (2.0, 0.5):
        d = table[a]["best"] - ref
        assert out[a]["p"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue, rel=1e-9)
        assert out[a]["low"] < d.mean() < out[a]["high"]
    small, large = sorted((out[2.0]["p"], out[0.5]["p"]))
    assert min(out[2.0]["p_holm"], out[0.5]["p_holm"]) == pytest.approx(2 * small)
    assert out[2.0]["sign"].later == 4


def test_unpaired_seeds_are_refused():
    table = {1.0: {"best": np.ones(3), "seeds": [0, 1, 2]}, 2.0: {"best": np.ones(3), "seeds": [3, 4, 5]}}
    with pytest.raises(ValueError, match=r"^table entry"):
        an.paired_against_one(table)


def test_confirmation_reads_dot_scales_and_cosine_settings_by_seed():
    sweep = {"dot_a1_confirm": _group("dot_a1_confirm", "dot", "fixed", [("1", 4, 0.01, 1.0, 3.2), ("1", 3, 0.01, 1.0, 3.1)]),
             "cos_fixed_confirm": _group("cos_fixed_confirm", "cosine", "fixed", [("sqrt_d", 3, 0.01, 5.66, 3.4), ("sqrt_d", 4, 0.01, 5.66, 3.5)]),
             "dot_a1": _group("dot_a1", "dot", "fixed", [("1", 0, 0.01, 1.0, 9.9)])}
    out = an.confirmation(sweep)
    assert set(out) == {1.0, ("fixed", "sqrt_d")}
    assert out[1.0]["seeds"] == [3, 4] and list(out[1.0]["best"]) == [3.1, 3.2]
    assert list(an.paired_against_one(out)[("fixed", "sqrt_d")]["diff"]) == pytest.approx([0.3, 0.3])


def test_the_rate_exponent_recovers_a_planted_power():
    """Losses that are parabolas in log(rate) around alpha^-0.5 * 0.01 give b near -1/2."""
    rates = [0.0025, 0.005, 0.01, 0.02, 0.04]
    table = {}
    rng = np.random.default_rng(0)
    for a in (0.25, 1.0, 4.0):
        centre = np.log(0.01 * a ** -0.5)
        bpb = np.array([[(np.log(r) - centre) ** 2 + 1e-4 * rng.normal() for _ in range(3)] for r in rates])
        table[a] = {"rates": rates, "bpb": bpb, "best_rate": rates[int(np.argmin(bpb.mean(1)))], "seeds": [0, 1, 2]}
    ex = an.rate_exponent(table)
    assert ex["vertex"] == pytest.approx(-0.5, abs=0.02)
    assert ex["low"] <= ex["vertex"] <= ex["high"]


def test_pooled_rows_concatenate_runs():
    member = {"rows_final": {"16": {k: [[[1.0, 2.0]]] for k in ("sd", "sum_p2", "entropy", "kurtosis", "gap")}}}
    out = an.pooled_rows([member, member], "rows_final", [16])
    assert out[16]["sd"].tolist() == [1.0, 2.0, 1.0, 2.0] and out[16]["pred_sum_p2"].shape == (4,)


def test_a_raw_scalar_under_adam_moves_at_most_the_summed_schedule():
    """An independent route: optax's Adam on one scalar with a gradient of constant sign (its
    largest move) and with random signs, under the sweep's schedule."""
    optax = pytest.importorskip("optax")
    jnp = pytest.importorskip("jax.numpy")
    steps, warmup, final, rate = 200, 0.1, 0.1, 0.01
    bound = an.max_scale_move(rate, steps, warmup, final)
    adam = optax.scale_by_adam(b1=0.9, b2=0.95, eps=1e-8)
    warm = max(1.0, warmup * steps)
    for signs in (np.ones(steps), np.random.default_rng(1).choice([-1.0, 1.0], steps)):
        x, state = jnp.zeros(()), adam.init(jnp.zeros(()))
        for s in range(steps):
            u, state = adam.update(jnp.asarray(signs[s] * 0.3), state)
            t = min(max((s - warm) / (steps - warm), 0.0), 1.0)
            sched = (s + 1) / warm if s < warm else final + (1 - final) * 0.5 * (1 + np.cos(np.pi * t))
            x = x - rate * sched * u
        moved = abs(float(x))
        assert moved <= bound * (1 + 1e-5)
        if signs.min() > 0:
            assert moved == pytest.approx(bound, rel=1e-3)


def test_the_rate_exponent_interval_comes_from_the_seeds_own_slopes():
    """With seeds whose best rates disagree, the interval is the Student-t one over the seeds'
    slopes (not a bootstrap, which three seeds cannot support)."""
    rates = [0.005, 0.01, 0.02]
    centres = {0: 0.0, 1: 0.3, 2: -0.6}
    table = {a: {"rates": rates, "seeds": [0, 1, 2], "best_rate": 0.01,
                 "bpb": np.array([[(np.log(r / 0.01) - centres[k] * np.log(a)) ** 2 for k in range(3)] for r in rates])} for a in (0.5, 1.0, 2.0)}
    ex = an.rate_exponent(table)
    low, high = stats.t.interval(0.95, 2, loc=np.mean(ex["per_seed"]), scale=stats.sem(ex["per_seed"]))
    assert (ex["low"], ex["high"]) == pytest.approx((low, high))
    assert len(set(np.round(ex["per_seed"], 6))) == 3


@pytest.mark.parametrize("call, name", [
    (lambda: an.rate_exponent({1.0: {"rates": [0.01, 0.02], "seeds": [0, 1], "best_rate": 0.01, "bpb": np.array([[np.nan, 1.0], [1.0, 1.0]])},
                               2.0: {"rates": [0.01, 0.02], "seeds": [0, 1], "best_rate": 0.01, "bpb": np.ones((2, 2))}}), "table"),
    (lambda: an.rate_exponent({1.0: {}}), "table"),
    (lambda: an.paired_against_one({2.0: {"best": np.ones(3)}}), "table"),
    (lambda: an.max_scale_move(float("nan"), 10, 0.1, 0.1), "rate"),
    (lambda: an.max_scale_move(0.01, 0, 0.1, 0.1), "steps"),
    (lambda: an.max_scale_move(0.01, 10, 2.0, 0.1), "warmup"),
    (lambda: an.max_scale_move(0.01, 10, 0.1, -1.0), "final"),
])
def test_bad_arguments_are_refused_by_name(call, name):
    with pytest.raises(ValueError, match=rf"^{name} "):
        call()
