"""A small byte-level transformer language model in JAX, trained on real text (the
``fortunes`` corpus), to test the book's single-row theory on a trained model's rows
(the chapter "Real attention", chapter 11 of the book).

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

#: The tolerance of a re-run of the first steps (bits): the stored training losses are
#: rounded to five decimals, and the first 25 steps of the smallest stored group's first run
#: (scale 1, seed 0), re-run alone instead of batched, with XLA single-threaded and in its
#: thread pool, and with XLA's code generation limited to AVX and to SSE4.2
#: (``--xla_cpu_max_isa``), were identical to one another and equal to the stored values to
#: that rounding (AMD EPYC, Zen 3; jax 0.10.2). A scale 3% off moves those losses by about
#: 1e-4. Later steps drift apart with the batch and the threading (floating-point sums
#: rounded differently), so only the first steps are compared.
RERUN_ATOL = 1e-5
