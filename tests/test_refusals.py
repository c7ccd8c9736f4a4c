"""One rule for refusals: every public function of attnscale answers NaN, inf,
out-of-range sizes, wrong types and unknown names with a ValueError or TypeError
(FileNotFoundError for a missing file) whose message begins with the argument's name,
never with a silent NaN or an unrelated exception. The rest of the wording is free;
tests/test_validate.py checks each message template of attnscale._validate once.

The table SPECS holds one valid call per public function and, per argument,
values that must be rejected. test_every_public_function_is_covered fails
when a module exports a function the table does not know, so a new function
cannot skip this test.
"""

from __future__ import annotations

import importlib
import math
import re

import numpy as np
import pytest

from expect import named

MODULES = ["checks", "claims", "entropy", "exact", "lengthrules", "montecarlo", "recommend", "optimum", "page", "plotting", "reproducibility", "scores",
           "softmax", "special", "symbolic", "training"]

NAN, INF = float("nan"), float("inf")
P = [0.2, 0.3, 0.5]
#: bad values shared by many arguments
REAL = [NAN, INF, "x", None, 1 + 2j]
POSITIVE = REAL + [0.0, -1.0]
LENGTH = REAL + [1.0, 0.5, -3.0]
COUNT = [0, -2, 2.5, "3", None, True]
#: a cosine dimension where None (normal scores) is valid
D_BAD = [NAN, INF, "x", 1 + 2j, 1]
#: bad seeds (0 is a valid seed)
SEEDS = [-2, 2.5, "3", None, True]
PROB = [[0.5, 0.6], [-0.1, 1.1], [NAN, 1.0], "p", None, 0.5]


def _rng():
    return np.random.default_rng(0)


#: the smallest valid training run (the settings of training.train)
_TINY_RUN = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "lrs": [1e-2], "seeds": 1, "steps": 1, "eval_size": 4}


def _params(seeds=1, models=1, d=4):
    from attnscale.training import init_params

    return init_params(_rng(), seeds, models, d)


def _data(n=3, d=4):
    from attnscale.training import sample_batch

    return sample_batch(_rng(), 1, 2, n, d)


def _cell():
    from attnscale.training import DATA, load_sweep

    return next(c for c in load_sweep(DATA / "training_adam.json")["cells"] if (c["n"], c["d"], c["kind"]) == (16, 32, "dot"))


def _cells():
    from attnscale.training import DATA, SWEEP, load_sweep

    return {(c["optimizer"], c["kind"], c["n"], c["d"]): c for opt in SWEEP["lrs"] for c in load_sweep(DATA / f"training_{opt}.json")["cells"]}


def _tests():
    from attnscale.training import compare_arms

    return {("adam", "2.5", "1"): compare_arms(_cells(), "adam", "dot", "2.5", "1")[0]}


def _holm():
    return {("adam", "2.5", "1"): 0.5}


