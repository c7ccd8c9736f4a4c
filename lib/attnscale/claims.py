"""Recomputations behind the claims register (``chapters/claims.yml``).

Every checkable record names a function here. The function recomputes the
claimed quantity through the library (never from a value typed into the
register) and returns either a number or array, compared with the claimed
value by :func:`verdict`, or a boolean that says whether a statement holds.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import _validate as v
from .entropy import mean_field_entropy_cosine
from .montecarlo import collision_and_gradient
from .optimum import alpha_star_cosine, alpha_star_normal, n_for_alpha_normal
from .softmax import gradient_l1, jacobian_max_entry, jacobian_spectral_norm, softmax, softmax_jacobian

__all__ = ["RECOMPUTE", "recompute", "verdict", "VERDICTS", "load_register", "evaluate_register", "numbers_of"]

VERDICTS = ("holds", "approximate", "wrong", "not checkable")
#: the register in this repository
REGISTER = Path(__file__).resolve().parents[2] / "chapters" / "claims.yml"
RECOMPUTE: dict[str, Callable[[dict], Any]] = {}


def _register(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
    RECOMPUTE[fn.__name__] = fn
    return fn


def _sweep() -> np.ndarray:
    return np.arange(40, 20001, 40, dtype=float)


def _fit_log(values: np.ndarray, basis: np.ndarray) -> float:
    return float(np.sum(values * basis) / np.sum(basis * basis))


# ---- the softmax Jacobian ---------------------------------------------------------


def _example_row() -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(2026)
    return softmax(rng.normal(size=8), 1.5), 1.5


def _finite_difference_jacobian(s: np.ndarray, a: float, h: float = 1e-6) -> np.ndarray:
    """Central differences of the library softmax: an independent route to J
    (truncation ~h^2, rounding ~1e-16/h, both far below 1e-8)."""
    return np.array([(softmax(s + h * e, a) - softmax(s - h * e, a)) / (2 * h) for e in np.eye(s.size)]).T


@_register
def jacobian_formula(rec: dict) -> bool:
    rng = np.random.default_rng(1)
    s, a = rng.normal(size=6), 1.3
    return bool(np.allclose(softmax_jacobian(softmax(s, a), a), _finite_difference_jacobian(s, a), atol=1e-8))


@_register
def jacobian_symmetric(rec: dict) -> bool:
    """Symmetry of the finite-difference Jacobian (the library's closed form is
    symmetric by construction, so it cannot decide the question)."""
    rng = np.random.default_rng(2026)
    J = _finite_difference_jacobian(rng.normal(size=8), 1.5)
    return bool(np.allclose(J, J.T, atol=1e-8)) and not np.allclose(J, np.diag(np.diag(J)), atol=1e-3)


@_register
def jacobian_rank(rec: dict) -> float:
    p, a = _example_row()
    return float(np.linalg.matrix_rank(softmax_jacobian(p, a)))


@_register
def jacobian_eigenvalues_are_alpha_p(rec: dict) -> bool:
    """Whether the n - 1 non-zero eigenvalues are exactly alpha p_i for n - 1 of
    the p_i: every eigenvalue, sorted, against the sorted alpha p_i with the
    smallest one left out (they interlace, so they cannot all coincide)."""
    p, a = _example_row()
    eig = np.sort(np.linalg.eigvalsh(softmax_jacobian(p, a)))[1:]
    targets = np.sort(a * p)[1:]
    return bool(np.all(np.abs(eig - targets) <= 1e-9 * targets))


@_register
def jacobian_psd(rec: dict) -> bool:
    p, a = _example_row()
    return bool(np.linalg.eigvalsh(softmax_jacobian(p, a)).min() >= -1e-15)


@_register
def l1_identity(rec: dict) -> bool:
    """(1/2)||J||_1 of finite-difference Jacobians against alpha (1 - sum p^2)."""
    rng = np.random.default_rng(3)
    s = rng.normal(size=(20, 9))
    half = [0.5 * np.abs(_finite_difference_jacobian(row, 2.0)).sum() for row in s]
    return bool(np.allclose(half, gradient_l1(softmax(s, 2.0), 2.0), rtol=1e-7))


@_register
def spectral_norm_at_half(rec: dict) -> float:
    """The spectral norm at p = (1/2, 1/2), alpha = 1; the claim gives alpha max p(1 - p)."""
    return float(jacobian_spectral_norm([0.5, 0.5], 1.0))


@_register
def max_entry_at_half(rec: dict) -> float:
    return float(jacobian_max_entry([0.5, 0.5], 1.0))


# ---- dot products and saturation ------------------------------------------------


@_register
def dot_variance_over_d(rec: dict) -> float:
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((2, 20000, 256))
    return float(np.einsum("ij,ij->i", q, k).var() / 256)


@_register
def scaled_variance_sigma2(rec: dict) -> float:
    """Variance of q.k / sqrt(d) with components of variance sigma^2 = 4 (d = 64)."""
    rng = np.random.default_rng(8)
    q, k = 2.0 * rng.standard_normal((2, 20000, 64))
    return float((np.einsum("ij,ij->i", q, k) / 8.0).var())


@_register
def std_unscaled(rec: dict) -> list[float]:
    return [float(np.sqrt(d)) for d in rec["inputs"]["d"]]


@_register
def three_sigma_unscaled(rec: dict) -> list[float]:
    return [float(3 * np.sqrt(d)) for d in rec["inputs"]["d"]]


@_register
def softmax_values(rec: dict) -> list[float]:
    return softmax(rec["inputs"]["scores"]).tolist()


@_register
def softmax_top_gradient(rec: dict) -> float:
    p = softmax(rec["inputs"]["scores"])
    return float(softmax_jacobian(p)[0, 0])


@_register
def p3_of_a(rec: dict) -> list[float]:
    return [float(softmax([a, a, 2.0 * a])[2]) for a in rec["inputs"]["a"]]


@_register
def median_top_gradient(rec: dict) -> list[float]:
    rng = np.random.default_rng(11)
    out = []
    for sd in rec["inputs"]["std"]:
        p = softmax(sd * rng.standard_normal((200_000, 3)))
        out.append(float(np.median(jacobian_max_entry(p))))
    return out


# ---- Gaussian scores ---------------------------------------------------------------


@_register
def normal_fit_c(rec: dict) -> float:
    n = _sweep()
    return _fit_log(np.asarray(alpha_star_normal(n)), np.sqrt(np.log(n)))


@_register
def normal_range_2_3(rec: dict) -> float:
    """Share of the sweep n = 40 ... 20000 on which alpha* is in [2, 3] (the claim: all of a wide range)."""
    a = alpha_star_normal(_sweep())
    return float(np.mean((a >= 2) & (a <= 3)))


@_register
def advice_optimal_n(rec: dict) -> float:
    """The length at which 2.5 is the mean-field optimum (the claim: 'n = 512')."""
    return float(n_for_alpha_normal(2.5))


@_register
def fit_at_512(rec: dict) -> float:
    return float(0.84 * np.sqrt(np.log(512)))


@_register
def log_n_values(rec: dict) -> list[float]:
    return [float(np.log(n)) for n in rec["inputs"]["n"]]


@_register
def fit_normal_values(rec: dict) -> list[float]:
    return [float(0.84 * np.sqrt(np.log(n))) for n in rec["inputs"]["n"]]


@_register
def exact_normal_values(rec: dict) -> list[float]:
    return np.asarray(alpha_star_normal(np.array(rec["inputs"]["n"], dtype=float))).tolist()


@_register
def relative_error_columns(rec: dict) -> list[float]:
    """The 'error' column recomputed from the source's own two columns, in percent."""
    theo, exp = np.array(rec["inputs"]["theoretical"]), np.array(rec["inputs"]["experimental"])
    return (100 * (exp - theo) / theo).tolist()


