"""The byte-model sweep (attnscale.bytelm.sweep): the stored groups are the sweep's, the plan
resumes and confirms on fresh seeds, and a row's statistics and a length rule's factors are what
they say. That a fresh run of the first steps reproduces the stored losses to their rounding is
chapter 14's check (run by nbval in make test), not repeated here."""

import math

import numpy as np
import pytest

pytest.importorskip("jax")

from attnscale.bytelm import sweep as sw  # noqa: E402
from attnscale.lengthrules import rule_alpha  # noqa: E402

STORED = sw.load()


def test_the_stored_groups_are_the_sweep_s():
    assert "dot_a1" in STORED
    for g in STORED.values():
        assert sw.same_settings(g)
        assert len({m["seed"] for m in g["members"]}) >= 3


def test_a_setting_that_differs_is_seen_and_a_confirmation_key_only_where_recorded():
    g = {"settings": {k: v for k, v in sw.SWEEP.items() if k not in sw.CONFIRM_KEYS}}
    assert sw.same_settings(g)
    assert not sw.same_settings({"settings": {**g["settings"], "rates": [0.1]}})
    assert not sw.same_settings({"settings": {**sw.SWEEP, "confirm_seeds": [3]}})


def test_the_stored_sweep_is_complete_and_confirmations_use_fresh_seeds():
    assert sw.group_plan() == []
    for name, g in STORED.items():
        seeds = {m["seed"] for m in g["members"]}
        if name.endswith("_confirm"):
            assert seeds == set(sw.SWEEP["confirm_seeds"]) and not seeds & set(sw.SWEEP["seeds"])
        else:
            assert seeds == set(sw.SWEEP["seeds"])


def test_an_empty_store_plans_the_first_scales_and_a_finished_grid_plans_confirmations(tmp_path):
    plan = sw.group_plan(data=tmp_path)
    assert [p["name"] for p in plan] == [f"dot_a{a:g}" for a in sw.SWEEP["alphas"]]  # the cosine arm waits for dot_a1
    confirm = sw._confirmations(sw.SWEEP, sw.DATA)
    assert confirm == [] or all(p["seeds"] == sw.SWEEP["confirm_seeds"] and p["rows"] is False for p in confirm)


def test_row_statistics_match_a_direct_computation():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(1, 2, 1, 8, 8)) * 1.7  # (L, B, H, T, T)
    out = sw.rows(logits, [5, 8])
    for n in (5, 8):
        z = logits[0, 1, 0, n - 1, :n]
        p = np.exp(z) / np.exp(z).sum()
        assert out[str(n)]["sd"][0][0][1] == pytest.approx(z.std(), abs=1e-5)
        assert out[str(n)]["sum_p2"][0][0][1] == pytest.approx((p ** 2).sum(), abs=1e-5)
        assert out[str(n)]["entropy"][0][0][1] == pytest.approx(-(p * np.log(p)).sum() / math.log(n), abs=1e-5)


def test_a_rule_leaves_trained_rows_alone_and_follows_the_rule_beyond():
    f = np.asarray(sw.rule_factors("constant_entropy", 16, 64))
    assert np.all(f[:16] == 1.0)
    for n in (32, 64):
        assert f[n - 1] == pytest.approx(float(rule_alpha("constant_entropy", n, n_train=16)), rel=1e-3)


