"""Exact expectations of softmax statistics for independent scores, by quadrature.

Scores ``s_1, ..., s_n`` are independent with density ``f``: standard normal
(``d=None``) or *cosine scores* (``d`` an integer >= 2: the cosine of two independent
uniformly random directions in ``R^d``, density ``(1 - s^2)^((d-3)/2) / B(1/2, (d-1)/2)``
on ``[-1, 1]``). With ``p = softmax(alpha s)``, ``w_i = e^(alpha s_i)``,
``Z = sum_i w_i`` and the Laplace transforms

    phi(t) = E exp(-t w),   psi_k(t) = E[w^k exp(-t w)],   chi(t) = E[s w exp(-t w)],

the identities ``1/Z = int_0^inf e^(-tZ) dt``, ``1/Z^2 = int_0^inf t e^(-tZ) dt`` and
``E e^(-tZ) = phi(t)^n`` (independence) give one-dimensional integrals:

    E sum p_i^2     = n int_0^inf t psi_2(t) phi(t)^(n-1) dt,
    1 - E sum p_i^2 = n (n-1) E[p_1 p_2] = n (n-1) int_0^inf t psi_1(t)^2 phi(t)^(n-2) dt,
    E log Z         = int_0^inf (e^(-t) - phi(t)^n) / t dt          (Frullani),
    E sum p_i s_i   = n int_0^inf chi(t) phi(t)^(n-1) dt,

and ``E H = E log Z - alpha E sum p_i s_i``. That difference cancels badly (both
terms grow like ``alpha``, ``H`` falls like ``1/alpha``), so the entropy is computed
from ``H = -d/dq sum_i p_i^q`` at ``q = 1`` with ``p_i^q = w_i^q / Gamma(q) int t^(q-1)
e^(-tZ) dt``, which gives

    E H = -n int_0^inf E[w (log(t w) + gamma) e^(-t w)] phi(t)^(n-1) dt    (gamma: Euler's constant),

an integrand whose inner kernel ``(log u + gamma) e^(-u)`` integrates to zero, so the
``alpha``-sized parts cancel inside each inner expectation (relative loss ~ the score
spread in units of 1/alpha, at most ~1e3 here, instead of ~alpha^2).

Numerics (see the private modules ``attnscale.exact._grid`` and ``attnscale.exact._sums``). Substituting ``t = e^(-y)`` turns every
integral into ``int dy`` over a "threshold" ``y`` (in units of ``alpha s``) of products of
``phi(y)``, ``A_k(y) = E[e^(k x) exp(-e^x)]`` and ``B(y) = E[e^x (x + gamma) exp(-e^x)]``,
``x = alpha s - y``. The inner expectations use a trapezoid rule in ``u = alpha s``
(step 1/4 where the kernel sets the resolution; for cosine scores after a smooth
change of variables that removes the endpoint singularities at ``s = +-1``), the outer
integral a trapezoid rule in ``y`` with step 1/4; both are spectrally accurate
(aliasing error ~ ``exp(-pi^2 / 0.25)``). ``phi^(n-1)`` is ``exp((n-1) log phi)`` with
``log phi = log1p(-(1 - phi))`` and ``1 - phi = E[-expm1(-e^x)]`` summed directly.
The inner sums depend on ``alpha`` but not on ``n``: they are computed once per distinct
``alpha`` and reused for every ``n`` (and needle gap) at that ``alpha``.

Accuracy (measured against 30-digit ``mpmath`` quadrature; ``tests/exact/``):
relative error below 1e-11 for every function over normal scores with
``2 <= n <= 1e9``, ``0 <= alpha <= 50`` and cosine scores with ``2 <= d <= 4096``,
``alpha <= 1000``; the documented target is 1e-8.

Supported ranges: ``2 <= n <= 1e15`` (real ``n`` allowed), ``0 <= alpha <= 1e4``, and
``2 <= d <= 65536`` for cosine scores.

Modules: ``attnscale.exact.bulk`` (the row of i.i.d. scores: ``E sum p^2``, the
expected gradient, ``E H``, the near-tie limit, the shared query) and
``attnscale.exact.needle`` (one planted key among them); everything is
importable from ``attnscale.exact``.
"""

from __future__ import annotations

from ._common import ALPHA_MAX, D_MAX, N_MAX  # noqa: F401  (the supported ranges)
from .bulk import expected_entropy, expected_half_l1, expected_sum_p2, expected_sum_p2_shared_query, near_tie_correction, near_tie_limit
from .meanfield import mean_field_limit, mean_field_ratio
from .needle import needle_entropy, needle_sum_p2, needle_weight, needle_weight_mean_field

__all__ = [
    "expected_sum_p2",
    "expected_half_l1",
    "near_tie_limit",
    "near_tie_correction",
    "expected_entropy",
    "needle_weight",
    "needle_sum_p2",
    "needle_entropy",
    "needle_weight_mean_field",
    "expected_sum_p2_shared_query",
    "mean_field_ratio",
    "mean_field_limit",
]
