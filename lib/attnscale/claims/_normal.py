"""Recomputations for standard normal scores: the mean-field objective and its optimum (chapter 5)."""

from __future__ import annotations

import numpy as np
from scipy.integrate import quad
from scipy.optimize import minimize_scalar

from ..entropy import collision
from ..exact import expected_half_l1, expected_sum_p2
from ..optimum import alpha_star_normal, alpha_star_normal_lambertw, collision_normal, fit_through_origin, n_for_alpha_normal, objective_normal, su_sweep
from ..recommend import decoder_best_scale, decoder_share
from ..scores import log_mgf_normal
from ..softmax import gradient_l1, softmax
from ._registry import fd_derivative, fd_second, inputs, refuted, register


def _mgf_by_quadrature(t: float) -> float:
    """E[e^{t s}] for standard normal s, integrating phi(s) e^{t s} around its peak at s = t."""
    return quad(lambda s: np.exp(t * s - 0.5 * s * s) / np.sqrt(2 * np.pi), t - 40, t + 40, epsabs=0, epsrel=1e-12, points=[t])[0]


@register
def normal_mgf(rec: dict) -> bool:
    """E[e^{k alpha s}] by quadrature against exp(log_mgf_normal(k alpha)) for k = inputs.k (1 or 2)."""
    k = float(inputs(rec).get("k", 1))
    return all(abs(_mgf_by_quadrature(k * a) / np.exp(log_mgf_normal(k * a)) - 1) < 1e-9 for a in (0.3, 1.0, 2.2))


@register
def complete_square(rec: dict) -> bool:
    s, a = np.random.default_rng(41).normal(size=(2, 50))
    return bool(np.allclose(-s * s / 2 + a * s, -0.5 * (s - a) ** 2 + a * a / 2, rtol=1e-13, atol=1e-14))


@register
def mean_field_collision(rec: dict) -> bool:
    """E[e^{2 alpha s}] / (n E[e^{alpha s}]^2) by quadrature against collision_normal = e^{alpha^2}/n."""
    return all(abs(_mgf_by_quadrature(2 * a) / (512 * _mgf_by_quadrature(a) ** 2) / float(collision_normal(a, 512)) - 1) < 1e-9 for a in (0.5, 1.5, 2.5))


@register
def mean_field_ratio(rec: dict) -> float:
    """Exact E[sum p^2] for n = 512 normal scores (attnscale.exact, quadrature) divided by the
    mean-field e^{alpha^2}/n, at alpha = inputs.alpha or, for "star", the mean-field optimum."""
    a = inputs(rec).get("alpha", "star")
    a = float(alpha_star_normal(512.0)) if a == "star" else float(a)
    return float(expected_sum_p2(512.0, a) / collision_normal(a, 512))


@register
def gradient_limit(rec: dict) -> float:
    """alpha (1 - sum p^2) for a row with a unique maximum (n = 8) at alpha = 1e-6 (limit: zero)
    or alpha = 2000 (limit: infinity); the claim: it tends to 0."""
    s = np.random.default_rng(43).normal(size=8)
    a = 1e-6 if inputs(rec)["limit"] == "zero" else 2000.0
    return float(gradient_l1(softmax(s, a), a))


@register
def collision_limit(rec: dict) -> float:
    """sum p^2 at alpha -> 0 (times n; the claim: 1/n) or alpha -> infinity (the claim: 1), n = 8."""
    s = np.random.default_rng(44).normal(size=8)
    zero = inputs(rec)["limit"] == "zero"
    return float(collision(softmax(s, 1e-9 if zero else 1e4))) * (8 if zero else 1)


@register
def collision_derivative(rec: dict) -> bool:
    """The source's df/dalpha (form: eq23, with a factor alpha in the last sum; form: eq24) against differences of f = sum p^2."""
    s, a = np.random.default_rng(45).normal(size=6), 1.3
    e1, e2 = np.exp(a * s), np.exp(2 * a * s)
    Z = e1.sum()
    claimed = {"eq23": (2 * (s * e2).sum() * Z**2 - e2.sum() * 2 * Z * a * (s * e1).sum()) / Z**4,
               "eq24": 2 / Z**2 * ((s * e2).sum() - e2.sum() * (s * e1).sum() / Z)}[inputs(rec)["form"]]
    return bool(abs(fd_derivative(lambda x: float(collision(softmax(s, x))), a) - claimed) < 1e-7)


