"""Recomputations about the softmax Jacobian and its sizes (chapters 1 and 4)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from ..entropy import collision, effective_number, renyi2
from ..softmax import gradient_l1, jacobian_frobenius, jacobian_max_entry, jacobian_spectral_norm, softmax, softmax_jacobian, softmax_vjp
from ._registry import example_row, fd_jacobian, inputs, refuted, register


@register
def jacobian_formula(rec: dict) -> bool:
    """alpha (diag p - p p^T) against central differences of softmax(alpha s)."""
    s, a = np.random.default_rng(1).normal(size=6), float(inputs(rec).get("alpha", 1.3))
    return bool(np.allclose(softmax_jacobian(softmax(s, a), a), fd_jacobian(s, a), atol=1e-8))


@register
def product_rule_split(rec: dict) -> bool:
    """dp_i/ds_j as (d e^{alpha s_i}/ds_j) (1/Z) + e^{alpha s_i} d(1/Z)/ds_j, each factor differentiated on its
    own by central differences, against the differences of the library softmax (absolute 1e-8)."""
    s, _, a = example_row()
    num, Z = np.exp(a * s), np.exp(a * s).sum()
    d_num = fd_jacobian(s, a, fn=lambda x: np.exp(a * x))
    d_inv_z = fd_jacobian(s, a, fn=lambda x: np.atleast_1d(1.0 / np.exp(a * x).sum()))[0]
    return bool(np.allclose(d_num / Z + np.outer(num, d_inv_z), fd_jacobian(s, a), atol=1e-8))


@register
def exp_derivative(rec: dict) -> bool:
    """d e^{alpha s_i} / d s_j = alpha e^{alpha s_i} delta_ij (differences of the exponential)."""
    s, _, a = example_row()
    fd = fd_jacobian(s, a, fn=lambda x: np.exp(a * x))
    return bool(np.allclose(fd, np.diag(a * np.exp(a * s)), atol=1e-8))


@register
def inverse_partition_derivative(rec: dict) -> bool:
    """d(1/Z)/ds_j = -alpha p_j / Z (differences of 1/Z against the library p)."""
    s, p, a = example_row()
    inv_z = lambda x: np.atleast_1d(1.0 / np.exp(a * x).sum())
    fd = fd_jacobian(s, a, fn=inv_z)[0]
    return bool(np.allclose(fd, -a * p / np.exp(a * s).sum(), rtol=1e-7))


@register
def jacobian_symmetric(rec: dict) -> bool:
    """Symmetry of the finite-difference Jacobian (the library's closed form is
    symmetric by construction, so it cannot decide the question)."""
    s, _, a = example_row()
    J = fd_jacobian(s, a)
    return bool(np.allclose(J, J.T, atol=1e-8)) and not np.allclose(J, np.diag(np.diag(J)), atol=1e-3)


@register
def jacobian_rank(rec: dict) -> float:
    _, p, a = example_row()
    return float(np.linalg.matrix_rank(softmax_jacobian(p, a)))


@register
def outer_rank_one(rec: dict) -> bool:
    """p p^T has one non-zero singular value, equal to |p|^2."""
    _, p, _ = example_row()
    sv = np.linalg.svd(np.outer(p, p), compute_uv=False)
    return bool(abs(sv[0] - p @ p) < 1e-14 and sv[1] < 1e-14 * sv[0])


@register
def jacobian_eigenvalues_are_alpha_p(rec: dict) -> bool:
    """Whether the n - 1 non-zero eigenvalues are exactly alpha p_i for n - 1 of
    the p_i (sorted, the smallest alpha p_i left out; they interlace, so they cannot all coincide).
    The same eigenvalues must confirm the correction: each lies strictly between two
    neighbouring alpha p_i and solves the secular equation alpha sum_i p_i^2 / (alpha p_i - mu) = 1
    (residual at most 5e-13 here; the tolerance is 1e-9)."""
    _, p, a = example_row()
    eig = np.sort(np.linalg.eigvalsh(softmax_jacobian(p, a)))[1:]
    t = np.sort(a * p)
    secular = a * np.sum(p[:, None] ** 2 / (a * p[:, None] - eig[None, :]), axis=0)
    correction = np.all((t[:-1] < eig) & (eig < t[1:])) and np.all(np.abs(secular - 1) < 1e-9)
    return refuted(bool(np.all(np.abs(eig - t[1:]) <= 1e-9 * t[1:])), bool(correction), rec)


@register
def eigenvector_orthogonal_to_p(rec: dict) -> bool:
    """Whether some eigenvector of the finite-difference Jacobian with a non-zero eigenvalue is orthogonal to p.
    The same eigenvectors must confirm the correction: the one with eigenvalue mu is parallel to
    (alpha diag(p) - mu)^{-1} p (|cosine| within 1e-6 of 1; measured 7e-16 away)."""
    s, p, a = example_row()
    w, vecs = np.linalg.eigh(0.5 * (fd_jacobian(s, a) + fd_jacobian(s, a).T))
    nonzero = w > 1e-6
    u = p[:, None] / (a * p[:, None] - w[None, nonzero])
    cosines = np.sum(u * vecs[:, nonzero], axis=0) / np.linalg.norm(u, axis=0)
    return refuted(bool(np.any(np.abs(p @ vecs[:, nonzero]) < 1e-6)), bool(np.all(np.abs(np.abs(cosines) - 1) < 1e-6)), rec)


@register
def ones_in_kernel(rec: dict) -> bool:
    """J 1 = 0 for the finite-difference Jacobian, with the other eigenvalues positive."""
    s, _, a = example_row()
    J = fd_jacobian(s, a)
    return bool(np.allclose(J @ np.ones(s.size), 0, atol=1e-9) and np.sort(np.linalg.eigvalsh(0.5 * (J + J.T)))[1] > 1e-6)


@register
def jacobian_psd(rec: dict) -> bool:
    """Smallest eigenvalue of the symmetrised finite-difference Jacobian >= 0 (to the differencing error)."""
    s, _, a = example_row()
    J = fd_jacobian(s, a)
    return bool(np.linalg.eigvalsh(0.5 * (J + J.T)).min() >= -1e-9)


@register
def jacobian_signs(rec: dict) -> bool:
    """Positive diagonal and negative off-diagonal entries (finite differences)."""
    s, _, a = example_row()
    J = fd_jacobian(s, a)
    return bool(np.all(np.diag(J) > 0) and np.all(J[~np.eye(s.size, dtype=bool)] < 0))


def _parts(rec: dict) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Finite-difference Jacobians of 20 random rows (n = 9, alpha = 2) and the library's alpha (1 - sum p^2)."""
    s = np.random.default_rng(3).normal(size=(20, 9))
    J = np.array([fd_jacobian(row, 2.0) for row in s])
    return s, J, 2.0, gradient_l1(softmax(s, 2.0), 2.0)