@_register
def second_derivative_formula(rec: dict) -> bool:
    """Claimed G'' = -(2 e^{a^2}/n)(4a^2 + 4a^4 + 2) for G = 2a(1 - e^{a^2}/n); compared by finite differences."""
    n, a, h = 512.0, 1.7, 1e-4
    G = lambda x: 2 * x * (1 - np.exp(x * x) / n)
    fd = (G(a + h) - 2 * G(a) + G(a - h)) / h**2
    claimed = -(2 * np.exp(a * a) / n) * (4 * a * a + 4 * a**4 + 2)
    return bool(abs(fd - claimed) < 1e-4 * abs(fd))


@_register
def closed_form_exists(rec: dict) -> bool:
    """'No analytic solution': the closed form sqrt(W0(n sqrt(e)/2) - 1/2), with
    SciPy's Lambert W, solves the first-order condition (so the claim is false)."""
    from scipy.special import lambertw

    n = np.array([10.0, 512.0, 1e6])
    a = np.sqrt(lambertw(n * np.sqrt(np.e) / 2).real - 0.5)
    return not bool(np.allclose(np.exp(a * a) * (1 + 2 * a * a), n, rtol=1e-12))


@_register
def sqrt_log_leading(rec: dict) -> float:
    """alpha*(n) / sqrt(log n) at n = 1e300: tends to 1."""
    return float(alpha_star_normal(1e300) / np.sqrt(np.log(1e300)))


