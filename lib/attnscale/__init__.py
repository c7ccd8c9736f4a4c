"""attnscale: the helper library of *The Scale of Attention*.

Modules are named after the mathematics they hold:

- :mod:`attnscale.softmax`: scaled softmax, log-sum-exp, the softmax Jacobian
  and its sizes (L1, Frobenius, spectral, largest entry);
- :mod:`attnscale.entropy`: Shannon and Renyi-2 entropies, effective number;
- :mod:`attnscale.montecarlo`: simulation kernels for the exact expected gradient;
- :mod:`attnscale.optimum`: the mean-field gradient-maximising scale (normal and cosine scores);
- :mod:`attnscale.scores`: score distributions (cosine density, sampler, moment generating functions);
- :mod:`attnscale.special`: modified Bessel functions in the log domain;
- :mod:`attnscale.training`: a one-layer NumPy attention model with exact gradients, and the
  Part IV training sweep (``python -m attnscale.training``; imported on demand);
- :mod:`attnscale.symbolic`: the general-n softmax in SymPy, display helpers;
- :mod:`attnscale.checks`: the assertion helpers every chapter uses;
- :mod:`attnscale.claims`: the recomputations behind the claims register;
- :mod:`attnscale.plotting`: the house figure style.
"""

import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["checks", "claims", "entropy", "montecarlo", "optimum", "scores", "softmax", "special", "symbolic"]

#: every submodule, imported on first use (PEP 562): ``import attnscale`` loads none of
#: them, so ``python -m attnscale recommend`` pulls in neither SymPy nor the claims register
_SUBMODULES = frozenset(__all__) | {"exact", "lengthrules", "page", "plotting", "recommend", "reproducibility", "training"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES)