@register
def l1_identity(rec: dict) -> bool:
    """(1/2)||J||_1 (or ||J||_1 with inputs full: true) of finite-difference Jacobians against alpha (1 - sum p^2) (times 2)."""
    _, J, _, target = _parts(rec)
    factor = 1.0 if inputs(rec).get("full") else 0.5
    return bool(np.allclose(factor * np.abs(J).sum(axis=(1, 2)), target * (2 * factor), rtol=1e-7))


@register
def jacobian_part_sum(rec: dict) -> bool:
    """Sum of the diagonal (part: diag) or of |off-diagonal| entries (part: offdiag) of
    finite-difference Jacobians, over alpha, against 1 - sum p^2."""
    s, J, a, _ = _parts(rec)
    mask = np.eye(s.shape[1], dtype=bool)
    part = J[:, mask].sum(axis=1) if inputs(rec)["part"] == "diag" else np.abs(J[:, ~mask]).sum(axis=1)
    return bool(np.allclose(part / a, 1 - collision(softmax(s, a)), rtol=1e-7))


@register
def diagonal_equals_offdiagonal(rec: dict) -> bool:
    _, J, _, _ = _parts(rec)
    diag = np.trace(J, axis1=1, axis2=2)
    return bool(np.allclose(diag, np.abs(J).sum(axis=(1, 2)) - diag, rtol=1e-7))


