"""A one-layer attention model in NumPy with exact hand-derived gradients, and
the training experiment of Part IV (associative recall).

Submodules, one job each:

- ``attnscale.training.model``: the task, the model, its forward pass and
  exact gradients (dot and cosine scores);
- ``attnscale.training.loop``: training many models at once (Adam, SGD, AdamW),
  the evaluation schedule, test and validation sets, divergence marking
  (``train(seed, TrainSettings(...))`` returns a ``TrainResult``);
- ``attnscale.training.stats``: steps to target, best rate, rate exponent, and the
  paired tests, bootstrap intervals and stratified correlations of the analysis;
- ``attnscale.training.sweep``: the sweep's settings, the windows of learning
  rates and their tuning on the validation set, one cell's run and summary, and
  the stored results;
- ``attnscale.training.runner``: the command ``python -m attnscale.training`` that
  runs every cell of the sweep and its arms on a pool of processes (``make sweep``);
- ``attnscale.training.lengths``: length generalisation, training at ``n`` and
  evaluating at ``4n`` under Part III's length rules (``make sweep-lengths``);
- ``attnscale.training.analysis``: chapter 10's analyses (gradient check,
  identity-map ceiling, fastest scales, pooled paired comparisons, alignment at
  initialisation);
- ``attnscale.training.verdicts``: every conclusion chapter 10 states, reduced to a
  verdict per comparison, to compare two runs of the sweep (two BLAS kernels);
- ``attnscale.training.report``: how chapter 10 prints them (tables, the loss
  curves; matplotlib only when a figure is drawn).
"""

from .analysis import among_fastest, compare_arms, finite_difference_error, identity_map, initial_alignment
from .lengths import MEASURES, RELATIVE, TRAINED, held_out_sets, length_transfer, load_lengths
from .loop import LIMIT, OPTIMIZERS, TrainResult, TrainSettings, evaluation_steps, train
from .model import KINDS, bilinear_gradient, forward, identity_alignment, init_params, loss_and_grads, sample_batch
from .stats import (
    PairedComparison,
    StratifiedCorrelation,
    at_grid_edge,
    best_lr_index,
    best_rates,
    final_loss_summary,
    holm,
    lr_exponent,
    mean_interval,
    paired_comparison,
    steps_to_target,
    within_strata_correlation,
)
from .report import COLORS, loss_curves, loss_table, loss_text, p_text, results_table, scale_name, speed_table, steps_text, summary_rows
from .verdicts import conclusions
from .sweep import DATA, DOT_ALPHAS, SWEEP, lattice_rate, load_sweep, rate_window, run_config, select_scales, sweep_scales, tune

__all__ = [
    "KINDS",
    "OPTIMIZERS",
    "LIMIT",
    "DATA",
    "DOT_ALPHAS",
    "SWEEP",
    "init_params",
    "sample_batch",
    "forward",
    "loss_and_grads",
    "bilinear_gradient",
    "identity_alignment",
    "TrainSettings",
    "TrainResult",
    "train",
    "evaluation_steps",
    "lattice_rate",
    "rate_window",
    "tune",
    "steps_to_target",
    "sweep_scales",
    "run_config",
    "select_scales",
    "best_lr_index",
    "best_rates",
    "lr_exponent",
    "mean_interval",
    "load_sweep",
    "TRAINED",
    "RELATIVE",
    "MEASURES",
    "held_out_sets",
    "length_transfer",
    "load_lengths",
    "at_grid_edge",
    "final_loss_summary",
    "PairedComparison",
    "paired_comparison",
    "StratifiedCorrelation",
    "within_strata_correlation",
    "holm",
    "finite_difference_error",
    "identity_map",
    "among_fastest",
    "compare_arms",
    "initial_alignment",
    "conclusions",
    "COLORS",
    "p_text",
    "steps_text",
    "loss_text",
    "scale_name",
    "summary_rows",
    "results_table",
    "loss_curves",
    "speed_table",
    "loss_table",
]
