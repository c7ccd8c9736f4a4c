"""The table of recomputations and the helpers several of them share."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..softmax import softmax

#: recomputation name -> function of the record
RECOMPUTE: dict[str, Callable[[dict], Any]] = {}


def register(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
    RECOMPUTE[fn.__name__] = fn
    return fn


def inputs(rec: dict) -> dict:
    return rec.get("inputs") or {}


def example_row() -> tuple[np.ndarray, np.ndarray, float]:
    """Scores, probabilities and scale of the register's example row (n = 8)."""
    s = np.random.default_rng(2026).normal(size=8)
    return s, softmax(s, 1.5), 1.5


def fd_jacobian(s: np.ndarray, a: float, h: float = 1e-6, fn: Callable | None = None) -> np.ndarray:
    """Central differences of ``fn`` (default: the library softmax at scale ``a``):
    an independent route to a Jacobian (truncation ~h^2, rounding ~1e-16/h,
    both far below 1e-8)."""
    f = fn or (lambda x: softmax(x, a))
    return np.array([(f(s + h * e) - f(s - h * e)) / (2 * h) for e in np.eye(s.size)]).T


def fd_derivative(f: Callable[[float], Any], x: float, h: float = 1e-5) -> Any:
    """Central difference f'(x) (error ~h^2 f''')."""
    return (f(x + h) - f(x - h)) / (2 * h)


def fd_second(f: Callable[[float], Any], x: float, h: float = 1e-4) -> Any:
    return (f(x + h) - 2 * f(x) + f(x - h)) / (h * h)


def refuted(claim_holds: bool, correction_holds: bool, rec: dict) -> bool:
    """The answer of a check that finds a claim wrong only if it also confirms the
    correction the register gives: a broken check fails the claim and the correction
    alike, and that would otherwise pass for a refutation. Returns ``claim_holds``;
    raises ``RuntimeError`` naming the record when the correction does not hold."""
    if not correction_holds:
        raise RuntimeError(f"record {rec.get('id')!r}: the check rejects the register's correction too, so its answer on the claim is no evidence")
    return bool(claim_holds)
