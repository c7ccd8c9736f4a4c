"""attnscale.training.runner: the command that runs a sweep in jobs and files, on tiny settings
and with a harness in place of training.
"""

from __future__ import annotations

from concurrent.futures import Future
import json
import sys

import numpy as np
import pytest

from attnscale.training import load_lengths, load_sweep, run_config, runner
from attnscale.training.sweep import SWEEP


PROG = "python -m attnscale.training"


DESCRIPTION = "Run the Part IV training experiment (the sweep and its arms) and store its results as JSON."


TOY_SETTINGS = {"steps": 4, "seeds": 2}


class Clock:
    """Stands in for the ``time`` module: ``perf_counter`` moves only when a toy job works."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


class Harness:
    """Runs ``runner.main`` on two toy result files with an in-process pool and a toy clock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.clock = Clock()
        self.arms: list = []
        self.workers: list = []
        self.ran: list[tuple[str, int, int]] = []
        self.pending: dict = {}
        harness = self

        def cell(n: int, d: int, kind: str, work: float) -> dict:
            harness.clock.now += work
            harness.ran.append((kind, n, d))
            return {"n": n, "d": d, "kind": kind}

        def length(n: int, d: int, factor: int, work: float) -> dict:
            harness.clock.now += work
            harness.ran.append(("length", n, d))
            return {"n": n, "d": d, "factor": factor}

        def outputs(arms):
            harness.arms.append(arms)
            a = runner.Output(
                "training_toy_a.json",
                {"optimizer": "adam", "learn_scale": False, "weight_decay": 0.0},
                [(cell, {"n": 16, "d": 32, "kind": "dot", "work": 1.4}, 10.0), (cell, {"n": 64, "d": 32, "kind": "cosine", "work": 2.2}, 40.0)],
            )
            b = runner.Output(
                "training_toy_b.json",
                {"factor": 4},
                [
                    (length, {"n": 16, "d": 32, "factor": 4, "work": 0.7}, 20.0),
                    (length, {"n": 256, "d": 64, "factor": 4, "work": 3.0}, 50.0),
                    (length, {"n": 64, "d": 64, "factor": 4, "work": 1.1}, 5.0),
                ],
            )
            return [a, b]

        class Pool:
            def __init__(self, max_workers=None):
                harness.workers.append(max_workers)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def submit(self, fn, *args):
                future: Future = Future()
                harness.pending[future] = (fn, args)
                return future

        def as_completed(futures):
            for future in futures:  # in the order submitted; each runs when its turn comes
                fn, args = harness.pending.pop(future)
                future.set_result(fn(*args))
                yield future

        monkeypatch.setattr(runner, "outputs", outputs)
        monkeypatch.setattr(runner, "ProcessPoolExecutor", Pool)
        monkeypatch.setattr(runner, "as_completed", as_completed)
        monkeypatch.setattr(runner, "time", self.clock)
        monkeypatch.setattr(runner, "SWEEP", TOY_SETTINGS)
        monkeypatch.setattr(runner, "_cpu", lambda: "Toy CPU 9000")
        monkeypatch.setattr(runner.os, "cpu_count", lambda: 3)
        monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)


class Recorder:
    """Stands in for sys.stdout: keeps the text and where in it each flush happened."""

    def __init__(self) -> None:
        self.text = ""
        self.flushed_at: list[int] = []

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        self.flushed_at.append(len(self.text))


def machine(jobs: int, cpus: int | None = 3, kernel: str = "default") -> dict:
    python = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    return {"python": python, "numpy": np.__version__, "cpus": cpus, "cpu": "Toy CPU 9000", "jobs": jobs, "openblas_coretype": kernel}


