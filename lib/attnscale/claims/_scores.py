"""Recomputations about dot-product scores, their variance and softmax saturation (chapters 2, 3, 9)."""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from ..scores import sample_dot_products
from ..softmax import jacobian_max_entry, power_weights, softmax
from ._registry import fd_jacobian, inputs, refuted, register

#: pairs per Monte Carlo estimate below; the relative standard error of a sample
#: variance of a product of normals is sqrt((2 + 6/d)/N) ~ 1%, of a mean ~ 1/sqrt(N)
PAIRS = 20000


@lru_cache(maxsize=16)
def _dots(seed: int, d: int, sigma: float = 1.0) -> np.ndarray:
    """PAIRS dot products of vectors with N(0, sigma^2) coordinates (read-only: the
    records that share a seed and width share one sample, drawn once)."""
    dots = sigma * sigma * sample_dot_products(np.random.default_rng(seed), PAIRS, d)
    dots.flags.writeable = False
    return dots


@register
def dot_variance_over_d(rec: dict) -> float:
    """Var[q.k]/d by simulation at d = 256 (the claim: 1)."""
    return float(_dots(7, 256).var() / 256)


@register
def dot_moments(rec: dict) -> float:
    """Monte Carlo moments of products of independent unit normals (d = 64):
    mean: E[q.k]/sqrt(d); cross: E[q_1 k_1 q_2 k_2]; diag: E[q_1^2 k_1^2];
    product: Var[q_1 k_1]; scaled: Var[q.k/sqrt(d)]."""
    rng = np.random.default_rng(71)
    q, k = rng.standard_normal((2, PAIRS, 64))
    x, y = (q * k)[:, 0::2].ravel(), (q * k)[:, 1::2].ravel()  # 640000 independent products per column
    values = {
        "mean": lambda: np.einsum("ij,ij->i", q, k).mean() / 8.0,
        "cross": lambda: (x * y).mean(),
        "diag": lambda: (q * q * k * k).mean(),
        "product": lambda: x.var(),
        "scaled": lambda: (np.einsum("ij,ij->i", q, k) / 8.0).var(),
    }
    return float(values[inputs(rec)["moment"]]())


@register
def variance_rule(rec: dict) -> float:
    """Var(aX)/(a^2 Var X) (rule: scale, a = 3) or Var(X+Y)/(Var X + Var Y) (rule: sum,
    X normal, Y exponential of variance 4), from fresh samples against the laws' variances."""
    rng = np.random.default_rng(72)
    if inputs(rec)["rule"] == "scale":
        return float((3.0 * rng.standard_normal(200_000)).var() / 9.0)
    return float((rng.standard_normal(200_000) + rng.exponential(2.0, 200_000)).var() / 5.0)


@register
def divided_variance_ratio(rec: dict) -> float:
    """Var(q.k / c(d)) by simulation (d = 256) over the source's law for it, for
    c = d (law 1/d), sqrt(d) (law 1) and log d (law d / log^2 d)."""
    d, dots = 256, _dots(73, 256)
    divisor, law = {"d": (d, 1 / d), "sqrt": (np.sqrt(d), 1.0), "log": (np.log(d), d / np.log(d) ** 2)}[inputs(rec)["divisor"]]
    return float((dots / divisor).var() / law)


@register
def scaled_variance_sigma2(rec: dict) -> float:
    """Var(q.k)/d = Var(q.k / sqrt(d)) with components of variance sigma^2 = 4 (d = 64)."""
    return float((_dots(8, 64, 2.0) / 8.0).var())


@register
def std_unscaled(rec: dict) -> list[float]:
    """Standard deviation of q.k by simulation at each d (claim: sqrt(d))."""
    return [float(_dots(74, int(d)).std()) for d in inputs(rec)["d"]]


@register
def three_sigma_unscaled(rec: dict) -> list[float]:
    """3 sigma = 3 sqrt(d) (the variance law is checked by std_unscaled)."""
    return [float(3 * np.sqrt(d)) for d in inputs(rec)["d"]]


@register
def softmax_values(rec: dict) -> list[float]:
    return softmax(inputs(rec)["scores"]).tolist()


@register
def softmax_top_gradient(rec: dict) -> float:
    """dp_1/dx_1 by central differences of the library softmax."""
    return float(fd_jacobian(np.asarray(inputs(rec)["scores"], dtype=float), 1.0)[0, 0])


@register
def product_arithmetic(rec: dict) -> float:
    """p (1 - p) for the source's printed p."""
    p = float(inputs(rec)["p"])
    return p * (1 - p)