@_register
def expected_gradient_vanishes(rec: dict) -> float:
    """E[alpha(1 - sum p^2)] at alpha = 100, n = 512 (the claim: it tends to 0)."""
    rng = np.random.default_rng(4)
    _, grad = collision_and_gradient(rng.standard_normal((2000, 512)), np.array([100.0]))
    return float(grad.mean())


# ---- cosine scores -------------------------------------------------------------------


@lru_cache(maxsize=None)
def _cosine_c(d: float) -> float:
    """Least-squares c in alpha*_cos(n, d) = c log n over the sweep (shared by three records)."""
    n = _sweep()
    return _fit_log(np.asarray(alpha_star_cosine(n, d)), np.log(n))


@_register
def cosine_fit_c(rec: dict) -> list[float]:
    return [_cosine_c(float(d)) for d in rec["inputs"]["d"]]


@_register
def cosine_rule_d36(rec: dict) -> list[float]:
    """The rule c = d/36 against the recomputed c."""
    return cosine_fit_c(rec)


@_register
def cosine_range_25_35(rec: dict) -> float:
    """Share of the sweep on which alpha*_cos(n, 128) is in [25, 35]."""
    a = alpha_star_cosine(_sweep(), 128.0)
    return float(np.mean((a >= 25) & (a <= 35)))


@_register
def cosine_sqrt_d3_ratio(rec: dict) -> float:
    """alpha*_cos(512, 4096) / (sqrt(4096 - 3) alpha*_N(512)): the sqrt(d - 3) law at large d."""
    return float(alpha_star_cosine(512.0, 4096.0) / (np.sqrt(4093.0) * alpha_star_normal(512.0)))


@_register
def fit_cosine_values(rec: dict) -> list[float]:
    return [float(3.5 * np.log(n)) for n in rec["inputs"]["n"]]


@_register
def exact_cosine_values(rec: dict) -> list[float]:
    return np.asarray(alpha_star_cosine(np.array(rec["inputs"]["n"], dtype=float), 128.0)).tolist()


@_register
def cosine_density_exponent(rec: dict) -> bool:
    """Is (1 - s^2)^((d-3)/2) the law of sampled cosines? (d = 5, KS test at 1e-3)."""
    from scipy.special import betainc
    from scipy.stats import kstest

    rng = np.random.default_rng(31)
    q, k = rng.standard_normal((2, 20000, 5))
    s = np.einsum("ij,ij->i", q, k) / (np.linalg.norm(q, axis=1) * np.linalg.norm(k, axis=1))
    exponent = rec["inputs"]["exponent_offset"]  # 3 for (d-3)/2, 2 for (d-2)/2
    dim = 5 + (3 - exponent)  # (d-2)/2 is the density of dimension d + 1
    return bool(kstest(s, lambda v: betainc((dim - 1) / 2, (dim - 1) / 2, (1 + v) / 2)).pvalue > 1e-3)


# ---- entropy and length -------------------------------------------------------------


@_register
def golden_constant(rec: dict) -> float:
    return float(0.5 * np.log((1 + np.sqrt(5)) / 2))


@_register
def tau_example(rec: dict) -> float:
    return float(np.log(512) / np.log(2048))


@_register
def su_linear_entropy_at_usual_scale(rec: dict) -> float:
    """0.24 lambda d at lambda = 1/sqrt(d), d = 64, against the mean-field drop: returns the drop."""
    d = 64.0
    return float(np.log(512) - mean_field_entropy_cosine(np.sqrt(d), 512.0, d))


@_register
def relu_untemperable(rec: dict) -> bool:
    rng = np.random.default_rng(61)
    s = rng.standard_normal((50, 64))
    w = lambda lam: (np.maximum(lam * s, 0) ** 2) / (np.maximum(lam * s, 0) ** 2).sum(-1, keepdims=True)
    return bool(np.allclose(w(0.1), w(10.0), rtol=1e-12))


@_register
def softmax_temperable(rec: dict) -> bool:
    from .entropy import softmax_entropy

    s = np.random.default_rng(62).standard_normal((50, 64))
    return bool(np.all(softmax_entropy(s, 0.5) > softmax_entropy(s, 2.0)))


@_register
def entropy_identity(rec: dict) -> bool:
    from .entropy import shannon, softmax_entropy

    s = np.random.default_rng(63).standard_normal((20, 30))
    return bool(np.allclose(softmax_entropy(s, 2.0), shannon(softmax(s, 2.0)), rtol=1e-12))


# ---- training (Part IV): the notes' learning-rate rule --------------------------------