@register
def objective_rewritten(rec: dict) -> bool:
    """||J||_1 of finite differences against 2 alpha (1 - 1/N_eff) (via: neff) or 2 alpha (1 - e^{-H_2}) (via: renyi)."""
    s, J, a, _ = _parts(rec)
    p = softmax(s, a)
    rewritten = 2 * a * (1 - 1 / effective_number(p)) if inputs(rec)["via"] == "neff" else 2 * a * (1 - np.exp(-renyi2(p)))
    return bool(np.allclose(np.abs(J).sum(axis=(1, 2)), rewritten, rtol=1e-7))


@register
def frobenius_formula(rec: dict) -> bool:
    """The source's alpha^2 (sum p_i^2 (1-p_i)^2 + sum_{i!=j} p_i^2 p_j^2) against ||J||_F^2 of finite differences."""
    s, J, a, _ = _parts(rec)
    p = softmax(s, a)
    q = p * p
    claimed = a * a * ((q * (1 - p) ** 2).sum(-1) + q.sum(-1) ** 2 - (q * q).sum(-1))
    return bool(np.allclose((J * J).sum(axis=(1, 2)), claimed, rtol=1e-6) and np.allclose(jacobian_frobenius(p, a) ** 2, claimed, rtol=1e-10))


@register
def column_sums_zero(rec: dict) -> bool:
    _, J, _, _ = _parts(rec)
    return bool(np.allclose(J.sum(axis=1), 0, atol=1e-9))


@register
def spectral_norm_at_half(rec: dict) -> float:
    """The spectral norm at p = (1/2, 1/2), alpha = 1; the claim gives alpha max p(1 - p)."""
    return float(jacobian_spectral_norm([0.5, 0.5], 1.0))


@register
def max_entry_sup(rec: dict) -> float:
    """sup over two-key inputs of (scale times) the largest Jacobian entry, by a bounded search
    over the logit gap (inputs: scale, default 1); the source gives 0.25 (and 1 for 4 softmax)."""
    k = float(inputs(rec).get("scale", 1.0))
    found = minimize_scalar(lambda g: -k * float(jacobian_max_entry(softmax([g, 0.0]))), bounds=(-5, 5), method="bounded", options={"xatol": 1e-10})
    return float(-found.fun)


@register
def vjp_formula(rec: dict) -> bool:
    """dL/dx_j = g_j s_j - s_j sum_i g_i s_i (library VJP) against differences of L = g . softmax(x)."""
    rng = np.random.default_rng(5)
    x, g = rng.normal(size=7), rng.normal(size=7)
    fd = fd_jacobian(x, 1.0, fn=lambda y: np.atleast_1d(g @ softmax(y)))[0]
    return bool(np.allclose(softmax_vjp(softmax(x), g), fd, atol=1e-8))


@register
def cross_entropy_gradient(rec: dict) -> bool:
    """d(-log s_y)/dx_j = s_j - delta_jy (range: also inside (-1, 1)) against differences."""
    x, y = np.random.default_rng(6).normal(size=7) * 3, 2
    fd = fd_jacobian(x, 1.0, fn=lambda z: np.atleast_1d(-np.log(softmax(z)[y])))[0]
    ok = np.allclose(fd, softmax(x) - np.eye(7)[y], atol=1e-8)
    return bool(ok and (not inputs(rec).get("range") or np.all(np.abs(fd) < 1)))
