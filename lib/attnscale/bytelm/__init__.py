"""A small byte-level transformer language model in JAX, trained on real text (the
``fortunes`` corpus), to test the book's single-row theory on a trained model's rows
(chapter 14, "Real attention").

* :mod:`~attnscale.bytelm.corpus`: the corpus, checked against its SHA-256, and its split;
* :mod:`~attnscale.bytelm.model`: the model (dot or cosine attention scores, rotary
  positions, pre-LayerNorm, GELU MLP);
* :mod:`~attnscale.bytelm.train`: many runs as one ``jax.vmap``-ed, ``jax.jit``-compiled
  AdamW step;
* :mod:`~attnscale.bytelm.sweep`: the sweep of ``make sweep-lm`` and its stored results;
* :mod:`~attnscale.bytelm.analysis`: the chapter's summaries of them.

JAX runs on the CPU (``JAX_PLATFORMS=cpu`` is set before JAX is imported, unless the
environment sets it).
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

#: The relative spread of a re-run: the training losses of the first 25 steps of the smallest
#: stored group's first run (scale 1, seed 0), re-run alone instead of batched with the group's
#: eight other runs, with XLA single-threaded and in its thread pool, and with XLA's code
#: generation limited to AVX and to SSE4.2 (``--xla_cpu_max_isa``, as on older CPUs), were
#: identical to one another and differed from the stored values by at most 8.2e-7 relative,
#: which is the rounding to five decimals of the stored losses (AMD EPYC, Zen 3; jax 0.10.2).
#: A fresh run is compared with the stored one to a hundred times this.
RERUN_SPREAD = 1e-6