# name: (valid kwargs (values or zero-argument factories), {argument: [bad values]})
SPECS: dict[str, tuple[dict, dict]] = {
    "softmax.logsumexp": ({"s": [1.0, 2.0], "alpha": 1.0, "axis": -1}, {"s": [[NAN, 1.0], [INF, 1.0], "s", None, []], "alpha": POSITIVE, "axis": [5, 1.5, "a"]}),
    "softmax.log_softmax": ({"s": [1.0, 2.0], "alpha": 1.0}, {"s": [[NAN, 1.0], [INF, 1.0], "s", None], "alpha": POSITIVE, "axis": [5, None]}),
    "softmax.softmax": ({"s": [1.0, 2.0], "alpha": 1.0}, {"s": [[NAN, 1.0], [INF, 1.0], [-INF, -INF], "s", None, 3.0], "alpha": POSITIVE + [[1.0, 2.0, 3.0]], "axis": [5, None]}),
    "softmax.power_weights": ({"s": [1.0, -2.0, 3.0]}, {"s": [[NAN, 1.0], [INF, 1.0], [-1.0, -2.0], "s", None, 3.0], "m": REAL + [0.0, -1.0], "scale": POSITIVE, "axis": [5, None]}),
    "softmax.softmax_jacobian": ({"p": P, "alpha": 1.0}, {"p": PROB, "alpha": POSITIVE}),
    "softmax.jacobian_half_l1": ({"J": np.eye(2)}, {"J": [np.ones((2, 3)), [[NAN, 0], [0, 1]], "J", None, 1.0]}),
    "softmax.gradient_l1": ({"p": P, "alpha": 1.0}, {"p": PROB, "alpha": POSITIVE}),
    "softmax.jacobian_frobenius": ({"p": P, "alpha": 1.0}, {"p": PROB, "alpha": POSITIVE}),
    "softmax.jacobian_max_entry": ({"p": P, "alpha": 1.0}, {"p": PROB, "alpha": POSITIVE}),
    "softmax.jacobian_spectral_norm": ({"p": P, "alpha": 1.0, "iterations": 64}, {"p": PROB, "alpha": POSITIVE, "iterations": COUNT}),
    "softmax.softmax_vjp": ({"p": P, "g": [1.0, 0.0, -1.0], "alpha": 1.0}, {"p": PROB, "g": [[NAN, 0, 0], [1.0, 2.0], "g", None], "alpha": POSITIVE}),
    "entropy.collision": ({"p": P}, {"p": PROB}),
    "entropy.renyi2": ({"p": P}, {"p": PROB}),
    "entropy.effective_number": ({"p": P}, {"p": PROB}),
    "entropy.shannon": ({"p": P}, {"p": PROB}),
    "entropy.softmax_entropy": ({"s": [1.0, 2.0], "alpha": 1.0}, {"s": [[NAN, 1.0], "s", None], "alpha": POSITIVE, "axis": [7]}),
    "entropy.mean_field_entropy_normal": ({"alpha": 1.0, "n": 64}, {"alpha": POSITIVE, "n": LENGTH}),
    "entropy.mean_field_entropy_cosine": ({"alpha": 3.0, "n": 64, "d": 32}, {"alpha": POSITIVE, "n": LENGTH, "d": REAL + [1, 0, -4, 65537, 1e150]}),
    "exact.expected_sum_p2": ({"n": 64, "alpha": 1.0}, {"n": LENGTH + [1e16], "alpha": REAL + [-1.0, 2e4], "d": D_BAD + [0, 2.5, 70000]}),
    "exact.expected_half_l1": ({"n": 64, "alpha": 1.0}, {"n": LENGTH, "alpha": REAL + [-1.0], "d": D_BAD}),
    "exact.expected_entropy": ({"n": 64, "alpha": 1.0}, {"n": LENGTH, "alpha": REAL + [-1.0], "d": D_BAD}),
    "exact.near_tie_limit": ({"n": 64}, {"n": LENGTH, "d": D_BAD}),
    "exact.near_tie_correction": ({"n": 64}, {"n": LENGTH, "d": D_BAD + [4]}),
    "exact.needle_weight": ({"n": 64, "alpha": 1.0, "gap": 3.0}, {"n": LENGTH, "alpha": REAL + [-1.0], "gap": REAL + [-40.0], "d": D_BAD}),
    "exact.needle_sum_p2": ({"n": 64, "alpha": 1.0, "gap": 0.5, "d": 16}, {"n": LENGTH, "alpha": REAL + [-1.0], "gap": REAL + [1.5], "d": D_BAD}),
    "exact.needle_entropy": ({"n": 64, "alpha": 1.0, "gap": 3.0}, {"n": LENGTH, "alpha": REAL + [-1.0], "gap": REAL, "d": D_BAD}),
    "exact.needle_weight_mean_field": ({"n": 64, "alpha": 1.0, "gap": 3.0}, {"n": LENGTH, "alpha": REAL + [-1.0], "gap": REAL, "d": D_BAD}),
    "exact.mean_field_ratio": ({"n": 64, "alpha": 1.0}, {"n": LENGTH, "alpha": REAL + [-1.0]}),
    "exact.mean_field_limit": ({"n": 64}, {"n": LENGTH + [1e16], "factor": REAL + [1.0, 0.5, 1 + 1e-12], "step": REAL + [0.0, 0.5]}),
    "exact.expected_sum_p2_shared_query": ({"n": 64, "alpha": 1.0, "d": 16}, {"n": LENGTH, "alpha": REAL + [-1.0], "d": REAL + [0, None]}),
    "entropy.alpha_for_mean_field_entropy": ({"n": 2048}, {"n": LENGTH + [100.0], "n_train": REAL + [1.0, 0.5], "alpha_train": POSITIVE,
                                                          "d": D_BAD + [2], "floor": [0.0, -1.0, NAN, INF, "x"]}),
    "lengthrules.fixed": ({"n": 2048}, {"n": LENGTH}),
    "lengthrules.log512": ({"n": 2048}, {"n": LENGTH, "base": REAL + [1.0, 0.5]}),
    "lengthrules.qwen_logn": ({"n": 2048}, {"n": LENGTH, "n_train": REAL + [1.0, 0.5]}),
    "lengthrules.yarn": ({"n": 2048}, {"n": LENGTH, "n_train": REAL + [1.0, 0.5]}),
    "lengthrules.ssmax": ({"n": 2048}, {"n": LENGTH, "s": POSITIVE}),
    "lengthrules.longrope": ({"n": 2048}, {"n": LENGTH, "n_train": REAL + [1.0, 0.5]}),
    "lengthrules.chiang_cholak": ({"n": 2048}, {"n": LENGTH}),
    "lengthrules.alpha_constant_needle": ({"n": 2048, "gap": 5.0}, {"n": LENGTH + [1.5], "gap": REAL, "target": [NAN, INF, "x", 1 + 2j, 0.0, 1.5, 1e-4], "n_train": REAL + [1.0]}),
    "lengthrules.alpha_constant_entropy": ({"n": 2048}, {"n": LENGTH + [256], "target": [NAN, INF, "x", 1 + 2j, 0.0, -1.0], "n_train": REAL + [1.0]}),
    "lengthrules.rule_alpha": ({"rule": "yarn", "n": 2048}, {"rule": ["softmax", None, 3.0], "n": LENGTH, "n_train": REAL + [1.0], "gap": REAL}),
    "lengthrules.evaluate": ({"rule": "log512", "n": 2048}, {"rule": ["softmax", None, [-1.0], [NAN]], "n": LENGTH + [1.5, 1e16], "gap": REAL + [-40.0], "n_train": REAL + [1.0]}),
    "recommend.advice": ({"n": 512, "d": 64}, {"n": LENGTH + [1e16], "d": COUNT, "scores": ["bilinear", None, 3]}),
    "montecarlo.typical_optimum_normal": ({"n": 4, "batches": 2}, {"n": COUNT + [1, 100_001], "batches": COUNT + [1], "seed": [NAN, "s", -1]}),
    "page.number": ({"key": "k", "value": 1.5}, {"key": [None, 3, "", "1x", "a b"], "value": [NAN, "v", None], "spec": [None, 3, "q"]}),
    "page.scientific": ({"x": 1.5e-5}, {"x": [NAN, "x", None], "digits": [0, -1, "3"]}),
    "page.mean_sd": ({"values": [1.0, 2.0]}, {"values": [[NAN, 1.0], [1.0], "v", None], "spec": [None, 3]}),
    "page.listing": ({"items": ["a", "b"]}, {"items": [[], [3], [None, "a"]]}),
    "page.text": ({"key": "k", "shown": "s"}, {"key": [None, 3, "", "a b"], "shown": [None, 3]}),
    "page.figure": ({"key": "k", "fig": lambda: __import__("attnscale.plotting").plotting.figure()[0]}, {"key": [None, "a b"], "fig": [None, "fig", 3]}),
    "plotting.checked_png": ({"fig": lambda: __import__("attnscale.plotting").plotting.figure()[0]}, {"fig": [None, "fig", 3]}),
    "recommend.recommend": ({"n": 512, "d": 64}, {"n": LENGTH + [1e16], "d": COUNT, "scores": ["bilinear", None, 3]}),
    "recommend.scale_at_share": ({"n": 512}, {"n": LENGTH, "share": REAL + [0.0, 1.0, 1.5], "d": D_BAD + [2]}),
    "recommend.report": ({"n": 512, "d": 64}, {"n": LENGTH, "d": COUNT, "scores": ["bilinear", None], "n_train": REAL + [1.0, 0.5], "alpha_train": POSITIVE}),
    "recommend.mean_field_check": ({"n": 512, "d": 64}, {"n": LENGTH + [1e16], "d": COUNT, "scores": ["bilinear", None, 3]}),
    "recommend.length_rules": ({"n": 4096}, {"n": LENGTH + [1e16, 512.0, 100.0], "n_train": REAL + [1.0, 1.5, 4096.0], "alpha_train": POSITIVE + [51.0]}),
    "recommend.decoder_share": ({"alpha": 2.0, "length": 64}, {"alpha": POSITIVE + [[1.0, 2.0]], "length": COUNT + [1]}),
    "recommend.decoder_best_scale": ({"length": 64}, {"length": COUNT + [1, 10**8]}),
    "montecarlo.collision_and_gradient": ({"scores": lambda: _rng().normal(size=(4, 8)), "alphas": [1.0, 2.0]},
                                          {"scores": [[[NAN, 1.0]], "s", None, [1.0, 2.0], [[1.0], [2.0]]], "alphas": POSITIVE + [[[1.0]]], "chunk": COUNT}),
    "montecarlo.row_optimum": ({"scores": lambda: _rng().normal(size=(3, 16))},
                               {"scores": [[[NAN, 1.0]], "s", None], "lo": POSITIVE, "hi": POSITIVE + [0.01], "iterations": COUNT}),
    "montecarlo.typical_row_optimum": ({"scores": lambda: _rng().normal(size=(4, 8))},
                                       {"scores": [[[NAN, 1.0]], [1.0, 2.0], [[1.0]], "s", None], "measure": [None, 3.0], "lo": POSITIVE, "hi": POSITIVE + [0.01]}),
    "montecarlo.gap_density_at_zero": ({"n": 16}, {"n": COUNT + [1, 10**309]}),
    "montecarlo.rem_collision": ({"alpha": 1.0, "n": 64}, {"alpha": POSITIVE, "n": LENGTH}),
    "optimum.collision_normal": ({"alpha": 1.0, "n": 64}, {"alpha": POSITIVE, "n": LENGTH}),
    "optimum.objective_normal": ({"alpha": 1.0, "n": 64}, {"alpha": POSITIVE, "n": LENGTH}),
    "optimum.alpha_star_normal": ({"n": 64}, {"n": LENGTH}),
    "optimum.alpha_star_normal_asymptotic": ({"n": 64, "terms": 2}, {"n": LENGTH, "terms": [0, 4, "2", None]}),
    "optimum.n_for_alpha_normal": ({"alpha": 1.0}, {"alpha": POSITIVE}),
    "optimum.su_sweep": ({}, {}),
    "optimum.fit_through_origin": ({"values": [1.0, 2.0], "basis": [1.0, 2.0]}, {"values": [[NAN, 1.0], [0.0, 1.0], "v", None, 2.0], "basis": [[0.0, 0.0], [1.0, 2.0, 3.0], [INF, 1.0], "b", None]}),
    "optimum.alpha_star_normal_lambertw": ({"n": 64}, {"n": LENGTH}),
    "optimum.alpha_star_frobenius_normal": ({"n": 64}, {"n": LENGTH}),
    "optimum.collision_cosine": ({"alpha": 3.0, "n": 64, "d": 32}, {"alpha": POSITIVE, "n": LENGTH, "d": REAL + [1, 0, 65537, 1e150]}),
    "optimum.objective_cosine": ({"alpha": 3.0, "n": 64, "d": 32}, {"alpha": POSITIVE, "n": LENGTH, "d": REAL + [1, 0]}),
    "optimum.alpha_star_cosine": ({"n": 64, "d": 32}, {"n": LENGTH, "d": REAL + [1, 0, 65537, 1e150], "iterations": COUNT}),
    "scores.cosine_logpdf": ({"s": 0.1, "d": 32}, {"s": REAL + [1.0, -1.0, 1.5, -2.0], "d": REAL + [1, 0]}),
    "scores.sample_dot_products": ({"rng": _rng, "size": 5, "d": 8}, {"rng": [None, 3, "rng"], "size": [-1, "5", None, 2.5], "d": [0, "x", None, 2.5],
                                                                    "rho": REAL + [1.5, -2.0], "chunk": [0, "x", None]}),
    "scores.cosine_kernel_mass": ({"d": 5, "exponent": 1.5}, {"d": REAL + [1.0, 0.5], "exponent": REAL + [-1.0, -3.0]}),
    "scores.cosine_cdf": ({"s": 0.5, "d": 5}, {"s": REAL + [1.5, -2.0], "d": REAL + [1.0, 0.5]}),
    "scores.sample_vector_cosines": ({"rng": _rng, "size": 5, "d": 4}, {"rng": [None, 3, "rng"], "size": [-1, "5", None, 2.5], "d": [1, 0, "x", None, 2.5]}),
    "scores.sample_cosines": ({"rng": _rng, "size": 5, "d": 32}, {"rng": [None, 3, "rng"], "size": [-1, "5", None, 2.5], "d": REAL + [1, 0]}),
    "scores.log_mgf_cosine": ({"alpha": 3.0, "d": 32}, {"alpha": REAL + [-1.0], "d": REAL + [1, 0, 65537, 1e150]}),
    "scores.dlog_mgf_cosine": ({"alpha": 3.0, "d": 32}, {"alpha": REAL + [-1.0], "d": REAL + [1, 0, 65537, 1e150]}),
    "scores.log_mgf_normal": ({"alpha": 1.0}, {"alpha": REAL}),
    "special.log_besseli": ({"nu": 1.5, "x": 2.0}, {"nu": REAL + [-1.0], "x": REAL + [0.0, -1.0]}),
    "special.log_besseli_scaled": ({"nu": 1.5, "x": 2.0}, {"nu": REAL + [-1.0], "x": REAL + [0.0, -1.0]}),
    "special.bessel_ratio": ({"nu": 1.5, "x": 2.0}, {"nu": REAL + [-1.0], "x": REAL + [0.0, -1.0]}),
    "special.bessel_ratio_complement": ({"nu": 1.5, "x": 2.0}, {"nu": REAL + [-1.0], "x": REAL + [0.0, -1.0]}),
    "symbolic.unify_dummies": ({"expr": lambda: __import__("sympy").Symbol("x")}, {"expr": [object(), print]}),
    "symbolic.branch": ({"expr": lambda: __import__("sympy").Symbol("x"), "condition": True}, {"expr": [object()]}),
    "checks.close": ({"value": 1.0, "expected": 1.0, "name": "c", "rtol": 1e-12}, {"rtol": [-1.0, NAN, "r"], "atol": [-1.0, NAN], "name": [None, 3]}),
    "checks.holds": ({"condition": True, "name": "h"}, {"name": [None, 3]}),
    "checks.differs": ({"value": 1.0, "claimed": 2.0, "name": "d", "rtol": 1e-3}, {"rtol": [-1.0, NAN, "r"], "value": [NAN, "v"], "claimed": [NAN, "c"]}),
    "checks.identity": ({"lhs": 1, "rhs": 1, "name": "i"}, {"name": [None, 3]}),
    "checks.fmt": ({"x": 1.0}, {"x": ["x", None], "digits": [0, -1, "3"]}),
    "claims.recompute": ({"record": {"id": "r", "recompute": "jacobian_rank"}}, {"record": [NAN, None, "r", {"id": "r", "recompute": "no_such_function"}, {"id": "r"}]}),
    "claims.verdict": ({"record": {"id": "r", "claimed": 1.0}, "value": 1.0}, {"record": [NAN, None, {"id": "r"}], "value": [NAN, INF, "v", None]}),
    "claims.load_register": ({"path": lambda: __import__("attnscale.claims").claims.REGISTER}, {"path": [None, 3.0, "/no/such/register.yml"]}),
    "claims.evaluate_register": ({"records": []}, {"records": [None, NAN, [NAN], [{"id": "x"}]]}),
    "claims.numbers_of": ({"rec": {"id": "r", "claimed": 1.0}}, {"rec": [None, NAN]}),
    "claims.register_page": ({"rows": lambda: [{"id": "x", "source": {"file": "000_051da7c3837b8577.txt", "place": "p"}, "statement": "s", "claimed": 1.0,
                                                   "value": 1.0, "verdict": "holds", "where": {"doc": "chapters/05_gaussian_scores", "label": "l"}}]},
                             {"rows": [None, NAN, [], [NAN], [{"id": "x"}]]}),
    "claims.show_value": ({"value": 1.0}, {"value": ["v", {"a": 1}, NAN, [1.0, INF]]}),
    "claims.chapter_table": ({"doc": "chapters/01_softmax_jacobian"},
                             {"doc": [None, NAN, "", 3, "chapters/99_no_such_chapter"], "records": [NAN, "r", [NAN], [{"id": "x"}]]}),
    "plotting.figure": ({"ncols": 1, "nrows": 1}, {"ncols": COUNT, "nrows": COUNT, "width": POSITIVE + [100.0], "height": POSITIVE + [100.0]}),
    "plotting.rendered_text_px": ({"fig": lambda: __import__("attnscale.plotting").plotting.figure()[0]}, {"fig": [None, "fig", 3]}),
    "plotting.png": ({"fig": lambda: __import__("attnscale.plotting").plotting.figure()[0]}, {"fig": [None, "fig", 3]}),
    "plotting.text_chunks": ({"data": b"\x89PNG\r\n\x1a\n"}, {"data": [None, "data", b"GIF89a", 3]}),
    "reproducibility.stable_runs": ({"cell": _cell}, {"cell": [None, NAN, {"labels": []}]}),
    "reproducibility.compare_cells": ({"fresh": _cell, "stored": _cell}, {"fresh": [None, NAN, {"labels": []}], "stored": [None, {"labels": []}]}),
    "training.init_params": ({"rng": _rng, "seeds": 1, "models": 1, "d": 4}, {"rng": [None, 3], "seeds": COUNT, "models": COUNT, "d": COUNT}),
    "training.sample_batch": ({"rng": _rng, "seeds": 1, "batch": 2, "n": 3, "d": 4}, {"rng": [None, 3], "seeds": COUNT, "batch": COUNT, "n": COUNT + [1], "d": COUNT, "c": COUNT, "noise": REAL + [-1.0]}),
    "training.forward": ({"params": _params, "data": _data, "alpha": 1.0, "kind": "dot"}, {"params": [None, NAN, {}], "data": [None, NAN, {}], "alpha": POSITIVE, "kind": ["bilinear", None]}),
    "training.loss_and_grads": ({"params": _params, "data": _data, "alpha": 1.0, "kind": "dot"}, {"params": [None, {}], "data": [None, {}], "alpha": POSITIVE, "kind": ["bilinear", None]}),
    "training.bilinear_gradient": ({"params": _params, "data": _data, "alpha": 1.0}, {"params": [None, {}], "data": [None, {}], "alpha": POSITIVE}),
    "training.identity_alignment": ({"G": np.eye(3)}, {"G": [np.zeros((3, 3)), np.ones((2, 3)), [[NAN]], "G", None]}),
    "training.at_grid_edge": ({"best_lr": [0, 1, 3], "rates": 4}, {"best_lr": [[4], [0.5], [-1], [NAN], "b", None], "rates": COUNT + [1]}),
    "training.final_loss_summary": ({"final_loss": [[0.1, 0.2], [0.3, 0.4]]}, {"final_loss": [[0.1], [NAN, 0.1], [-0.1, 0.2], "f", None, 0.5]}),
    "training.paired_comparison": ({"a": [20, 40, 60], "b": [20, 20, 80], "resamples": 200},
                                   {"a": [[NAN, 1, 2], [-INF, 1, 2], [1, 2], [], "a", None], "b": [[1, NAN, 2], [1, 2], "b", None],
                                    "resamples": COUNT + [10], "seed": [-1, 2.5, "s", None], "level": [0.0, 1.0, NAN, "l", None]}),
    "training.within_strata_correlation": ({"x": [1, 2, 3, 4], "y": [2, 1, 4, 3], "strata": [0, 0, 1, 1], "permutations": 200},
                                           {"x": [[NAN, 2, 3, 4], [1, 2], "x", None], "y": [[1, 2, NAN, 4], [1, 2], "y", None],
                                            "strata": [[0, 0], "s", None, [NAN, 0, 1, 1]], "permutations": COUNT + [10], "seed": [-1, "s", None]}),
    "training.holm": ({"p_values": [0.01, 0.04]}, {"p_values": [[NAN], [1.5], [-0.1], [], "p", None]}),
    "training.train": ({"seed": 0, "settings": lambda: __import__("attnscale.training").training.TrainSettings(**_TINY_RUN)},
                       {"seed": [NAN, "s", None, -1], "settings": [None, "s", _TINY_RUN]}),
    "training.TrainSettings": (_TINY_RUN,
                       {"n": COUNT + [1], "d": COUNT + [1], "kind": ["bilinear"], "alphas": POSITIVE + [[], [[1.0, 2.0]], 1.0, [True], [1.0, True]],
                        "lrs": POSITIVE + [[], 1.0, [True], [[0.1], [0.2, 0.3]]],
                        "seeds": COUNT, "steps": COUNT, "batch": COUNT, "noise": REAL + [-1.0, [1.0, 2.0], True], "c": COUNT, "optimizer": ["lion", None], "eval_every": COUNT,
                        "eval_size": COUNT, "eval_steps": [[0, 2], [1, 1], "e", [NAN, 1], [[0], [1]], [0, 0.5, 1], [False, 1], [0, True]],
                        "validation_size": COUNT[1:] + [False], "validation_every": COUNT, "learn_scale": ["yes", None, 1],
                        "weight_decay": REAL + [-0.1, [0.1], True], "return_params": ["yes", None, 1]}),
    "training.steps_to_target": ({"step": [0, 10], "accuracy": [0.5, 0.9], "target": 0.8}, {"step": [[0, 10, 20], "s", None, [NAN, 1]], "accuracy": [[0.5], "a", None, [NAN, 0.9]], "target": [0.0, 1.5, NAN, "t", None]}),
    "training.sweep_scales": ({"n": 16, "d": 32, "kind": "dot"}, {"n": COUNT + [1], "d": COUNT, "kind": ["bilinear", None]}),
    "training.evaluation_steps": ({"steps": 10}, {"steps": COUNT, "resolution": REAL + [0.0, 1.5], "dense": COUNT}),
    "training.lattice_rate": ({"k": -3}, {"k": [2.5, "3", None, True, NAN, -61]}),
    "training.rate_window": ({"optimizer": "adam", "kind": "dot", "alpha": 1.0}, {"optimizer": ["lion", None], "kind": ["bilinear", None], "alpha": POSITIVE,
                                                                                 "cfg": [NAN, "c", {}]}),
    "training.tune": ({"seed": 0, "n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "steps": 1, "seeds": 1, "eval_size": 4, "validation_size": 4, "rates": {"dot": 2}},
                      {"seed": [NAN, "s", -1], "n": COUNT + [1], "d": COUNT, "kind": ["bilinear", None], "alphas": POSITIVE + [[]], "optimizer": ["lion", None],
                       "learn_scale": ["yes", None, 1], "weight_decay": REAL + [-0.1], "return_params": ["yes", None, 1], "validation_size": COUNT, "slides": [-1, 2.5, "s", None]}),
    "training.conclusions": ({"directory": lambda: __import__("attnscale.training").training.DATA}, {"directory": [None, 3.0, "/no/such/directory"]}),
    "training.mean_interval": ({"values": [1.0, 2.0, 4.0]}, {"values": [[1.0], [NAN, 1.0], "v", None, []], "level": [0.0, 1.0, NAN, "l", None]}),
    "training.best_rates": ({"cell": {"lrs": [[0.1, 0.3]], "best_lr": np.array([1])}}, {"cell": [None, {}, NAN, {"lrs": [[0.1, 0.3]], "best_lr": np.array([2])}]}),
    "training.run_config": ({"n": 16, "d": 32, "kind": "dot", "optimizer": "adam", "steps": 1, "seeds": 1, "eval_size": 4, "validation_size": 4},
                            {"n": COUNT + [1], "d": COUNT, "kind": ["bilinear", None], "optimizer": ["lion", None], "seed": [NAN, "s", -1],
                             "scales": [[], "1", ["3"], NAN], "learn_scale": ["yes", None, 1], "weight_decay": REAL + [-0.1]}),
    "training.select_scales": ({"cell": _cell, "scales": ["1"]}, {"cell": [None, NAN, {"labels": []}], "scales": [[], "1", ["3"], None]}),
    "training.best_lr_index": ({"loss": np.ones((2, 3, 2))}, {"loss": [np.ones((2, 3)), "l", None, np.full((2, 3, 2), NAN)]}),
    "training.lr_exponent": ({"cells": [{"alphas": [1.0, 2.0], "lrs": [0.1, 1.0], "best_lr": [0, 1]}]},
                             {"cells": [[], None, NAN, [{"alphas": [1.0], "lrs": [0.1], "best_lr": [0]}], [{}]]}),
    "training.finite_difference_error": ({"kind": "dot"}, {"kind": ["bilinear", None], "h": POSITIVE, "seed": SEEDS}),
    "training.identity_map": ({"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "examples": 500},
                              {"n": COUNT + [1], "d": COUNT + [1], "kind": ["bilinear", None], "alphas": POSITIVE, "examples": COUNT + [700], "seed": SEEDS}),
    "training.among_fastest": ({"cell": {"steps_to_target": [[20.0, 40.0]]}}, {"cell": [None, {}, NAN, {"steps_to_target": [[NAN, 1.0]]}], "within": REAL + [-1.0]}),
    "training.compare_arms": ({"cells": _cells, "optimizer": "adam", "kind": "dot", "arm": "2.5", "reference": "1"},
                              {"cells": [None, {}, NAN], "optimizer": ["rmsprop", None], "kind": ["bilinear", None], "arm": ["3", None], "reference": ["3", None]}),
    "training.initial_alignment": ({"cell": _cell}, {"cell": [None, {}, NAN]}),
    "training.p_text": ({"p": 0.01}, {"p": REAL + [1.5, -0.1]}),
    "training.steps_text": ({"x": 20.0}, {"x": [NAN, "x", None, 1 + 2j]}),
    "training.loss_text": ({"x": 0.01}, {"x": REAL}),
    "training.scale_name": ({"cell": _cell, "a": 0}, {"cell": [None, {}], "a": [-1, 9, 2.5, None]}),
    "training.summary_rows": ({"cell": _cell}, {"cell": [None, {}, NAN]}),
    "training.results_table": ({"cells": _cells, "opt": "adam", "kind": "dot"}, {"cells": [None, {}], "opt": ["rmsprop", None], "kind": ["bilinear", None]}),
    "training.loss_curves": ({"cells": _cells, "opt": "adam", "kind": "dot", "title": "t"},
                             {"cells": [None, {}], "opt": ["rmsprop", None], "kind": ["bilinear", None], "title": [None, 3]}),
    "training.speed_table": ({"tests": _tests, "holm_p": _holm}, {"tests": [None, {}, {"k": 1}], "holm_p": [None, {}]}),
    "training.loss_table": ({"tests": _tests, "holm_p": _holm}, {"tests": [None, {}, {"k": 1}], "holm_p": [None, {}]}),
    "training.load_sweep": ({"path": lambda: __import__("attnscale.training").training.DATA / "training_adam.json"}, {"path": [None, 3.0, "/no/such/sweep.json"]}),
    "training.load_lengths": ({"path": lambda: __import__("attnscale.training").training.DATA / "training_lengths.json"}, {"path": [None, 3.0, "/no/such/lengths.json"]}),
    "training.held_out_sets": ({"seed": 0, "n": 8, "d": 4, "factor": 4, "eval_size": 4, "cfg": {"seeds": 1, "batch": 4, "c": 2, "noise": 1.0}},
                               {"seed": [NAN, "s", -1], "n": COUNT + [1], "d": COUNT + [1], "factor": COUNT + [1], "eval_size": COUNT, "cfg": [None, {}, NAN]}),
    "training.length_transfer": ({"n": 8, "d": 4, "steps": 1, "seeds": 1, "eval_size": 4, "validation_size": 4, "grid": 3},
                                 {"n": COUNT + [1], "d": COUNT + [1], "factor": COUNT + [1], "seed": [NAN, "s", -1], "eval_size": COUNT, "grid": COUNT + [1]}),
}

#: display helpers and plain data classes, exercised elsewhere
EXEMPT = {"checks.start_page", "checks.page_summary", "checks.PageChecks", "page.Text", "page.Shown", "recommend.Advice", "training.PairedComparison", "training.StratifiedCorrelation", "training.TrainResult", "recommend.Scale", "recommend.main", "symbolic.GeneralSoftmax", "symbolic.general_softmax", "symbolic.show_math", "plotting.show_figure", "reproducibility.Comparison"}


def _public() -> set[str]:
    names = set()
    for mod in MODULES:
        module = importlib.import_module(f"attnscale.{mod}")
        names |= {f"{mod}.{name}" for name in module.__all__ if callable(getattr(module, name))}
    return names


def test_every_public_function_is_covered():
    missing = _public() - set(SPECS) - EXEMPT
    assert not missing, f"add these public functions to SPECS in {__file__}: {sorted(missing)}"
    assert not (set(SPECS) - _public()), "SPECS names functions that are no longer public"


def _resolve(value):
    return value() if callable(value) and not isinstance(value, type) and getattr(value, "__name__", "") in ("<lambda>", "_rng", "_params", "_data", "_cell", "_cells", "_tests", "_holm") else value


def _function(name: str):
    mod, fn = name.split(".")
    return getattr(importlib.import_module(f"attnscale.{mod}"), fn)


#: refusals of a relation between two arguments (lo < hi, n > n_train, equal lengths, a
#: name the function maps to another setting): the message states the relation, so it begins
#: with the relation's first term or with the setting's own name and names the argument later
RELATIONS = {
    ("lengthrules.alpha_constant_needle", "target"),
    ("recommend.length_rules", "n_train"),
    ("montecarlo.row_optimum", "hi"),
    ("montecarlo.typical_row_optimum", "hi"),
    ("checks.close", "atol"),
    ("training.paired_comparison", "b"),
    ("training.within_strata_correlation", "y"),
    ("training.steps_to_target", "step"),
    ("training.results_table", "opt"),
    ("training.loss_curves", "opt"),
}

CASES = [(name, arg, bad) for name, (_, bads) in SPECS.items() for arg, values in bads.items() for bad in values]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_valid_call_works(name):
    valid, _ = SPECS[name]
    _function(name)(**{k: _resolve(v) for k, v in valid.items()})


def _label(bad) -> str:
    text = type(bad).__name__ if type(bad) is object else repr(bad)
    return text if len(text) < 30 else text[:27] + "..."


@pytest.mark.parametrize(("name", "arg", "bad"), CASES, ids=[f"{n}-{a}-{_label(b)}" for n, a, b in CASES])
def test_bad_argument_is_rejected_by_name(name, arg, bad):
    valid, _ = SPECS[name]
    kwargs = {k: _resolve(v) for k, v in valid.items()}
    kwargs[arg] = bad
    try:
        result = _function(name)(**kwargs)
    except (ValueError, TypeError, FileNotFoundError) as err:
        if (name, arg) in RELATIONS:
            assert arg in str(err) or name.split(".")[1] in str(err), f"{name}({arg}={bad!r}) raised {type(err).__name__} without naming {arg!r}: {err}"
        else:
            assert re.match(named(arg), str(err)), f"{name}({arg}={bad!r}) raised {type(err).__name__} whose message does not begin with {arg!r}: {err}"
    except Exception as err:  # noqa: BLE001 - the point is to catch the wrong kind
        pytest.fail(f"{name}({arg}={bad!r}) raised {type(err).__name__}, not ValueError/TypeError: {err}")
    else:
        pytest.fail(f"{name}({arg}={bad!r}) returned {result!r:.80} instead of raising")


def test_nothing_returns_a_silent_nan_at_the_edges_of_the_valid_range():
    """Valid but extreme arguments give finite answers (or an error), never NaN."""
    from attnscale import entropy, optimum, softmax

    values = [
        softmax.softmax([0.0, 1e308, -1e308], 1e3),
        softmax.gradient_l1(softmax.softmax([0.0, 800.0], 1.0), 1.0),
        optimum.alpha_star_normal([1 + 1e-15, 1e308]),
        optimum.alpha_star_cosine(1e12, 4096),
        optimum.alpha_star_cosine(1e12, 65536),  # the largest d the Bessel routes support
        entropy.mean_field_entropy_cosine(4e4, 1e6, 65536),
        entropy.mean_field_entropy_normal(30.0, 2.0),
    ]
    for value in values:
        assert not np.isnan(np.asarray(value, dtype=float)).any()
    assert math.isfinite(float(optimum.alpha_star_normal(2.0)))


@pytest.mark.parametrize("name, args", [("run_config", (16, 32, "dot")), ("length_transfer", (16, 32)), ("sweep.tune", (1,))])
def test_a_misspelt_setting_is_rejected_by_name(name, args):
    """The training entry points take the sweep's settings as keyword overrides; a name that is
    not a setting is refused, named, before any training (it was ignored before)."""
    import attnscale.training as training

    func = getattr(training.sweep, "tune") if name == "sweep.tune" else getattr(training, name)
    extra = {"n": 16, "d": 32, "kind": "dot", "alphas": [1.0]} if name == "sweep.tune" else {}
    with pytest.raises(TypeError, match=r"^unknown setting\(s\) \['stepz'\]: the overridable settings are \[.*'steps'"):
        func(*args, **extra, stepz=10)