@register
def collision_quotient(rec: dict) -> bool:
    """f = sum p^2 of the library softmax against the quotient sum e^{2 alpha s_i} / (sum e^{alpha s_j})^2 at
    alpha = 0.3, 1.3, 3 (form: value, relative 1e-12), or their central differences in alpha (form:
    derivative, absolute 1e-8, a derivative of order 0.1 here)."""
    s = np.random.default_rng(46).normal(size=7)
    lib = lambda x: float(collision(softmax(s, x)))
    quotient = lambda x: float(np.exp(2 * x * s).sum() / np.exp(x * s).sum() ** 2)
    if inputs(rec)["form"] == "value":
        return all(abs(quotient(a) / lib(a) - 1) < 1e-12 for a in (0.3, 1.3, 3.0))
    return all(abs(fd_derivative(quotient, a) - fd_derivative(lib, a)) < 1e-8 and abs(fd_derivative(lib, a)) > 1e-3 for a in (0.3, 1.3, 3.0))


@register
def objective_limits(rec: dict) -> bool:
    """G = 2 alpha (1 - e^{alpha^2}/n), n = 512: G/(2 alpha (1 - 1/n)) -> 1 as alpha -> 0 (end: small); G falls without bound (end: large)."""
    G = lambda a: 2 * float(objective_normal(a, 512))
    if inputs(rec)["end"] == "small":
        return bool(abs(G(1e-4) / (2e-4 * (1 - 1 / 512)) - 1) < 1e-6)
    return bool(G(4.0) < -1e3 and G(6.0) < 1e3 * G(4.0))


@register
def objective_derivative(rec: dict) -> bool:
    """dG/dalpha = 2 (1 - e^{alpha^2}(1 + 2 alpha^2)/n) against differences of G = 2 objective_normal."""
    return all(abs(fd_derivative(lambda x: 2 * objective_normal(x, 512), a) - 2 * (1 - np.exp(a * a) * (1 + 2 * a * a) / 512)) < 1e-7 for a in (0.5, 2.0))


@register
def first_order_condition(rec: dict) -> bool:
    """The maximiser of G found by a bounded search satisfies e^{a^2}(1 + 2a^2) = n (form: exp) or
    a^2 + log(1 + 2a^2) = log n (form: log), n = 512."""
    a = minimize_scalar(lambda x: -objective_normal(x, 512), bounds=(0.1, 3.0), method="bounded", options={"xatol": 1e-12}).x
    if inputs(rec).get("form") == "log":
        return bool(abs(a * a + np.log1p(2 * a * a) - np.log(512)) < 1e-6)
    return bool(abs(float(n_for_alpha_normal(a)) / 512 - 1) < 1e-6)


@register
def log_approximations(rec: dict) -> bool:
    """log(1 + 2x) ~ 2x at x = 0.005 and ~ log(2x) at x = 200 (each within 1%)."""
    return bool(abs(np.log1p(0.01) / 0.01 - 1) < 0.01 and abs(np.log1p(400.0) / np.log(400.0) - 1) < 0.01)


@register
def second_derivative_formula(rec: dict) -> bool:
    """Claimed G'' = -(2 e^{a^2}/n)(4a^2 + 4a^4 + 2) for G = 2a(1 - e^{a^2}/n); compared by differences,
    which must also confirm the correction -(4a e^{a^2}/n)(3 + 2a^2) (differencing error 5e-8 relative)."""
    a = 1.7
    claimed = -(2 * np.exp(a * a) / 512) * (4 * a * a + 4 * a**4 + 2)
    corrected = -(4 * a * np.exp(a * a) / 512) * (3 + 2 * a * a)
    fd = fd_second(lambda x: 2 * objective_normal(x, 512), a)
    return refuted(abs(fd - claimed) < 1e-4 * abs(fd), abs(fd - corrected) < 1e-4 * abs(fd), rec)


@register
def second_derivative_sign(rec: dict) -> bool:
    """G'' < 0 at the optimum, by differences, for n = 100, 512, 1e4."""
    return all(fd_second(lambda x: objective_normal(x, n), float(alpha_star_normal(n))) < 0 for n in (100.0, 512.0, 1e4))


@register
def small_alpha_order(rec: dict) -> float:
    """Order in alpha of an error term, from the ratio at alpha = 0.02 and 0.01 (normal scores, n = 512):
    term 'f' for n f - 1 (the source: -4 alpha^4), term 'G' for G - 2 alpha (1 - 1/n) (the source: O(alpha^5))."""
    err = (lambda a: collision_normal(a, 512) * 512 - 1) if inputs(rec)["term"] == "f" else (lambda a: 2 * objective_normal(a, 512) - 2 * a * (1 - 1 / 512))
    return float(np.log2(abs(err(0.02) / err(0.01))))


