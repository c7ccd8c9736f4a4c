"""The refusals of the Part IV training loop and of its model's sampler and initialiser,
pinned to their whole messages (survivors of the mutation run over attnscale.training;
see tests/MUTANTS.md).

tests/test_bad_input.py checks that each refusal *contains* the argument's name; a
message that only contains it ("XXseedXX must be ...", or no text at all) passes there.
Here each message is pinned from its first character: it must begin with the argument's
name as the caller spelled it, then say what is wanted and what was given, as the
library's other refusals do.

- train: a negative seed, an empty batch, an empty test set, a learned-scale flag that
  is not a bool, and a 2-d grid of scales.
- init_params: a width d of 0; sample_batch: fewer than two keys, a width of 0, no value
  coordinates.
- evaluation_steps: a step count beyond int64, which the int64 schedule cannot hold, is
  refused by name like any other out-of-range size (it raised a bare OverflowError before;
  a fault found by this test, see tests/MUTANTS.md).

References: the messages written out by hand.
"""

from __future__ import annotations


import numpy as np
import pytest
from expect import whole

from attnscale.training import evaluation_steps, init_params, sample_batch, train

#: the smallest valid run (tests/test_bad_input.py's valid call of train)
TINY = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "lrs": [1e-2], "seeds": 1, "steps": 1, "eval_size": 4}


@pytest.mark.parametrize(
    ("seed", "change", "error", "message"),
    [
        (-1, {}, ValueError, "seed must be an integer >= 0, got -1"),
        (0, {"batch": 0}, ValueError, "batch must be an integer >= 1, got 0"),
        (0, {"eval_size": 0}, ValueError, "eval_size must be an integer >= 1, got 0"),
        (0, {"learn_scale": "yes"}, TypeError, "learn_scale must be True or False, got 'yes'"),
        (0, {"alphas": [[1.0, 2.0]]}, ValueError, "alphas must be a 1-d list, got shape (1, 2)"),
    ],
    ids=["seed", "batch", "eval_size", "learn_scale", "alphas-2d"],
)
def test_train_refuses_a_bad_setting_with_a_message_that_begins_with_its_name(seed, change, error, message):
    with pytest.raises(error, match=whole(message)):
        train(seed, **{**TINY, **change})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: init_params(np.random.default_rng(0), 1, 1, 0), "d must be an integer >= 1, got 0"),
        (lambda: sample_batch(np.random.default_rng(0), 1, 2, 1, 4), "n must be an integer >= 2, got 1"),
        (lambda: sample_batch(np.random.default_rng(0), 1, 2, 3, 0), "d must be an integer >= 1, got 0"),
        (lambda: sample_batch(np.random.default_rng(0), 1, 2, 3, 4, c=0), "c must be an integer >= 1, got 0"),
    ],
    ids=["init_params-d", "sample_batch-n", "sample_batch-d", "sample_batch-c"],
)
def test_the_model_refuses_a_bad_size_with_a_message_that_begins_with_its_name(call, message):
    with pytest.raises(ValueError, match=whole(message)):
        call()


def test_evaluation_steps_refuse_a_step_count_beyond_int64_by_name():
    """The schedule is an int64 array, so 2^63 steps cannot be held; at resolution 1 the
    schedule doubles, so it reaches 2^63 in 63 marks and the refusal is quick. The largest
    count that fits still works and ends on itself."""
    top = 2**63 - 1
    marks = evaluation_steps(top, resolution=1.0, dense=1)
    assert marks.dtype == np.int64 and int(marks[-1]) == top
    with pytest.raises(ValueError, match="^steps must be"):
        evaluation_steps(2**63, resolution=1.0, dense=1)