@register
def p3_of_a(rec: dict) -> list[float]:
    """softmax([a, a, 2a])_3 from the library, against the source's printed digits."""
    return [float(softmax([a, a, 2.0 * a])[2]) for a in inputs(rec)["a"]]


@register
def saturated_jacobian(rec: dict) -> float:
    """Largest |entry| of the Jacobian at scores [a, a, 2a] (inputs: a), from the closed form
    ``p_i (delta_ij - p_j)`` in 60-digit arithmetic (mpmath), so the tiny entries are not
    rounding noise (finite differences cannot resolve them: ``1 - p_3`` is about 1e-44)."""
    import mpmath as mp

    a = float(inputs(rec)["a"])
    with mp.workdps(60):
        x = [mp.mpf(a), mp.mpf(a), mp.mpf(2 * a)]
        z = mp.fsum(mp.exp(xi) for xi in x)
        p = [mp.exp(xi) / z for xi in x]
        return float(max(abs(p[i] * ((i == j) - p[j])) for i in range(3) for j in range(3)))


@register
def median_top_gradient(rec: dict) -> list[float]:
    """Median largest Jacobian entry of three-key rows with score standard deviation std."""
    rng = np.random.default_rng(11)
    return [float(np.median(jacobian_max_entry(softmax(sd * rng.standard_normal((200_000, 3)))))) for sd in inputs(rec)["std"]]


@register
def top_weight_unscaled(rec: dict) -> float:
    """Median largest softmax weight of rows of n = 512 unscaled dot products (standard deviation sqrt(d), d = inputs.d)."""
    rows = np.sqrt(float(inputs(rec)["d"])) * np.random.default_rng(75).standard_normal((2000, 512))
    return float(np.median(softmax(rows).max(axis=1)))


@register
def attention_rows(rec: dict) -> bool:
    """Scaled dot-product attention three ways, for 5 queries over 9 keys (d = 16, values of width 4):
    the matrix form softmax(Q K^T / sqrt(d)) V through the library softmax; the row formulas
    a_ij = e^{q_i.k_j / sqrt(d)} / sum_j' e^{q_i.k_j' / sqrt(d)} and o_i = sum_j a_ij v_j written out;
    and the library's attention layer (training.model.forward with identity projections, scale 1,
    whose output is read from its difference to a zero target).
    All weights and outputs agree to 1e-12."""
    from ..training.model import forward

    rng = np.random.default_rng(81)
    m, n, d, c = 5, 9, 16, 4
    Q, K, V = rng.standard_normal((m, d)), rng.standard_normal((n, d)), rng.standard_normal((n, c))
    A = softmax(Q @ K.T / np.sqrt(d))
    e = np.array([[np.exp(np.dot(q, k) / np.sqrt(d)) for k in K] for q in Q])
    a = e / e.sum(axis=1, keepdims=True)
    o = np.array([sum(a[i, j] * V[j] for j in range(n)) for i in range(m)])
    eye = np.eye(d)[None, None]
    data = {"K": np.broadcast_to(K, (1, m, n, d)), "V": np.broadcast_to(V, (1, m, n, c)), "x": Q[None],
            "target": np.zeros((1, m, c)), "j": np.zeros((1, m), dtype=int)}
    layer = forward({"Wq": eye, "Wk": eye}, data, 1.0)
    output = layer["diff"][0, :, 0] + data["target"][0]  # the layer returns output minus target
    close = lambda x, y: bool(np.allclose(x, y, rtol=1e-12, atol=1e-14))
    return close(A, a) and close(A @ V, o) and close(layer["p"][0, :, 0], a) and close(output, o)


@register
def relu2_row_normalised(rec: dict) -> bool:
    """relu^2(q_i.k_j / sqrt(d)) divided by its sum over the keys j' of the row (6 queries, 12 keys,
    d = 16): each row sums to 1, and the weights equal the library's normalised relu^2 weights
    (power_weights) both with the scale 1/sqrt(d) and without it (relative 1e-12)."""
    rng = np.random.default_rng(82)
    d = 16
    x = rng.standard_normal((6, d)) @ rng.standard_normal((12, d)).T
    r = np.maximum(x / np.sqrt(d), 0.0) ** 2
    a = r / r.sum(axis=1, keepdims=True)
    close = lambda u, w: bool(np.allclose(u, w, rtol=1e-12, atol=0))
    return close(a.sum(axis=1), 1.0) and close(a, power_weights(x, 2.0, 1 / np.sqrt(d))) and close(a, power_weights(x, 2.0))