@register
def mgf_square_coefficient(rec: dict) -> float:
    """Coefficient of alpha^2 in M_1(alpha)^2 for unit variance, by differences of exp(2 log_mgf_normal) at 0 (the source: 2)."""
    return 0.5 * fd_second(lambda a: float(np.exp(2 * log_mgf_normal(a))), 0.0, h=1e-3)


@register
def small_alpha_linear(rec: dict) -> float:
    """G(alpha)/alpha at alpha = 1e-3 over 2 (1 - 1/n), n = 512 (the claim: linear growth, ratio 1)."""
    return float(2 * objective_normal(1e-3, 512) / 1e-3 / (2 * (1 - 1 / 512)))


@register
def normal_fit_c(rec: dict) -> float:
    n = su_sweep()
    return float(fit_through_origin(alpha_star_normal(n), np.sqrt(np.log(n)))[0])


@register
def normal_range_2_3(rec: dict) -> float:
    """Share of the sweep n = 40 ... 20000 on which alpha* is in [2, 3] (the claim: all of a wide range)."""
    a = alpha_star_normal(su_sweep())
    return float(np.mean((a >= 2) & (a <= 3)))


@register
def advice_beats_standard(rec: dict) -> float:
    """Share of log-spaced n in [492, 153958] (where alpha* is in [2, 3]) on which the
    mean-field objective at 2.5 exceeds that at 1 (the claim: 2.5 is the better choice)."""
    n = np.geomspace(n_for_alpha_normal(2.0), n_for_alpha_normal(3.0), 2001)
    return float(np.mean(objective_normal(2.5, n) > objective_normal(1.0, n)))


@register
def advice_optimal_n(rec: dict) -> float:
    """The length at which 2.5 is the mean-field optimum: n = e^{6.25} (1 + 2 * 6.25), the inverse of alpha_star_normal."""
    return float(n_for_alpha_normal(2.5))


@register
def fit_normal_values(rec: dict) -> list[float]:
    """0.84 sqrt(log n) at each n (constant c: inputs c, default 0.84)."""
    return [float(inputs(rec).get("c", 0.84) * np.sqrt(np.log(n))) for n in inputs(rec)["n"]]


@register
def exact_normal_values(rec: dict) -> list[float]:
    return np.asarray(alpha_star_normal(np.array(inputs(rec)["n"], dtype=float))).tolist()


@register
def closed_form_exists(rec: dict) -> bool:
    """'No analytic solution': the closed form sqrt(W0(n sqrt(e)/2) - 1/2), with SciPy's Lambert W,
    solves the first-order condition (so the claim is false)."""
    n = np.array([10.0, 512.0, 1e6])
    a = alpha_star_normal_lambertw(n)
    return not bool(np.allclose(n_for_alpha_normal(a), n, rtol=1e-12))


@register
def sqrt_log_leading(rec: dict) -> float:
    """alpha*(n) / sqrt(log n) at n = 1e300: tends to 1."""
    return float(alpha_star_normal(1e300) / np.sqrt(np.log(1e300)))


@register
def expected_gradient_vanishes(rec: dict) -> float:
    """Exact E[alpha(1 - sum p^2)] at alpha = 100, n = 512 (the claim: it tends to 0)."""
    return float(expected_half_l1(512.0, 100.0))


@register
def unit_variance_gradient(rec: dict) -> float:
    """Exact E[(1/2)||J||_1] at alpha = 1 for n = 512 unit-normal scores (the claim: not vanishing, about 1)."""
    return float(expected_half_l1(512.0, 1.0))


@register
def bounded_optimum(rec: dict) -> bool:
    """The largest mean-field gradient, found by a bounded search, equals the closed form
    2 a^3 / (1 + 2 a^2) at a = alpha*(n): finite for every n (n = 512, 1e6)."""
    ok = True
    for n in (512.0, 1e6):
        best = -minimize_scalar(lambda x: -objective_normal(x, n), bounds=(0.1, 5.0), method="bounded", options={"xatol": 1e-10}).fun
        a = alpha_star_normal(n)
        ok &= abs(best - 2 * a**3 / (1 + 2 * a * a)) < 1e-8
    return bool(ok)


@register
def decoder_half_length(rec: dict) -> list[float]:
    """For a causal decoder of length T, the mean share of the best mean-field gradient
    kept by alpha*(T/2) over the mean share kept by the best single scale, for each T in
    inputs.lengths (attnscale.recommend.decoder_share and decoder_best_scale)."""
    out = []
    for length in inputs(rec).get("lengths", (512, 4096)):
        _, best_share = decoder_best_scale(int(length))
        out.append(float(decoder_share(float(alpha_star_normal(length / 2)), int(length)).mean()) / best_share)
    return out