@_register
def lr_rule_exponent(rec: dict) -> float:
    """The pooled exponent s of eta_best ~ alpha^s over the dot cells of the
    stored sweep for one optimiser (chapters/data/training_<optimizer>.json)."""
    from .training import DATA, load_sweep, lr_exponent

    opt = rec["inputs"]["optimizer"]
    cells = [c for c in load_sweep(DATA / f"training_{opt}.json")["cells"] if c["kind"] == "dot"]
    return lr_exponent(cells)[0]


# ---------------------------------------------------------------------------------------


def recompute(record: dict) -> Any:
    """Run the recomputation a record names (its ``recompute`` field)."""
    record = v.mapping(record, "record", ("id",))
    name = record.get("recompute")
    if name not in RECOMPUTE:
        raise ValueError(f"record {record['id']!r} names no known recomputation: {name!r}")
    return RECOMPUTE[name](record)


def verdict(record: dict, value: Any) -> str:
    """The verdict that follows from a recomputed ``value``: booleans decide
    directly (a record with ``negate: true`` states the opposite of what the
    recomputation tests); numbers are compared with ``claimed`` (or
    ``claimed_value`` where the claim is stated in words) using the record's
    ``atol`` (absolute slack, for values rounded by the source) plus ``rtol``
    (holds) or ``approx_rtol`` (approximate)."""
    record = v.mapping(record, "record", ("id",))
    if "claimed" not in record and "claimed_value" not in record:
        raise ValueError(f"record {record['id']!r} lacks the entries ['claimed'] to compare with")
    if isinstance(value, (bool, np.bool_)):
        holds = bool(value) != bool(record.get("negate", False))
        return "holds" if holds else "wrong"
    stated: Any = record.get("claimed_value", record.get("claimed"))
    claimed = v.finite(stated, "record claimed value")
    got = v.finite(value, "value")
    slack = np.abs(got - claimed) - float(record.get("atol", 0.0))
    rel = np.maximum(slack, 0.0) / np.maximum(np.abs(got), 1e-300)
    if np.all(rel <= float(record.get("rtol", 1e-9))):
        return "holds"
    if "approx_rtol" in record and np.all(rel <= float(record["approx_rtol"])):
        return "approximate"
    return "wrong"


REQUIRED = ("id", "source", "statement", "claimed", "verdict", "where")


def load_register(path) -> list[dict]:
    """Read the register and check its shape (fields, unique ids, verdict words)."""
    import yaml

    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"path: no claims register at {path}")
    records = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(records, list):
        raise ValueError(f"{path} must hold a list of records")
    seen = set()
    for rec in records:
        missing = [f for f in REQUIRED if f not in rec]
        if missing:
            raise ValueError(f"record {rec.get('id')!r} lacks {missing}")
        if rec["id"] in seen:
            raise ValueError(f"duplicate record id {rec['id']!r}")
        seen.add(rec["id"])
        if rec["verdict"] not in VERDICTS:
            raise ValueError(f"record {rec['id']!r}: verdict must be one of {VERDICTS}, got {rec['verdict']!r}")
        if rec["verdict"] == "not checkable" and not rec.get("why"):
            raise ValueError(f"record {rec['id']!r} is not checkable but says not why")
        if rec["verdict"] != "not checkable" and "recompute" not in rec:
            raise ValueError(f"record {rec['id']!r} has a verdict but no recomputation")
    return records


def evaluate_register(records: list[dict]) -> list[dict]:
    """Recompute every checkable record; each result carries the recomputed
    value, the verdict that follows, and whether it agrees with the register."""
    if not isinstance(records, list):
        raise TypeError(f"records must be a list of records (dicts), got {type(records).__name__}")
    out = []
    for rec in records:
        rec = v.mapping(rec, "records entry", ("id", "verdict"))
        row = dict(rec)
        if rec["verdict"] == "not checkable":
            row.update(value=None, computed="not checkable", agrees=True)
        else:
            value = recompute(rec)
            computed = verdict(rec, value)
            row.update(value=value, computed=computed, agrees=computed == rec["verdict"])
        out.append(row)
    return out


def numbers_of(rec: dict) -> set[float]:
    """Every number a record mentions (claimed, claimed_value, inputs, cells),
    rounded to 6 significant digits, for the table-coverage test."""
    rec = v.mapping(rec, "rec")
    found: set[float] = set()

    def walk(x):
        if isinstance(x, bool):
            return
        if isinstance(x, (int, float)):
            found.add(float(f"{x:.6g}"))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    for key in ("claimed", "claimed_value", "inputs", "cells"):
        walk(rec.get(key))
    return found
