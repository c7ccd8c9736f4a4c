"""The command that runs the sweep and its arms (python -m attnscale.training): its jobs,
and a whole run on tiny settings that writes every file the chapter reads."""

import json

import numpy as np
import pytest

from attnscale.training import load_lengths, load_sweep, run_config
from attnscale.training import runner
from attnscale.training.sweep import SWEEP


def test_one_job_per_cell_for_every_file():
    outs = runner.outputs()
    jobs = {o.name: len(o.jobs) for o in outs}
    assert jobs == {"training_adam.json": 12, "training_sgd.json": 12, "training_learned_dot.json": 6, "training_learned_cosine.json": 6,
                    "training_adamw_dot.json": 6, "training_adamw_dot_wd0.01.json": 6, "training_adamw_dot_wd1.json": 6, "training_lengths.json": 6}
    assert sum(jobs.values()) == 60
    # cosine cells cost more than dot cells of the same size, and larger n more than smaller
    cost = {(kw.get("kind"), kw["n"], kw["d"]): c for o in outs if o.name == "training_adam.json" for _, kw, c in o.jobs}
    assert cost[("cosine", 256, 64)] > cost[("dot", 256, 64)] > cost[("dot", 16, 64)]
    assert [o.name for o in runner.outputs(["lengths"])] == ["training_lengths.json"]
    for bad in (["everything"], [], "main"):
        with pytest.raises(ValueError, match="arms"):
            runner.outputs(bad)


def test_each_file_records_what_its_jobs_run_with():
    """A file's header (optimizer, learn_scale, weight_decay; factor for the lengths) is what the
    stored file of that name in chapters/data records, from the run that made it, and every
    job of the file runs with those values (passed, or the function's default)."""
    import inspect

    from attnscale.training import DATA

    for out in runner.outputs():
        stored = json.loads((DATA / out.name).read_text())
        recorded = {k: v for k, v in stored.items() if k not in ("command", "settings", "machine", "seconds", "cells")}
        assert out.header == recorded, out.name
        for func, kwargs, _ in out.jobs:
            defaults = {k: p.default for k, p in inspect.signature(func).parameters.items() if p.default is not inspect.Parameter.empty}
            ran_with = {**defaults, **kwargs}
            assert {k: ran_with[k] for k in out.header} == out.header, (out.name, kwargs)


def test_a_whole_run_on_tiny_settings(tmp_path, monkeypatch):
    """Every file is written, records the command and the settings, and holds every cell;
    a cell equals what run_config gives for it directly, whichever worker ran it."""
    tiny = {"ns": [4], "ds": [4], "steps": 4, "seeds": 2, "eval_size": 8, "validation_size": 8, "validation_every": 2, "dense": 2}
    for key, value in tiny.items():
        monkeypatch.setitem(SWEEP, key, value)
    assert runner.main(["--jobs", "2", "--data", str(tmp_path)]) == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted(o.name for o in runner.outputs())
    for name in files:
        raw = json.loads((tmp_path / name).read_text())
        assert raw["command"] == "python -m attnscale.training --arms main learned adamw lengths"
        assert raw["settings"]["ns"] == [4] and raw["machine"]["jobs"] == 2
        assert len(raw["cells"]) == (2 if name in ("training_adam.json", "training_sgd.json") else 1)
    cell = next(c for c in load_sweep(tmp_path / "training_sgd.json")["cells"] if c["kind"] == "cosine")
    direct = run_config(4, 4, "cosine", "sgd")
    for key in ("lrs", "best_lr", "steps_to_target", "final_loss"):
        np.testing.assert_allclose(cell[key], direct[key], rtol=1e-5, err_msg=key)  # stored to six digits
    assert load_lengths(tmp_path / "training_lengths.json")["cells"][0]["n"] == 4
    with pytest.raises(SystemExit):
        runner.main(["--jobs", "0", "--data", str(tmp_path)])