def expected_files(command: str, jobs: int, cpus: int | None = 3, kernel: str = "default") -> dict[str, str]:
    """The two toy files as they should be written: compact JSON on one line."""
    a = {
        "command": command,
        "optimizer": "adam",
        "learn_scale": False,
        "weight_decay": 0.0,
        "settings": TOY_SETTINGS,
        "machine": machine(jobs, cpus, kernel),
        "seconds": 4,  # 1.4 + 2.2 s
        "cells": [{"n": 16, "d": 32, "kind": "dot"}, {"n": 64, "d": 32, "kind": "cosine"}],
    }
    b = {
        "command": command,
        "factor": 4,
        "settings": TOY_SETTINGS,
        "machine": machine(jobs, cpus, kernel),
        "seconds": 5,  # 0.7 + 3.0 + 1.1 s
        "cells": [{"n": 16, "d": 32, "factor": 4}, {"n": 256, "d": 64, "factor": 4}, {"n": 64, "d": 64, "factor": 4}],
    }
    return {name: json.dumps(record, separators=(",", ":")) + "\n" for name, record in (("training_toy_a.json", a), ("training_toy_b.json", b))}


@pytest.fixture
def harness(monkeypatch):
    return Harness(monkeypatch)


def test_a_run_prints_each_job_longest_first_and_writes_each_file_when_its_last_job_is_done(harness, tmp_path, monkeypatch):
    out = Recorder()
    monkeypatch.setattr(sys, "stdout", out)
    assert runner.main(["--arms", "main", "adamw", "--jobs", "2", "--data", str(tmp_path)]) == 0
    assert harness.arms == [["main", "adamw"]]
    assert harness.workers == [2]
    # costs 50, 40, 20, 10, 5: the length job (256, 64) first, the length job (64, 64) last
    assert harness.ran == [("length", 256, 64), ("cosine", 64, 32), ("length", 16, 32), ("dot", 16, 32), ("length", 64, 64)]
    # name in 32 columns, kind in 6 (dot for the length jobs, which have none), n in 4, d in 3,
    # the job's seconds as 7.1f and the seconds since the start as 6.0f (3.0, 5.2, 5.9, 7.3, 8.4)
    lines = [
        "training_toy_b.json              dot    n= 256 d= 64     3.0 s   (     3 s in all)",
        "training_toy_a.json              cosine n=  64 d= 32     2.2 s   (     5 s in all)",
        "training_toy_b.json              dot    n=  16 d= 32     0.7 s   (     6 s in all)",
        "training_toy_a.json              dot    n=  16 d= 32     1.4 s   (     7 s in all)",
        f"wrote {tmp_path}/training_toy_a.json",
        "training_toy_b.json              dot    n=  64 d= 64     1.1 s   (     8 s in all)",
        f"wrote {tmp_path}/training_toy_b.json",
        "done in 8 s on 2 workers",
    ]
    assert out.text.splitlines() == lines
    # every line but the last is flushed as soon as it is printed
    ends = [sum(len(line) + 1 for line in lines[: k + 1]) for k in range(len(lines) - 1)]
    assert set(ends) <= set(out.flushed_at), (ends, out.flushed_at)
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert written == expected_files(f"{PROG} --arms main adamw", jobs=2)


def test_a_cell_is_written_to_six_digits_with_infinity_as_null(harness, tmp_path, monkeypatch, capsys):
    """The stored sweeps' format: arrays and tuples as nested lists, NumPy integers as integers,
    floats to six significant digits, an infinite step count (never reached the target) as null."""
    def cell(n: int, d: int) -> dict:
        return {"n": np.int64(n), "d": d, "best_lr": np.array([2, 0]), "area": np.array([[0.123456789, np.inf]]), "labels": ["1", "8"],
                "x": (np.float32(2.5),)}

    monkeypatch.setattr(runner, "outputs", lambda arms: [runner.Output("training_toy.json", {}, [(cell, {"n": 16, "d": 32}, 1.0)])])
    assert runner.main(["--jobs", "1", "--data", str(tmp_path)]) == 0
    written = json.loads((tmp_path / "training_toy.json").read_text())["cells"]
    assert written == [{"n": 16, "d": 32, "best_lr": [2, 0], "area": [[0.123457, None]], "labels": ["1", "8"], "x": [2.5]}]
    assert type(written[0]["n"]) is int and type(written[0]["best_lr"][0]) is int  # 16.0 == 16 would pass the line above