@register
def relu2_normaliser_cancels(rec: dict) -> bool:
    """relu^2(lambda x) / sum relu^2(lambda x) does not depend on lambda > 0."""
    s = np.random.default_rng(61).standard_normal((50, 64))
    return bool(np.allclose(power_weights(s, 2.0, 0.1), power_weights(s, 2.0, 10.0), rtol=1e-12))


@register
def temperature_changes_output(rec: dict) -> bool:
    """Whether the activation's (normalised, for exp and relu2) output at 1/tau = 0.5 differs from 1/tau = 2 (activation: exp, relu2, sigmoid, tanh)."""
    x = np.random.default_rng(62).standard_normal(64)
    acts: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "exp": lambda z: softmax(z), "relu2": lambda z: power_weights(z, 2.0),
        "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "tanh": lambda z: np.tanh(z)}
    act = acts[inputs(rec)["activation"]]
    return not bool(np.allclose(act(0.5 * x), act(2.0 * x), rtol=1e-12))


@register
def softmax_homogeneous(rec: dict) -> bool:
    """Whether softmax(lambda x) / softmax(x) is the same constant in every entry (it would be lambda^k)."""
    x = np.random.default_rng(63).standard_normal(16)
    ratio = softmax(3.0 * x) / softmax(x)
    return bool(np.allclose(ratio, ratio[0], rtol=1e-9))


@register
def relu2_property(rec: dict) -> bool:
    """relu^2 by differences: homogeneous (relu^2(l x) = l^2 relu^2(x), l > 0); differentiable at 0
    (one-sided quotients agree); derivative unbounded (2x at x = 1e3); zero where x <= 0 (sparse)."""
    r = lambda z: np.maximum(z, 0.0) ** 2
    x, h = np.random.default_rng(64).standard_normal(32), 1e-6
    checks = {
        "homogeneous": lambda: np.allclose(r(2.5 * x), 6.25 * r(x), rtol=1e-12),
        "differentiable_at_0": lambda: abs((r(h) - r(0.0)) / h - (r(0.0) - r(-h)) / h) < 1e-5,
        "unbounded_derivative": lambda: abs((r(1e3 + h) - r(1e3 - h)) / (2 * h) - 2e3) < 1e-3,
        "sparse": lambda: np.all(r(-np.abs(x)) == 0) and np.all((r(-np.abs(x) + h) - r(-np.abs(x) - h)) == 0),
    }
    return bool(checks[inputs(rec)["property"]]())


@register
def relu2_sparser(rec: dict) -> bool:
    """Share of exactly-zero weights at unit-normal scores: relu^2 (about half) above softmax (none)."""
    s = np.random.default_rng(65).standard_normal((100, 256))
    return bool(np.mean(power_weights(s, 2.0) == 0) > 0.4 and np.mean(softmax(s) == 0) == 0)


@register
def gau_scale_identity(rec: dict) -> bool:
    """(1/n) relu^2(x / sqrt(s)) = (1/(n s)) relu^2(x) at s = 128, n = 512."""
    x = np.random.default_rng(66).standard_normal((8, 512)) * 10
    return bool(np.allclose(np.maximum(x / np.sqrt(128), 0) ** 2 / 512, np.maximum(x, 0) ** 2 / (512 * 128), rtol=1e-12))


@register
def printed_normaliser_rows(rec: dict) -> bool:
    """Whether the weights with the printed Z_i (a sum over the query index i) sum to 1 over the keys j.
    The same row test must pass for the correction, a sum over the key index j."""
    r = np.maximum(np.random.default_rng(67).standard_normal((6, 6)), 0) ** 2 + 1e-3
    rows_sum_to_one = lambda w: bool(np.allclose(w.sum(axis=1), 1.0))
    return refuted(rows_sum_to_one(r / r.sum(axis=0, keepdims=True)), rows_sum_to_one(r / r.sum(axis=1, keepdims=True)), rec)


@register
def power_scale_free(rec: dict) -> bool:
    """y = x^6 / sum x^6: forward and (kind: backward) the Jacobian of x -> y(lambda x) do not depend on lambda;
    (kind: epsilon) with an epsilon of 1e-6 in the denominator they do."""
    x, eps = np.abs(np.random.default_rng(68).normal(size=6)) + 0.1, 1e-6 if inputs(rec)["kind"] == "epsilon" else 0.0
    y = (lambda z: z**6 / ((z**6).sum() + eps)) if eps else (lambda z: power_weights(z, 6.0))
    if inputs(rec)["kind"] == "backward":
        return bool(np.allclose(fd_jacobian(x, 1.0, fn=lambda z: y(0.25 * z)), fd_jacobian(x, 1.0, fn=y), rtol=1e-6, atol=1e-9))
    return bool(np.allclose(y(0.01 * x), y(x), rtol=1e-9))
