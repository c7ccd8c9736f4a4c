"""attnscale: the helper library of *The Scale of Attention*.

Modules are named after the mathematics they hold:

- :mod:`attnscale.softmax`: scaled softmax, log-sum-exp, the softmax Jacobian
  and its sizes (L1, Frobenius, spectral, largest entry);
- :mod:`attnscale.entropy`: Shannon and Renyi-2 entropies, effective number;
- :mod:`attnscale.optimum`: the mean-field gradient-maximising scale;
- :mod:`attnscale.symbolic`: the general-n softmax in SymPy, display helpers;
- :mod:`attnscale.checks`: the assertion helpers every chapter uses;
- :mod:`attnscale.plotting`: the house figure style.
"""

from . import checks, entropy, optimum, softmax, symbolic

__version__ = "0.1.0"
__all__ = ["checks", "entropy", "optimum", "softmax", "symbolic"]
