"""Recomputations about entropies, temperature and length (chapters 4, 8, 9)."""

from __future__ import annotations

import numpy as np

from ..entropy import alpha_for_mean_field_entropy, mean_field_entropy_cosine, mean_field_entropy_normal, renyi2, shannon, softmax_entropy
from ..optimum import alpha_star_normal, collision_normal
from ..softmax import log_softmax, logsumexp, softmax
from ._registry import fd_derivative, inputs, register


def _rows(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((20, 30))


@register
def entropy_identity(rec: dict) -> bool:
    """log Z - alpha E_p[s] (the library's softmax_entropy) against -sum p log p of the softmax."""
    s = _rows(63)
    return bool(np.allclose(softmax_entropy(s, 2.0), shannon(softmax(s, 2.0)), rtol=1e-12))


@register
def entropy_expansion(rec: dict) -> bool:
    """-(1/Z) sum e^{x_i} x_i + log Z (1/Z) sum e^{x_i} (eq. 37 of the 2022 notes) against -sum p log p."""
    x = _rows(64)
    e = np.exp(x)
    Z = e.sum(-1)
    return bool(np.allclose(-(e * x).sum(-1) / Z + np.log(Z) * e.sum(-1) / Z, shannon(softmax(x)), rtol=1e-12))


@register
def tempered_entropy(rec: dict) -> bool:
    """H_tau = log Z_tau - (1/(tau Z_tau)) sum e^{x_i/tau} x_i against -sum p log p at tau = 0.7."""
    x, tau = _rows(65), 0.7
    e = np.exp(x / tau)
    Z = e.sum(-1)
    return bool(np.allclose(np.log(Z) - (e * x).sum(-1) / (tau * Z), shannon(softmax(x, 1 / tau)), rtol=1e-12))


@register
def entropy_rises_with_tau(rec: dict) -> bool:
    """dH/dtau > 0 by differences for 20 random rows at tau = 0.2, 1, 5."""
    x = _rows(66)
    return all(np.all(fd_derivative(lambda t: softmax_entropy(x, 1 / t), tau) > 0) for tau in (0.2, 1.0, 5.0))


@register
def entropy_limits(rec: dict) -> bool:
    """H -> 0 as tau -> 0 and H -> log n as tau -> infinity (tau = 1e6), rows of n = 30. The cold
    end is tau = g / 50 for g the smallest gap between a row's two largest scores, where every
    row's H is below 29 x 51 e^-50, about 3e-20 (a fixed tau, say 1e-3, leaves H above 1e-6 in a row whose gap is
    under about 0.02: one row set in two, over seeds)."""
    x = _rows(67)
    top = np.sort(x, axis=-1)[:, -2:]
    cold = 50.0 / float(np.min(top[:, 1] - top[:, 0]))
    return bool(np.all(shannon(softmax(x, cold)) < 1e-6) and np.allclose(shannon(softmax(x, 1e-6)), np.log(30), atol=1e-9))


@register
def temperature_limits(rec: dict) -> bool:
    """softmax(x/tau): one-hot at the maximum as tau -> 0, uniform as tau -> infinity."""
    x = _rows(68)
    cold, hot = softmax(x, 1e4), softmax(x, 1e-8)
    return bool(np.allclose(cold, np.eye(30)[x.argmax(-1)], atol=1e-12) and np.allclose(hot, 1 / 30, rtol=1e-6))


@register
def softmax_definition(rec: dict) -> bool:
    """The definition p_i = e^{alpha s_i} / Z(alpha), Z(alpha) = sum_j e^{alpha s_j}, evaluated in extended
    precision (mpmath, 40 digits) for 10 random rows at each alpha of inputs.alpha (default 1): the
    library's softmax (relative 1e-13) and logsumexp (log Z, absolute 1e-12) must agree with it."""
    import mpmath as mp

    rows = np.random.default_rng(76).normal(size=(10, 6)) * 3
    ok = True
    with mp.workdps(40):
        for a in inputs(rec).get("alpha", [1.0]):
            for s in rows:
                e = [mp.e ** (mp.mpf(float(a)) * mp.mpf(si)) for si in s]
                Z = sum(e)
                ok &= bool(np.allclose(softmax(s, float(a)), [float(ei / Z) for ei in e], rtol=1e-13, atol=0))
                ok &= abs(float(logsumexp(s, float(a))) - float(mp.log(Z))) < 1e-12
    return bool(ok)


@register
def shannon_definition(rec: dict) -> bool:
    """H(p) = -sum_i p_i log p_i evaluated in extended precision (mpmath, 40 digits) for 10 softmax rows:
    the library's entropy of p (entropy.shannon) and from the scores (softmax_entropy) agree with it
    (relative 1e-12)."""
    import mpmath as mp

    s = np.random.default_rng(77).normal(size=(10, 7)) * 2
    p = softmax(s)
    with mp.workdps(40):
        ref = [float(-sum(mp.mpf(pi) * mp.log(mp.mpf(pi)) for pi in row)) for row in p]
    return bool(np.allclose(shannon(p), ref, rtol=1e-12, atol=0) and np.allclose(softmax_entropy(s), ref, rtol=1e-12, atol=0))


@register
def softmax_basics(rec: dict) -> bool:
    """In extended precision (mpmath, 40 digits): property distribution (in (0,1), sums to 1), shift
    (softmax(x + c) = softmax(x)) or order (x_i > x_j => p_i > p_j), for 10 random rows; the library's
    softmax must agree."""
    import mpmath as mp

    rng = np.random.default_rng(69)
    prop = inputs(rec)["property"]
    ok = True
    with mp.workdps(40):
        for x in rng.normal(size=(10, 6)) * 5:
            e = [mp.e ** mp.mpf(xi) for xi in x]
            p = [ei / sum(e) for ei in e]
            ok &= np.allclose([float(pi) for pi in p], softmax(x), rtol=1e-13)
            if prop == "distribution":
                ok &= all(0 < pi < 1 for pi in p) and abs(sum(p) - 1) < mp.mpf("1e-35")
            elif prop == "shift":
                e2 = [mp.e ** (mp.mpf(xi) + mp.mpf("123.456")) for xi in x]
                ok &= all(abs(ei / sum(e2) - pi) < mp.mpf("1e-35") for ei, pi in zip(e2, p))
            else:
                order = np.argsort(x)
                ok &= all(p[i] < p[j] for i, j in zip(order[:-1], order[1:]))
    return bool(ok)


@register
def stable_softmax(rec: dict) -> bool:
    """At x = (1000, 999, 998) the direct formula overflows (nan), while subtracting the maximum matches mpmath."""
    import mpmath as mp

    x = np.array([1000.0, 999.0, 998.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(x) / np.exp(x).sum()
    shifted = softmax(x)  # the library subtracts the maximum
    with mp.workdps(30):
        ref = [float(mp.e ** mp.mpf(xi) / sum(mp.e ** mp.mpf(xj) for xj in x)) for xi in x]
    return bool(np.all(np.isnan(naive)) and np.allclose(shifted, ref, rtol=1e-14))


@register
def log_softmax_identities(rec: dict) -> bool:
    """log softmax(x)_i = x_i - logsumexp(x) and logsumexp(x) = max + log sum e^{x - max}, at x ~ 800 (the library) against mpmath."""
    import mpmath as mp

    x = 800 + np.random.default_rng(70).normal(size=5)
    with mp.workdps(40):
        lse = mp.log(sum(mp.e ** mp.mpf(xi) for xi in x))
        ok = abs(float(lse) - float(logsumexp(x))) < 1e-12 and abs(float(lse) - (x.max() + np.log(np.exp(x - x.max()).sum()))) < 1e-12
        return bool(ok and np.allclose(log_softmax(x), [float(mp.mpf(xi) - lse) for xi in x], atol=1e-12))


@register
def renyi_definition(rec: dict) -> bool:
    """The Renyi family (1/(1-b)) log sum p^b near b = 2 (b = 2 +- 1e-6, mpmath) against the library's renyi2 = -log sum p^2."""
    import mpmath as mp

    p = softmax(np.random.default_rng(71).normal(size=9), 1.5)
    with mp.workdps(30):
        H = lambda b: mp.log(sum(mp.mpf(pi) ** b for pi in p)) / (1 - b)
        near = float((H(mp.mpf(2) - mp.mpf("1e-6")) + H(mp.mpf(2) + mp.mpf("1e-6"))) / 2)
    return bool(abs(near - float(renyi2(p))) < 1e-9)


@register
def renyi_below_shannon(rec: dict) -> bool:
    """H_2 <= H on 1000 random rows, with equality on a uniform row."""
    p = softmax(np.random.default_rng(72).normal(size=(1000, 12)), 2.0)
    return bool(np.all(renyi2(p) <= shannon(p) + 1e-12) and abs(renyi2(np.full(5, 0.2)) - shannon(np.full(5, 0.2))) < 1e-12)


@register
def entropy_slope_at_optimum(rec: dict) -> float:
    """d H / d log n along alpha*(n) at n = 512 (normal scores, mean field), by differences in log n, for
    kind renyi (H_2 = -log(e^{a^2}/n)) or shannon; at a fixed scale both slopes are 1 (the claim: slow, near 0)."""
    if inputs(rec)["kind"] == "renyi":
        H = lambda ln: float(-np.log(collision_normal(alpha_star_normal(np.exp(ln)), np.exp(ln))))
    else:
        H = lambda ln: float(mean_field_entropy_normal(alpha_star_normal(np.exp(ln)), np.exp(ln)))
    return float(fd_derivative(H, np.log(512.0), h=1e-3))


@register
def invariant_scale(rec: dict) -> float:
    """The scale that keeps the mean-field entropy of normal scores at its n = 512, alpha = 1 value, at
    n = inputs.n (entropy.alpha_for_mean_field_entropy, as chapter 8); a scale ~ log n would be log_512 n there."""
    return float(alpha_for_mean_field_entropy(float(inputs(rec)["n"]), 512.0, 1.0))


@register
def partial_compensation(rec: dict) -> bool:
    """From n0 = 512 to n = 2048 (normal scores, mean field) the scale log_512 n shrinks the entropy
    rise of a fixed scale, without removing it."""
    h0 = mean_field_entropy_normal(1.0, 512.0)
    fixed, scaled = mean_field_entropy_normal(1.0, 2048.0) - h0, mean_field_entropy_normal(np.log(2048) / np.log(512), 2048.0) - h0
    return bool(0 < scaled < fixed)


@register
def tau_example(rec: dict) -> float:
    """log 512 / log 2048, by mpmath (the claim: 9/11 ~ 0.818)."""
    import mpmath as mp

    return float(mp.log(512) / mp.log(2048))


@register
def tau_forms_agree(rec: dict) -> bool:
    """1 / log_{n_train} n_test = log n_train / log n_test (math.log with a base against the ratio)."""
    import math

    return all(abs(1 / math.log(nt, n0) - math.log(n0) / math.log(nt)) < 1e-14 for n0, nt in ((512, 2048), (128, 100000)))


@register
def golden_constant(rec: dict) -> float:
    """(1/2) log((1 + sqrt 5)/2), by mpmath (the claim: 0.24)."""
    import mpmath as mp

    with mp.workdps(30):
        return float(mp.log(mp.phi) / 2)


@register
def su_linear_entropy_at_usual_scale(rec: dict) -> float:
    """0.24 lambda d at lambda = 1/sqrt(d), d = 64, against the mean-field drop: returns the drop."""
    d = 64.0
    return float(np.log(512) - mean_field_entropy_cosine(np.sqrt(d), 512.0, d))


@register
def softmax_temperable(rec: dict) -> bool:
    s = np.random.default_rng(62).standard_normal((50, 64))
    return bool(np.all(softmax_entropy(s, 0.5) > softmax_entropy(s, 2.0)))