def test_the_openblas_kernel_is_recorded_from_the_environment(harness, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    runner.main(["--arms", "lengths", "--jobs", "1", "--data", str(tmp_path)])
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert written == expected_files(f"{PROG} --arms lengths", jobs=1, kernel="Haswell")
    assert harness.workers == [1]
    assert capsys.readouterr().out.splitlines()[-1] == "done in 8 s on 1 workers"


@pytest.mark.parametrize("cpus, jobs", [(3, 3), (None, 1)])
def test_the_default_is_one_worker_per_cpu(harness, tmp_path, monkeypatch, capsys, cpus, jobs):
    monkeypatch.setattr(runner.os, "cpu_count", lambda: cpus)
    assert runner.main(["--data", str(tmp_path)]) == 0
    assert harness.workers == [jobs]
    assert capsys.readouterr().out.splitlines()[-1] == f"done in 8 s on {jobs} workers"
    written = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert written == expected_files(f"{PROG} --arms main learned adamw lengths", jobs=jobs, cpus=cpus)


def test_the_default_directory_is_the_books_data_made_with_its_parents(harness, tmp_path, monkeypatch, capsys):
    data = tmp_path / "book" / "chapters" / "data"
    monkeypatch.setattr(runner, "DATA", data)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert runner.main(["--jobs", "2"]) == 0
    assert sorted(p.name for p in data.iterdir()) == ["training_toy_a.json", "training_toy_b.json"]
    assert list((tmp_path / "cwd").iterdir()) == []


def test_help_names_the_command_and_says_what_each_option_does(capsys):
    with pytest.raises(SystemExit) as exit_:
        runner.main(["--help"])
    assert exit_.value.code == 0
    # argparse's own layout changes between Python versions; what is ours must be there
    out = " ".join(capsys.readouterr().out.split())
    choices = "{main,learned,adamw,lengths}"
    assert out.startswith(f"usage: {PROG} [-h] [--arms {choices} ")
    assert f" {DESCRIPTION} " in out
    for option, text in [
        (f"--arms {choices}", "which arms to run (default: all)"),
        ("--jobs JOBS", "worker processes (default: one per CPU)"),
        ("--data DATA", "the directory the result files go to (default: the book's chapters/data)"),
    ]:
        assert f" {option} " in out and f" {text}" in out


@pytest.mark.parametrize(
    'argv, name',
    [
        (["--arms", "everything"], "argument --arms"),
        (["--arms", "main", "sweep"], "argument --arms"),
        (["--jobs", "0"], "--jobs"),
        (["--jobs", "-2"], "--jobs"),
    ],
)
def test_bad_arguments_are_reported_by_the_command(harness, tmp_path, capsys, argv, name):
    with pytest.raises(SystemExit) as exit_:
        runner.main([*argv, "--data", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {PROG} ")
    assert name in err
    assert harness.ran == [] and list(tmp_path.iterdir()) == []


CPUINFO = """processor\t: 0
vendor_id\t: ToyVendor
cpu family\t: 6
model name\t: Toy CPU: rev 2 @ 3.0GHz
flags\t\t: fpu vme

processor\t: 1
vendor_id\t: ToyVendor
model name\t: Toy CPU: rev 2 @ 3.0GHz
"""


ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 50.00
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


@pytest.mark.parametrize(
    "cpuinfo, processor, name",
    [
        (CPUINFO, "x86_64", "Toy CPU: rev 2 @ 3.0GHz"),  # everything after the first colon, stripped
        (ARM_CPUINFO, "aarch64", "aarch64"),  # no model name line: what platform says
        (None, "arm", "arm"),  # no /proc/cpuinfo
        (None, "", "unknown"),  # and nothing from platform either
    ],
)
def test_cpu_is_the_model_name_linux_gives_else_the_platforms(tmp_path, monkeypatch, cpuinfo, processor, name):
    fake = tmp_path / "cpuinfo"
    if cpuinfo is not None:
        fake.write_text(cpuinfo)
    real_path = runner.Path
    monkeypatch.setattr(runner, "Path", lambda p: fake if p == "/proc/cpuinfo" else real_path(tmp_path / "absent"))
    monkeypatch.setattr(runner.platform, "processor", lambda: processor)
    assert runner._cpu() == name


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
